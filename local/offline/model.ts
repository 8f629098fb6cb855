/**
 * The offline model of `npm run dev` and `npm start` without an API key: served by the local
 * Messages API to the real Anthropic SDK, so a newcomer's first run gets a real answer. Its turn
 * is a function of the request alone (`offlineTurn`): the goal, the tools offered and what the
 * run's calls returned. A goal tagged `[script:<name>]` replays `local/scripts/<name>.json`
 * instead, each run from its first turn, so one server serves every example.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ScriptedTurn, readScript } from '../../functions/adapters/model/scripted.js';
import { type Reply, type Responder, type WireRequest, replayedScript } from '../stand-ins/messages-api.js';
import { type Act, type Program, excerpt, goalText, single } from './agent.js';
import { type Reading, type OfflineRequest, readRequest } from './request.js';
import { architect, coder } from './team.js';

/** The folder of the scripts a goal's `[script:<name>]` tag names. */
export const scriptsDir = fileURLToPath(new URL('../scripts/', import.meta.url));

/** The model name the offline model answers as. */
export const offlineModelName = 'stepwise-offline';

/** The next turn of the offline model for a request. */
export function offlineTurn(request: OfflineRequest): ScriptedTurn {
  const reading = readRequest(request);
  if (reading.summaryAsked) return { content: [{ type: 'text', text: summaryOf(reading) }] };
  const program = programFor(reading);
  let step = program.next();
  for (const seen of reading.observations) {
    if (step.done) break;
    step = program.next(seen);
  }
  if (step.done) return { content: [{ type: 'text', text: step.value || 'Done.' }] };
  return actTurn(step.value, request);
}

/** Which agent the request is for: the Architect is offered `finish_plan`, the Coder's first message holds the plan. */
function programFor(reading: Reading): Program {
  if (reading.tools.has('finish_plan')) return architect(reading);
  if (reading.opening.includes("\n\nThe Architect's plan:\n")) return coder(reading);
  return single(reading);
}

function actTurn(act: Act, request: OfflineRequest): ScriptedTurn {
  // The same request (a retried step) gets the same id, a later turn another; ids need be unique only within a conversation.
  const id = `toolu_offline_${createHash('sha256').update(JSON.stringify(request.messages)).digest('hex').slice(0, 16)}`;
  return {
    content: [...(act.say ? [{ type: 'text' as const, text: act.say }] : []), { type: 'tool_use', id, name: act.call.name, input: act.call.input }],
  };
}

/** A summary for compaction: the goal and the calls made so far. */
function summaryOf(reading: Reading): string {
  const calls = reading.observations.map((o) => `- ${o.name} ${JSON.stringify(o.input)} → ${o.isError ? 'error: ' : ''}${excerpt(o.result, 120)}`);
  return [`The goal: ${goalText(reading.opening)}`, 'Calls so far:', ...(calls.length ? calls : ['- none'])].join('\n');
}

export interface OfflineModelOptions {
  /** How fast text and tool input are written; 0 writes each turn at once. @default 150 */
  charsPerSecond?: number;
  /** Where `[script:<name>]` finds `<name>.json`. @default local/scripts */
  scripts?: string;
}

/** The default pace: about a model's, so that a run takes seconds and can be watched, cancelled and followed live. */
export const defaultCharsPerSecond = 150;

/** Answers each request with the offline model's turn, or with the turn of the script the run's goal names. */
export function offlineResponder(options: OfflineModelOptions = {}): Responder {
  const charsPerSecond = options.charsPerSecond ?? defaultCharsPerSecond;
  const folder = options.scripts ?? scriptsDir;
  return (body: WireRequest): Reply | Promise<Reply> => {
    const reading = readRequest(body);
    const name = /\[script:([\w-]+)\]/.exec(reading.opening)?.[1];
    if (name === undefined) return paced(offlineTurn(body), charsPerSecond);
    let script: ScriptedTurn[];
    try {
      script = readScript(`${folder}/${name}.json`);
    } catch (error) {
      const known = readdirSync(folder).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5));
      const why = error instanceof Error && 'code' in error && error.code === 'ENOENT' ? 'there is no such script' : `it does not read as a script: ${error instanceof Error ? error.message : String(error)}`;
      return refusal(`[script:${name}]: ${why} (the scripts: ${known.sort().join(', ')}).`);
    }
    return replayedScript(script, `The script ${name}`)(body, 0);
  };
}

/** A client error: the model call fails at once with this message, not retried. */
function refusal(message: string): Reply {
  return { status: 400, type: 'invalid_request_error', message };
}

/** A turn written at `charsPerSecond`, four characters at a time, after a moment's thought. */
function paced(turn: ScriptedTurn, charsPerSecond: number): Reply {
  if (charsPerSecond <= 0) return { turn };
  const chunkChars = 4;
  return { turn: { ...turn, pacing: { chunkChars, delayMs: Math.round((1000 * chunkChars) / charsPerSecond) } }, delayMs: 400 };
}

