/**
 * Context editing over a long run (`npm run bench`, or alone: `npx tsx test/bench/context-editing.ts`):
 * the input tokens per iteration of a 200-iteration run that reads a 4 KB file each time, with and
 * without clearing, and with it the share of each prompt read from the cache. Figures from the
 * scripted model at the step level (in-memory stores), which counts input as the stand-ins do
 * (4 characters a token, after clearing); the cache is modelled as the API's: a request reads the
 * longest prefix, byte for byte up to a block boundary, that the previous request wrote.
 */
import { pathToFileURL } from 'node:url';
import type { ScriptedModel, ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { toWire } from '../../functions/adapters/model/anthropic.js';
import { clearToolResults } from '../../functions/core/compaction/clearing.js';
import { type ContextEditing, defaultContextEditing } from '../../functions/core/compaction/types.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { memoryCore } from '../support/agents.js';
import { row } from './table.js';

function script(n: number): ScriptedTurn[] {
  const turns: ScriptedTurn[] = [{ content: [{ type: 'tool_use', id: 'toolu_w', name: 'write_file', input: { path: 'data.txt', content: 'x'.repeat(4_000) } }] }];
  for (let i = 1; i < n; i++) turns.push({ content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'read_file', input: { path: 'data.txt' } }] });
  turns.push({ content: [{ type: 'text', text: 'done' }] });
  return turns;
}

interface Figures {
  inputPerIteration: number;
  lastInput: number;
  cacheShare: number;
}

async function run(iterations: number, editing: ContextEditing | undefined): Promise<Figures> {
  const core = await memoryCore('Read data.txt again and again.');
  const model = core.model as ScriptedModel;
  for (const turn of script(iterations - 1)) model.addTurn(turn);
  // A window compaction never reaches, so only context editing shortens the prompt.
  const deps = { ...core.deps, context: { windowTokens: 10_000_000, compactAt: 1, keepShare: 0.25 }, ...(editing ? { contextEditing: editing } : {}) };
  await runAgentLoop({ runId: core.runId, agent: 'single', maxIterations: iterations + 1 }, deps);
  const strip = (value: unknown) => JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v));
  const inputs: number[] = [];
  let read = 0;
  let total = 0;
  let previous: string[] = [];
  for (const request of model.requests) {
    const wire = toWire(request) as unknown as { tools?: unknown; system: unknown; messages: { role: string; content: unknown }[] };
    const size = Math.ceil(JSON.stringify([wire.system, wire.tools, wire.messages]).length / 4);
    const messages = editing ? clearToolResults(wire.messages, editing, size).messages : wire.messages;
    const parts = [strip(wire.tools ?? []), strip(wire.system), ...messages.map(strip)];
    const tokens = parts.reduce((n, p) => n + p.length, 0) / 4;
    let shared = 0;
    for (let k = 0; k < previous.length && previous[k] === parts[k]; k++) shared += (parts[k]?.length ?? 0) / 4;
    inputs.push(tokens);
    read += shared;
    total += tokens;
    previous = parts;
  }
  return { inputPerIteration: total / inputs.length, lastInput: inputs.at(-1) ?? 0, cacheShare: read / total };
}

/** The section's table. */
export async function contextEditingReport(iterations = 200): Promise<string> {
  const without = await run(iterations, undefined);
  const withIt = await run(iterations, defaultContextEditing);
  const lines = [
    `\n## Context editing over ${iterations} iterations (a 4 KB result each; clearing at ${defaultContextEditing.triggerTokens} tokens, keeping ${defaultContextEditing.keepToolUses}, batches of ${defaultContextEditing.clearAtLeastTokens})\n`,
    row(['', 'input tokens per iteration (mean)', 'input tokens of the last request', 'cache prefix share (cache read / input)']),
    row(['---', '---', '---', '---']),
  ];
  for (const [name, f] of [['without context editing', without], ['with context editing', withIt]] as const) {
    lines.push(row([name, Math.round(f.inputPerIteration), Math.round(f.lastInput), `${(f.cacheShare * 100).toFixed(1)}%`]));
  }
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(await contextEditingReport(Number(process.argv[2] ?? 200)));
