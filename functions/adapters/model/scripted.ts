/**
 * The `scripted` model provider: answers from a list of turns, like a cassette, for offline runs
 * and tests. A turn may be a function of the request, so a script can react to what it is sent.
 *
 * Two ways to hand turns out: as a queue shared by every request (`new ScriptedModel(turns)`, `addTurn`,
 * for tests that drive one run), or replayed for each run from its first turn (`perRun`, and
 * `fromFile` for `STEPWISE_SCRIPT`), where the turn is found from the request itself (see `scriptPosition`).
 */
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { ContentBlock, StopReason, TextBlock, ToolUseBlock, Usage, toolUses } from '../../core/model/messages.js';
import { named } from '../../core/errors/errors.js';
import { clearToolResults } from '../../core/compaction/clearing.js';
import type { ModelProvider, ModelRequest, ModelResponse, PartialBlock } from '../../core/model/types.js';
import { finalAnswerNudge } from '../../core/output/answer.js';
import { truncatedTextNote } from '../../core/conversation/next-message.js';
import { finishPlan } from '../../core/tools/builtin/finish-plan.js';

/**
 * How a turn is generated: its text and its tool calls' input JSON come in pieces of `chunkChars`
 * characters (whole when absent), each `delayMs` after the one before (the first too), so a turn
 * can stand for a slow model. Streamed answers (live text) show the pieces as they come; an
 * answer that is not streamed arrives whole when the last piece would have.
 */
export const TurnPacing = z.object({
  chunkChars: z.number().int().positive().optional(),
  delayMs: z.number().int().nonnegative().optional(),
});
export type TurnPacing = z.infer<typeof TurnPacing>;

export const ScriptedTurn = z.object({
  content: z.array(ContentBlock),
  stopReason: StopReason.optional(),
  usage: Usage.partial().optional(),
  pacing: TurnPacing.optional(),
  /** The content instead, when a result of the turn before is an error (a denied or failed call). */
  afterError: z.array(ContentBlock).optional(),
  /**
   * Which user turn of a conversation the turn answers (1 for a session's first run, 2 for its
   * second, and a fork's from the message it is cut at). A script whose turns say so is read per
   * user turn; without it every run replays the script from its first turn.
   */
  userTurn: z.number().int().positive().optional(),
});
export type ScriptedTurn = z.infer<typeof ScriptedTurn>;

export type TurnSource = ScriptedTurn | ((request: ModelRequest) => ScriptedTurn | Promise<ScriptedTurn>);

/** Raised when a script has no turn left: the run asked for more than the script foresaw. */
export class ScriptExhausted extends named('ScriptExhausted') {}

export class ScriptedModel implements ModelProvider {
  private readonly turns: TurnSource[];
  /**
   * Every request received, deep-copied, in order, for tests. A model loaded from a script file
   * (`STEPWISE_SCRIPT`: `npm run dev`, the local stack) keeps none: it lives as long as the server,
   * and each request holds the whole conversation.
   */
  readonly requests: ModelRequest[] = [];
  private recording = true;
  private received = 0;

  /** The turns every run replays from its first, when the model was made with `perRun`. */
  private script: readonly ScriptedTurn[] | undefined;

  /** A shared queue of turns: each request takes the next one, whichever run sends it. */
  constructor(turns: TurnSource[] = []) {
    this.turns = [...turns];
  }

  /** The same turns for every run, from its first; concurrent and retried steps each get their own. */
  static perRun(script: readonly ScriptedTurn[]): ScriptedModel {
    const model = new ScriptedModel();
    model.script = [...script];
    return model;
  }

  /** Loads a script from a JSON file (an array of `{ content, stopReason?, usage?, pacing? }`), replayed per run. */
  static fromFile(path: string): ScriptedModel {
    const model = ScriptedModel.perRun(readScript(path));
    model.recording = false;
    return model;
  }

