/**
 * The memory tool on S3 (`npm run bench`, or alone: `npx tsx test/bench/memory.ts`): the S3
 * requests each command makes, as the S3 emulator counts them, and a view's time. A view of a
 * file is one GetObject and a view of /memories one ListObjectsV2, so memory adds one S3 request
 * to the tool call that reads it (docs/memory.md).
 */
import { pathToFileURL } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { S3MemoryStore } from '../../functions/adapters/s3/memory.js';
import { memoryPrefix } from '../../functions/core/memory/scope.js';
import { memoryTool } from '../../functions/core/memory/tool.js';
import { defaultMemoryLimits } from '../../functions/core/memory/types.js';
import { ToolRegistry, defaultToolLimits } from '../../functions/core/tools/registry.js';
import { localCredentials } from '../../functions/wiring/wire.js';
import { localRegion, startEmulators } from '../../local/stand-ins/emulators.js';
import { MemoryWorkspace } from '../support/memory.js';
import { row } from './table.js';

const commands = [
  ['create a file', { command: 'create', path: '/memories/prefs.md', file_text: 'Answer in French.\nUse metric units.\n' }],
  ['view the file', { command: 'view', path: '/memories/prefs.md' }],
  ['view /memories', { command: 'view', path: '/memories' }],
  ['str_replace in it', { command: 'str_replace', path: '/memories/prefs.md', old_str: 'metric', new_str: 'SI' }],
  ['insert a line', { command: 'insert', path: '/memories/prefs.md', insert_line: 1, insert_text: 'Be brief.' }],
] as const;

export async function memoryReport(views = 50): Promise<string> {
  const emulators = await startEmulators();
  try {
    const s3 = new S3Client({
      region: localRegion,
      endpoint: emulators.s3Endpoint,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      credentials: localCredentials,
    });
    const store = new S3MemoryStore(s3, emulators.bucket, memoryPrefix('owner', { principal: 'bench' }));
    const registry = new ToolRegistry([memoryTool]);
    const ctx = { runId: 'bench', workspace: new MemoryWorkspace(), limits: defaultToolLimits, memory: { scope: 'owner' as const, store, limits: defaultMemoryLimits } };
    const call = (id: string, input: object) => registry.execute({ type: 'tool_use', id, name: 'memory', input }, ctx);
    const lines = ['## Memory tool on S3 (emulator)', '', row(['command', 'S3 requests']), row(['---', '---'])];
    for (const [name, input] of commands) {
      emulators.requests.reset();
      const result = await call(`toolu_${name}`, input);
      if (result.is_error) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
      const counts = (await emulators.requests.snapshot()).s3;
      lines.push(row([name, Object.entries(counts).map(([op, n]) => `${n} ${op}`).join(', ') || '0']));
    }
    const times: number[] = [];
    for (let i = 0; i < views; i++) {
      const started = performance.now();
      await call(`toolu_view_${i}`, { command: 'view', path: '/memories/prefs.md' });
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    lines.push('', `A view of a file: median ${times[Math.floor(views / 2)]?.toFixed(1)} ms over ${views} (local S3 emulator).`);
    return lines.join('\n');
  } finally {
    await emulators.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(await memoryReport());
