import { describe, expect, it } from 'vitest';
import { costOf, estimateCost, pricesOf } from '../../functions/core/model/prices.js';

describe('pricesOf', () => {
  it('finds a model by the family its id contains, in Anthropic’s and in Bedrock’s spelling', () => {
    const sonnet = { family: 'claude-sonnet-4', inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
    expect(pricesOf('claude-sonnet-4-20250514')).toEqual(sonnet);
    expect(pricesOf('us.anthropic.claude-sonnet-4-20250514-v1:0')).toEqual(sonnet);
  });

  it('prefers the longer family name: Opus 4.5 is not priced as Opus 4', () => {
    expect(pricesOf('claude-opus-4-5-20251101')).toEqual({ family: 'claude-opus-4-5', inputPerMTok: 5, outputPerMTok: 25, cacheReadPerMTok: 0.5, cacheWritePerMTok: 6.25 });
  });

  it('knows no price for a model outside the list', () => {
    expect(pricesOf('claude-test')).toBeUndefined();
  });
});

describe('costOf', () => {
  it('adds input, output, cache reads and cache writes, each at its own price per million tokens', () => {
    const prices = { inputPerMTok: 1, outputPerMTok: 10, cacheReadPerMTok: 100, cacheWritePerMTok: 1_000 };
    // Each kind of token alone, then all together: 1 + 20 + 300 + 4,000 millionths of a dollar.
    expect([
      costOf({ inputTokens: 1_000_000, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }, prices),
      costOf({ inputTokens: 0, outputTokens: 1_000_000, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }, prices),
      costOf({ inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 1_000_000, cacheCreationInputTokens: 0 }, prices),
      costOf({ inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 1_000_000 }, prices),
      costOf({ inputTokens: 1, outputTokens: 2, cacheReadInputTokens: 3, cacheCreationInputTokens: 4 }, prices),
    ]).toEqual([1, 10, 100, 1_000, 0.004321]);
  });
});

describe('estimateCost', () => {
  it('prices a known model’s call and leaves an unknown model’s unpriced', () => {
    const usage = { inputTokens: 2_000_000, outputTokens: 1_000_000, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    expect([estimateCost('claude-haiku-4-5', usage), estimateCost('claude-test', usage)]).toEqual([7, undefined]);
  });
});
