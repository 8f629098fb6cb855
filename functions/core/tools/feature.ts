/**
 * The size of a tool result at the tool step: the model reads at most `maxResultChars` of one
 * output (a note says it was cut); the whole output is kept beside the result.
 */
import type { ToolResultBlock } from '../model/messages.js';
import type { ToolFeature } from '../steps/hooks.js';

/** The most characters of one tool output the model reads, unless a deployment says otherwise. */
export const defaultMaxResultChars = 30_000;

/** Cuts an over-long result to what the model should read, keeping the whole output beside it. */
export const resultSizeFeature: ToolFeature = {
  name: 'result-size',
  afterTool(outcome) {
    const view = capResult(outcome.result, outcome.deps.maxResultChars ?? defaultMaxResultChars);
    if (view === outcome.result) return;
    outcome.fullOutput = outcome.result.content;
    outcome.result = view;
  },
};

/** Cuts an over-long tool output to what the model should see, saying so. */
export function capResult(result: ToolResultBlock, maxChars: number): ToolResultBlock {
  if (result.content.length <= maxChars) return result;
  const note = `\n\n[Output truncated: showing the first ${maxChars} of ${result.content.length} characters; the full output is stored with the run.]`;
  return { ...result, content: result.content.slice(0, maxChars) + note };
}
