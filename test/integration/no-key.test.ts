import { describe, expect, it } from 'vitest';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack({ ANTHROPIC_API_KEY: '' });

describe('a deployment without a model key', () => {
  it('fails the run with a message that says what to set, and keeps serving', async () => {
    const run = await local.run('Say hello.');

    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'ModelNotConfigured', message: expect.stringContaining('set ANTHROPIC_API_KEY'), agent: 'single' },
    });
    expect((await local.get('/health')).body).toEqual({ ok: true });
  });
});