  /** Adds turns to the shared queue. */
  addTurn(...turns: TurnSource[]): this {
    if (this.script) throw new Error('A script replayed per run takes no more turns.');
    this.turns.push(...turns);
    return this;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const { signal: _signal, onProgress: _onProgress, ...copyable } = request;
    this.received++;
    if (this.recording) this.requests.push(structuredClone(copyable));
    const source = this.script ? scriptTurn(this.script, request) : this.turns.shift();
    if (!source) {
      const asked = this.script ? `turn ${scriptPosition(this.script, request) + 1}, past its ${this.script.length}` : `a turn after the ${this.received - 1} it had`;
      throw new ScriptExhausted(`The script has no turn for ${runOf(request)}: it asked for ${asked}.`);
    }
    const turn = ScriptedTurn.parse(typeof source === 'function' ? await source(request) : source);
    await generateInPieces(turn, request);
    // Context editing as the API applies it: the input counted is the prompt after clearing.
    const { messages: read, applied } = request.contextEditing
      ? clearToolResults(request.messages, request.contextEditing, estimateTokens(JSON.stringify(request.messages)))
      : { messages: request.messages, applied: undefined };
    return {
      message: { role: 'assistant', content: structuredClone(turn.content) },
      stopReason: turn.stopReason ?? (toolUses(turn).length > 0 ? 'tool_use' : 'end_turn'),
      usage: {
        inputTokens: turn.usage?.inputTokens ?? estimateTokens(JSON.stringify(read)),
        outputTokens: turn.usage?.outputTokens ?? estimateTokens(JSON.stringify(turn.content)),
        cacheReadInputTokens: turn.usage?.cacheReadInputTokens ?? 0,
        cacheCreationInputTokens: turn.usage?.cacheCreationInputTokens ?? 0,
      },
      model: request.model,
      ...(applied ? { cleared: { toolUses: applied.clearedToolUses, inputTokens: applied.clearedInputTokens } } : {}),
    };
  }
}

/**
 * Plays a turn's pieces at its pace, telling `onProgress` of each: the text and tool calls
 * generated so far (thinking and other blocks are not shown).
 */
async function generateInPieces(turn: ScriptedTurn, request: ModelRequest): Promise<void> {
  const { delayMs = 0 } = turn.pacing ?? {};
  if (!request.onProgress && delayMs === 0) return;
  const partial: PartialBlock[] = [];
  for (const [index, block] of turn.content.entries()) {
    const text = TextBlock.safeParse(block);
    const call = ToolUseBlock.safeParse(block);
    const entry: PartialBlock | undefined = text.success
      ? { block: index, type: 'text', text: '' }
      : call.success
        ? { block: index, type: 'tool_use', id: call.data.id, name: call.data.name, partialJson: '' }
        : undefined;
    if (!entry) continue;
    partial.push(entry);
    const content = text.success ? text.data.text : JSON.stringify(call.data?.input ?? {});
    for (const piece of pieces(content, turn.pacing)) {
      if (delayMs > 0) await pause(delayMs, request.signal);
      if (entry.type === 'text') entry.text += piece;
      else entry.partialJson += piece;
      request.onProgress?.(partial.map((b) => ({ ...b })));
    }
  }
}

