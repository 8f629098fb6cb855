/**
 * One folder of synthesized templates for this run of the suite (local/template.ts): the dozens
 * of local stacks the tests start, and the dev servers they spawn, synthesize each set of inputs
 * once instead of once per stack. Made fresh for each run, so no template outlives the sources
 * it was synthesized from; removed at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const folder = mkdtempSync(join(tmpdir(), 'stepwise-templates-'));
  process.env.STEPWISE_TEMPLATE_CACHE = folder;
  return () => rmSync(folder, { recursive: true, force: true });
}
