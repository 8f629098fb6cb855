/**
 * What the S3 workspace makes of S3's answers that the emulator cannot give: each client error a
 * tool meets is a tool error; a conflict is a `WriteConflict`; a deployment fault fails the run.
 */
import { PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { S3Workspace } from '../../functions/adapters/s3/workspace.js';
import { builtinTools } from '../../functions/core/tools/builtin/builtin.js';
import { ToolRegistry, defaultToolLimits } from '../../functions/core/tools/registry.js';
import { WorkspaceFailed, WorkspaceRefused, WriteConflict } from '../../functions/core/workspace/types.js';

function s3Error(name: string, httpStatusCode: number): S3ServiceException {
  return new S3ServiceException({ name, $fault: 'client', message: `${name} from S3`, $metadata: { httpStatusCode } });
}

/** A workspace on a client that `mockClient(S3Client)` answers. */
function workspace() {
  return new S3Workspace(new S3Client({ region: 'us-east-1' }), 'bucket', 'run-1');
}

describe('S3Workspace on S3 errors', () => {
  it.each([
    ['KeyTooLongError', 400],
    ['EntityTooLarge', 400],
    ['InvalidArgument', 400],
    ['MetadataTooLarge', 400],
  ])('answers %s from PutObject with a tool error the model can act on', async (name, status) => {
    const s3 = mockClient(S3Client);
    s3.on(PutObjectCommand).rejects(s3Error(name, status));
    const ws = workspace();
    await expect(ws.write('a.txt', new Uint8Array([1]))).rejects.toThrow(WorkspaceRefused);
    const result = await new ToolRegistry(builtinTools).execute(
      { type: 'tool_use', id: 'toolu_1', name: 'write_file', input: { path: 'a.txt', content: 'x' } },
      { runId: 'run-1', workspace: ws, limits: defaultToolLimits },
    );
    expect(result).toEqual({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: `write_file failed: Writing a.txt was refused by the store: ${name}: ${name} from S3` });
  });

  it.each([
    ['PreconditionFailed', 412],
    ['ConditionalRequestConflict', 409],
  ])('answers %s on a conditional write with WriteConflict', async (name, status) => {
    const s3 = mockClient(S3Client);
    s3.on(PutObjectCommand).rejects(s3Error(name, status));
    await expect(workspace().write('a.txt', new Uint8Array([1]), { ifVersion: '"etag"' })).rejects.toThrow(WriteConflict);
    expect(s3.commandCalls(PutObjectCommand)[0]?.args[0].input).toMatchObject({ IfMatch: '"etag"' });
  });

  it.each([
    ['AccessDenied', 403],
    ['NoSuchBucket', 404],
    ['InvalidAccessKeyId', 403],
  ])('fails the step with WorkspaceFailed on %s: a deployment fault, not the model’s', async (name, status) => {
    const s3 = mockClient(S3Client);
    s3.on(PutObjectCommand).rejects(s3Error(name, status));
    await expect(
      new ToolRegistry(builtinTools).execute(
        { type: 'tool_use', id: 'toolu_1', name: 'write_file', input: { path: 'a.txt', content: 'x' } },
        { runId: 'run-1', workspace: workspace(), limits: defaultToolLimits },
      ),
    ).rejects.toThrow(WorkspaceFailed);
  });
});