/** `text` in the pieces a turn's pacing cuts it into (whole code points); none for an empty text. */
export function pieces(text: string, pacing: TurnPacing | undefined): string[] {
  const size = pacing?.chunkChars;
  if (!text) return [];
  if (!size) return [text];
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/** What `scriptPosition` reads of a request: the Messages API's shape, so the local stand-ins can use it too. */
export interface ScriptedRequest {
  tools?: readonly unknown[];
  messages: readonly { role: string; content: unknown }[];
}

/**
 * Which turn of a per-run script answers `request`: the number of model turns its run has had,
 * read from the request alone, so concurrent runs do not share a position and a retried step
 * (which sends the same messages) gets the same turn again.
 *
 * A run's turns are the assistant messages after its opening: the last user message with text of
 * its own (a goal, not only tool results), so the earlier runs of a session do not count. In a
 * multi-agent script the Architect's turns come first, up to the last one that calls
 * `finish_plan`; a request that does not offer `finish_plan` (the Coder's) is answered from the
 * turns after it, counting its own conversation's turns.
 */
export function scriptPosition(script: readonly ScriptedTurn[], request: ScriptedRequest): number {
  const { messages } = request;
  const opening = openingIndex(messages);
  const turns = messages.slice(opening + 1).filter((m) => m.role === 'assistant').length;
  if (script.some((turn) => turn.userTurn !== undefined)) {
    // The turns of this user turn, in order: the n-th opening of the conversation reads the turns marked n.
    const userTurn = messages.filter((m) => m.role === 'user' && opensRun(m.content)).length;
    const mine = script.flatMap((turn, index) => ((turn.userTurn ?? 1) === userTurn ? [index] : []));
    return mine[turns] ?? script.length + turns;
  }
  const planned = script.findLastIndex((turn) => toolUses(turn).some((call) => call.name === finishPlan.name));
  const offersPlan = (request.tools ?? []).some((tool) => isNamed(tool, finishPlan.name));
  return planned >= 0 && !offersPlan ? planned + 1 + turns : turns;
}

/**
 * The turn of a per-run script that answers `request`, if the script has one: its `afterError`
 * content when one of the results the request ends with is an error.
 */
export function scriptTurn(script: readonly ScriptedTurn[], request: ScriptedRequest): ScriptedTurn | undefined {
  const turn = script[scriptPosition(script, request)];
  if (!turn?.afterError || !endsWithError(request)) return turn;
  const { afterError, ...rest } = turn;
  return { ...rest, content: afterError };
}

function endsWithError(request: ScriptedRequest): boolean {
  const last = request.messages.at(-1);
  return last?.role === 'user' && Array.isArray(last.content) && last.content.some((b: unknown) => isRecord(b) && b.type === 'tool_result' && b.is_error === true);
}

/**
 * The run a request belongs to, in words for an error message: its agent and its goal (the
 * request names no run id; the run's record and the log line carry it).
 */
export function runOf(request: ScriptedRequest): string {
  const opening = request.messages[openingIndex(request.messages)];
  const text = typeof opening?.content === 'string' ? opening.content : Array.isArray(opening?.content) ? opening.content.filter(isRecord).map((b) => (typeof b.text === 'string' ? b.text : '')).join(' ') : '';
  const goal = (/^The user's goal:\n([\s\S]*?)\n\nThe Architect's plan:/.exec(text)?.[1] ?? text).replace(/\s+/g, ' ').trim();
  const agent = (request.tools ?? []).some((tool) => isNamed(tool, finishPlan.name)) ? 'the Architect' : text.startsWith("The user's goal:\n") ? 'the Coder' : 'the agent';
  return `${agent} of the run "${goal.length > 80 ? `${goal.slice(0, 79)}…` : goal}"`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Where the run that `messages` continue opened: its last user message with text of its own (-1 if none). */
export function openingIndex(messages: ScriptedRequest['messages']): number {
  return messages.findLastIndex((m) => m.role === 'user' && opensRun(m.content));
}

/** Notes the loop adds as user text; they continue a run rather than open one. */
const loopNotes = new Set([truncatedTextNote, finalAnswerNudge]);

/** Whether a user message's content starts a run: text of its own, other than a note the loop adds. */
function opensRun(content: unknown): boolean {
  if (typeof content === 'string') return !loopNotes.has(content);
  if (!Array.isArray(content)) return false;
  return content.some(
    (block: unknown) =>
      typeof block === 'object' && block !== null && 'type' in block && block.type === 'text' &&
      'text' in block && typeof block.text === 'string' && !loopNotes.has(block.text),
  );
}

function isNamed(tool: unknown, name: string): boolean {
  return typeof tool === 'object' && tool !== null && 'name' in tool && tool.name === name;
}

/** The turns of a script file: a JSON array of `{ content, stopReason?, usage?, pacing? }`. */
export function readScript(path: string): ScriptedTurn[] {
  return z.array(ScriptedTurn).parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** A rough token count (four characters a token), enough for scripted usage figures. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
