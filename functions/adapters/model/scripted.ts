/**
 * The `scripted` model provider: answers from a list of turns, like a cassette, for offline runs
 * and tests. A turn may be a function of the request, so a script can react to what it is sent.
 */
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { ContentBlock, StopReason, Usage, toolUses } from '../../core/messages.js';
import { StepwiseError } from '../../core/errors.js';
import type { ModelProvider, ModelRequest, ModelResponse } from '../../core/model.js';

export const ScriptedTurn = z.object({
  content: z.array(ContentBlock),
  stopReason: StopReason.optional(),
  usage: Usage.partial().optional(),
});
export type ScriptedTurn = z.infer<typeof ScriptedTurn>;

export type TurnSource = ScriptedTurn | ((request: ModelRequest) => ScriptedTurn | Promise<ScriptedTurn>);

/** Raised when a script has no turn left: the run asked for more than the script foresaw. */
export class ScriptExhausted extends StepwiseError {
  override readonly name = 'ScriptExhausted';
}

export class ScriptedModel implements ModelProvider {
  private readonly turns: TurnSource[];
  /** Every request received, deep-copied, in order. */
  readonly requests: ModelRequest[] = [];

  constructor(turns: TurnSource[] = []) {
    this.turns = [...turns];
  }

  /** Loads turns from a JSON file: an array of `{ content, stopReason?, usage? }`. */
  static fromFile(path: string): ScriptedModel {
    return new ScriptedModel(readScript(path));
  }

  addTurn(...turns: TurnSource[]): this {
    this.turns.push(...turns);
    return this;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const { signal: _signal, ...copyable } = request;
    this.requests.push(structuredClone(copyable));
    const source = this.turns.shift();
    if (!source) {
      throw new ScriptExhausted(`The script has no turn left for request ${this.requests.length}.`);
    }
    const turn = ScriptedTurn.parse(typeof source === 'function' ? await source(request) : source);
    return {
      message: { role: 'assistant', content: structuredClone(turn.content) },
      stopReason: turn.stopReason ?? (toolUses(turn).length > 0 ? 'tool_use' : 'end_turn'),
      usage: {
        inputTokens: turn.usage?.inputTokens ?? estimateTokens(JSON.stringify(request.messages)),
        outputTokens: turn.usage?.outputTokens ?? estimateTokens(JSON.stringify(turn.content)),
        cacheReadInputTokens: turn.usage?.cacheReadInputTokens ?? 0,
        cacheCreationInputTokens: turn.usage?.cacheCreationInputTokens ?? 0,
      },
      model: request.model,
    };
  }
}

/** The turns of a script file: a JSON array of `{ content, stopReason?, usage? }`. */
export function readScript(path: string): ScriptedTurn[] {
  return z.array(ScriptedTurn).parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** A rough token count (four characters a token), enough for scripted usage figures. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
