/**
 * Links to workspace files: presigned S3 GetObject URLs, for files too large for an API response
 * (a Lambda response carries at most ~6 MB, API Gateway's 10 MB; the files route serves 4 MiB).
 * Only the API function bundles the presigner.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { workspacePrefix } from './workspace.js';

/** How long a link works: long enough to start a download, short enough not to be shared around. */
export const linkSeconds = 300;

/** A function that presigns a read of a run's file with the given client's credentials. */
export function presignedLinks(s3: S3Client, bucket: string): (runId: string, path: string) => Promise<string> {
  return (runId, path) => getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: `${workspacePrefix(runId)}${path}` }), { expiresIn: linkSeconds });
}
