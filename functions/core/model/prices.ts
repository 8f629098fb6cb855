/**
 * Claude's list prices, for the estimated cost on each run record and in `npm run bench`.
 *
 * Source: Anthropic pricing, https://www.anthropic.com/pricing (and the "Pricing" page of the
 * Claude docs), USD per million tokens; cache writes at the 5-minute rate. Amazon Bedrock lists
 * the same on-demand prices for these models. An estimate, not a bill: batch, regional and
 * long-context prices differ.
 */
import type { Usage } from './messages.js';

export interface TokenPrices {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok: number;
  cacheWritePerMTok: number;
}

/** Matched against the model id in order (the first family the id contains), so longer names come first. */
export const modelPrices: readonly (TokenPrices & { family: string })[] = [
  { family: 'claude-opus-4-5', inputPerMTok: 5, outputPerMTok: 25, cacheReadPerMTok: 0.5, cacheWritePerMTok: 6.25 },
  { family: 'claude-opus-4', inputPerMTok: 15, outputPerMTok: 75, cacheReadPerMTok: 1.5, cacheWritePerMTok: 18.75 },
  { family: 'claude-sonnet-4', inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 },
  { family: 'claude-3-7-sonnet', inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 },
  { family: 'claude-haiku-4-5', inputPerMTok: 1, outputPerMTok: 5, cacheReadPerMTok: 0.1, cacheWritePerMTok: 1.25 },
  { family: 'claude-3-5-haiku', inputPerMTok: 0.8, outputPerMTok: 4, cacheReadPerMTok: 0.08, cacheWritePerMTok: 1 },
  { family: 'claude-3-haiku', inputPerMTok: 0.25, outputPerMTok: 1.25, cacheReadPerMTok: 0.03, cacheWritePerMTok: 0.3 },
];

/** The prices of a model id (Anthropic's or Bedrock's spelling), if it is a known family. */
export function pricesOf(model: string): TokenPrices | undefined {
  return modelPrices.find((p) => model.includes(p.family));
}

/** What `usage` costs at `prices`, in USD. */
export function costOf(usage: Usage, prices: TokenPrices): number {
  return (
    (usage.inputTokens * prices.inputPerMTok +
      usage.outputTokens * prices.outputPerMTok +
      usage.cacheReadInputTokens * prices.cacheReadPerMTok +
      usage.cacheCreationInputTokens * prices.cacheWritePerMTok) /
    1_000_000
  );
}

/** The estimated cost of one model call, or `undefined` for a model without a known price. */
export function estimateCost(model: string, usage: Usage): number | undefined {
  const prices = pricesOf(model);
  return prices ? costOf(usage, prices) : undefined;
}
