/**
 * A run's external tool catalog on DynamoDB: `pk = run#<runId>`, `sk = tools`, written once with
 * a condition. The catalog is kept as a JSON string, not a map, because DynamoDB does not keep
 * the order of a map's keys and the model must see the very same bytes on every step
 * (invariant 4, docs/ARCHITECTURE.md). A catalog over 100 KB lives in S3 (invariant 2, docs/ARCHITECTURE.md).
 */
import type { Documents } from './documents.js';
import { ToolCatalog, type ToolCatalogStore } from '../../core/tools/external/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import type { BlobStore } from '../s3/blobs.js';

const inlineBytes = 100 * 1024;

export class DynamoToolCatalogStore implements ToolCatalogStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
    private readonly blobs: BlobStore,
  ) {}

  async getCatalog(runId: string): Promise<ToolCatalog | undefined> {
    const out = await guard('Reading a run\'s tool catalog', () =>
      this.doc.get({ TableName: this.table, Key: key(runId), ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    const { catalog, catalogRef } = out.Item as { catalog?: string; catalogRef?: string };
    const body = typeof catalogRef === 'string' ? await this.blobs.get(catalogRef) : catalog;
    if (typeof body !== 'string') throw new Error(`The tool catalog of run ${runId} is malformed.`);
    return ToolCatalog.parse(JSON.parse(body));
  }

  async putCatalog(runId: string, catalog: ToolCatalog): Promise<ToolCatalog> {
    const body = JSON.stringify(ToolCatalog.parse(catalog));
    // Both step functions may write under conversations/; the key is content-addressed.
    const field =
      Buffer.byteLength(body, 'utf8') > inlineBytes
        ? { catalogRef: await this.blobs.put(`conversations/tool-catalogs/${encodeURIComponent(runId)}`, body) }
        : { catalog: body };
    try {
      await guard('Storing a run\'s tool catalog', () =>
        this.doc.put({
          TableName: this.table,
          Item: { ...key(runId), ...field },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return JSON.parse(body) as ToolCatalog;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      // Another attempt of the step listed first: its catalog is the run's.
      const stored = await this.getCatalog(runId);
      if (!stored) throw error;
      return stored;
    }
  }
}

function key(runId: string) {
  return { pk: `run#${runId}`, sk: 'tools' };
}
