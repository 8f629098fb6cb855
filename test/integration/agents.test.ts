/**
 * A team's own agents through the local stack (docs/agents.md): definitions from STEPWISE_AGENTS,
 * each run's model requests carrying that agent's instructions and only its tools, and the run
 * recording the agent and version it follows.
 */
import { describe, expect, it } from 'vitest';
import { refOf } from '../../functions/core/definitions/definition.js';
import type { AgentDefinition } from '../../functions/core/definitions/types.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const triage: AgentDefinition = {
  name: 'triage',
  description: 'Sorts a request into bug, question or feature.',
  instructions: 'You triage requests. Answer with one word: bug, question or feature.',
  tools: ['calculator'],
};

const writer: AgentDefinition = {
  name: 'release-notes-writer',
  description: 'Writes release notes into the workspace.',
  instructions: 'You write release notes to NOTES.md.',
  tools: ['write_file', 'read_file'],
  model: 'claude-haiku-4-5',
  maxTokens: 1000,
  maxIterations: 4,
};

const local = useLocalStack({ STEPWISE_AGENTS: JSON.stringify([triage, writer]) });

const toolNames = (request: { tools?: unknown[] } | undefined) => request?.tools?.map((t) => (t as { name: string }).name);

describe('a team’s own agents', () => {
  it('runs an agent with its instructions and only its tools, and records the agent and version on the run', async () => {
    const tag = local.book.add('triage', { turn: use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 1 }]) }, { turn: say('question') });
    const started = await local.post('/runs', { goal: `${tag} How do I reset my password?`, agent: 'triage' });
    expect(started.status).toBe(202);
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({
      status: 'succeeded',
      mode: 'single',
      agent: refOf(triage),
      agents: [{ place: 'triage', ...refOf(triage) }],
      iterations: { triage: 2 },
      result: { response: 'question' },
    });
    const requests = local.book.requests.get('triage') ?? [];
    expect(requests.map(toolNames)).toEqual([['calculator'], ['calculator']]);
    // No file tool, so no workspace rules: the system prompt is the instructions alone.
    expect(requests.map((r) => JSON.stringify(r.system))).toEqual(Array(2).fill(expect.stringContaining(triage.instructions)));
    expect(JSON.stringify(requests[0]?.system)).not.toContain('workspace');
    const transcript = (await local.get(`/runs/${run.runId}/messages`)).body.items as { agent: string }[];
    expect(new Set(transcript.map((m) => m.agent))).toEqual(new Set(['triage']));
  });

  it('uses the agent’s model and answer size, caps its iterations, and answers a call of a tool it lacks with a tool error', async () => {
    const tag = local.book.add(
      'writer',
      { turn: use(['toolu_calc', 'calculator', { operation: 'add', a: 2, b: 2 }]) },
      { turn: use(['toolu_w', 'write_file', { path: 'NOTES.md', content: '# 1.2\n' }]) },
      { turn: say('Wrote NOTES.md.') },
    );
    const started = await local.post('/runs', { goal: `${tag} Notes for 1.2.`, agent: 'release-notes-writer', maxIterations: 50 });
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({ status: 'succeeded', agent: refOf(writer), result: { response: 'Wrote NOTES.md.' } });
    const requests = local.book.requests.get('writer') ?? [];
    expect(requests.map((r) => [r.model, r.max_tokens])).toEqual(Array(3).fill(['claude-haiku-4-5', 1000]));
    expect(requests.map(toolNames)).toEqual(Array(3).fill(['write_file', 'read_file']));
    expect(JSON.stringify(requests[0]?.system)).toContain('The workspace is a private folder');
    // The calculator is not the writer's: the call is answered as an error, nothing ran.
    const results = JSON.stringify(requests[1]?.messages.at(-1));
    expect(results).toContain('"is_error":true');
    expect(results).toMatch(/calculator/);
    expect(await (await fetch(`${local.stack.url}/runs/${run.runId}/files/NOTES.md`)).text()).toBe('# 1.2\n');

    // The agent's limit of 4 iterations caps the request's 50.
    const looping = local.book.add('looping', ...Array.from({ length: 6 }, (_, i) => ({ turn: use([`toolu_r${i}`, 'read_file', { path: 'NOTES.md' }]) })));
    const capped = await local.waitFor(String((await local.post('/runs', { goal: `${looping} Loop.`, agent: 'release-notes-writer', maxIterations: 50 })).body.runId));
    expect(capped).toMatchObject({ status: 'failed', error: { code: 'MaxIterationsExceeded' }, iterations: { 'release-notes-writer': 4 } });
  });

  it('refuses an unknown agent with the names it has, and keeps mode "single" as the assistant', async () => {
    const refused = await local.post('/runs', { goal: 'x', agent: 'nobody' });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('unknown agent \\"nobody\\"; this deployment has assistant, architect, coder, triage, release-notes-writer');

    const tag = local.book.add('single', { turn: say('Hello.') });
    const run = await local.run(`${tag} Say hello.`);
    expect(run).toMatchObject({ status: 'succeeded', agent: { name: 'assistant' }, agents: [{ place: 'single', name: 'assistant' }], iterations: { single: 1 } });
  });
});
