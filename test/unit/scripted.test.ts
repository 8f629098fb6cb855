import { describe, expect, it } from 'vitest';
import { toWire } from '../../functions/adapters/model/anthropic.js';
import { ScriptExhausted, ScriptedModel, readScript, scriptPosition, scriptTurn } from '../../functions/adapters/model/scripted.js';
import { agentProfile } from '../../functions/core/agents/profiles.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import type { ModelRequest } from '../../functions/core/model/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { replayedScript } from '../../local/stand-ins/messages-api.js';
import { memoryCore, say, use } from '../support/agents.js';
import { newRun } from '../support/memory.js';

const calculatorScript = readScript('local/scripts/calculator.json');
const multiScript = readScript('local/scripts/multi.json');

/** A core whose model replays `script` for every run. */
async function replaying(script = calculatorScript) {
  const core = await memoryCore('What is 1234 times 5678? Save the answer to answer.md.');
  const model = ScriptedModel.perRun(script);
  core.deps.model = model;
  core.deps.plans = core.runs;
  return { ...core, model };
}


describe('a script replayed per run', () => {
  it('replays from its first turn for every run, one after another and at once', async () => {
    const core = await replaying();
    for (const runId of ['run-2', 'run-3', 'run-4']) await core.runs.create(newRun(runId, 'Again.'));

    const one = await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5 }, core.deps);
    const two = await runAgentLoop({ runId: 'run-2', agent: 'single', maxIterations: 5 }, core.deps);
    const atOnce = await Promise.all(['run-3', 'run-4'].map((runId) => runAgentLoop({ runId, agent: 'single', maxIterations: 5 }, core.deps)));

    const answer = { response: '1234 × 5678 = 7,006,652. I saved it to answer.md.', iterations: 3, stopReason: 'end_turn' };
    expect([one, two, ...atOnce]).toEqual([answer, answer, answer, answer]);
    expect(await core.workspaces.get('run-4')?.read('answer.md')).toEqual(new TextEncoder().encode('# Answer\n\n1234 × 5678 = 7006652\n'));
  });

  it('gives a retried step the same turn, not the next one', async () => {
    const core = await replaying();
    const request = { model: 'claude-test', system: 's', tools: [], maxTokens: 100, messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Go.' }] }] };
    const first = await core.model.generate(request);
    const again = await core.model.generate(request);
    expect(again.message).toEqual(first.message);
    expect(first.message.content).toEqual(calculatorScript[0]?.content);
  });

  it('starts a run of a session at the first turn, whatever the session holds before it', async () => {
    const core = await replaying();
    await core.runs.create(newRun('run-2', 'And again.'));
    const session = conversationIdOf('run-1', 'single', 'chat-1');
    await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5, conversationId: session }, core.deps);
    const second = await runAgentLoop({ runId: 'run-2', agent: 'single', maxIterations: 5, conversationId: session }, core.deps);

    expect(second.iterations).toBe(3);
    const last = core.model.requests.at(-1);
    // The second run's last request holds the first run's turns too.
    expect(last?.messages.filter((m) => m.role === 'assistant')).toHaveLength(5);
  });

  it("answers the Architect's turns, then the Coder's, in order within a run", async () => {
    const core = await replaying(multiScript);
    await runAgentLoop({ runId: 'run-1', agent: 'architect', maxIterations: 5 }, core.deps);
    const coder = await runAgentLoop({ runId: 'run-1', agent: 'coder', maxIterations: 5 }, core.deps);

    expect(core.model.requests.map((r) => r.tools.some((t) => t.name === 'finish_plan'))).toEqual([true, false, false, false]);
    expect(coder.response).toBe('Created src/greet.ts (greet) and README.md (usage).');
    expect(core.model.requests.map((r) => scriptPosition(multiScript, r))).toEqual([0, 1, 2, 3]);
  });

  it('fails the step that asks past the end of the script', async () => {
    const core = await replaying([use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 2 }])]);
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    await core.deps.conversations.putResult(conversationIdOf('run-1', 'single'), step.seq, 0, { type: 'tool_result', tool_use_id: 'toolu_1', content: '3' });
    const past = inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, core.deps);
    await expect(past).rejects.toBeInstanceOf(ScriptExhausted);
    // The run by its agent and goal, and its own turn: not a count of requests across runs.
    await expect(past).rejects.toThrow('The script has no turn for the agent of the run "What is 1234 times 5678? Save the answer to answer.md.": it asked for turn 2, past its 1.');
  });

  it('answers a denied or failed call with the turn\'s afterError content', async () => {
    const script = readScript('local/scripts/approvals.json');
    const goal = { role: 'user' as const, content: [{ type: 'text' as const, text: 'Go.' }] };
    const after = (isError: boolean) => ({
      tools: [],
      messages: [
        goal,
        { role: 'assistant', content: script[0]?.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_calc_1', content: '7006652' }] },
        { role: 'assistant', content: script[1]?.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_write_1', content: isError ? 'A reviewer denied this tool call.' : 'Wrote answer.md.', ...(isError ? { is_error: true } : {}) }] },
      ],
    });
    expect(scriptTurn(script, after(false))?.content).toEqual([{ type: 'text', text: '1234 × 5678 = 7,006,652. I saved it to answer.md.' }]);
    expect(scriptTurn(script, after(true))?.content).toEqual([{ type: 'text', text: '1234 × 5678 = 7,006,652. I did not save it to answer.md: a reviewer denied the write.' }]);
  });

  it("reads a script whose turns name their user turn per user turn: a session's second run, and a fork cut at it, get the second", async () => {
    const script = readScript('local/scripts/fork.json');
    const core = await replaying(script);
    const session = conversationIdOf('run-1', 'single');
    await core.runs.create(newRun('run-2', 'Now add 8 to it.'));
    const first = await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5, conversationId: session }, core.deps);
    const second = await runAgentLoop({ runId: 'run-2', agent: 'single', maxIterations: 5, conversationId: session }, core.deps);
    expect([first.response, second.response]).toEqual(['6 × 7 = 42.', '42 + 8 = 50.']);
    // A fork cut before the second run's goal, with a goal of its own: the messages before it, then the new goal.
    const { messages } = await core.conversations.load(session);
    const cut = messages.filter((m) => m.meta.runId === 'run-1').map(({ role, content }) => ({ role, content }));
    const fork = { tools: [], messages: [...cut, { role: 'user', content: [{ type: 'text', text: 'Now add 9 to it.' }] }] };
    expect(scriptTurn(script, fork)).toEqual(script[2]);
  });

  it('keeps the shared queue of `addTurn` for models made with `new`', async () => {
    const model = new ScriptedModel().addTurn(say('one'), say('two'));
    const request: ModelRequest = { model: 'm', system: 's', tools: [], maxTokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] };
    expect((await model.generate(request)).message.content).toEqual([{ type: 'text', text: 'one' }]);
    expect((await model.generate(request)).message.content).toEqual([{ type: 'text', text: 'two' }]);
  });
});

describe('the local stand-ins replaying a script', () => {
  it('answer each request with the turn its run has reached, from the request alone', async () => {
    const core = await replaying(multiScript);
    await runAgentLoop({ runId: 'run-1', agent: 'architect', maxIterations: 5 }, core.deps);
    await runAgentLoop({ runId: 'run-1', agent: 'coder', maxIterations: 5 }, core.deps);
    const respond = replayedScript(multiScript);
    // The bodies the Messages API (or Bedrock) would receive, each answered twice, as a retry would.
    const wire = core.model.requests.map((r) => JSON.parse(JSON.stringify(toWire(r))) as Parameters<typeof respond>[0]);
    const replies = await Promise.all([...wire, ...wire].map((body, i) => respond(body, i)));

    expect(replies).toEqual([...multiScript, ...multiScript].map((turn) => ({ turn })));
    expect(agentProfile('architect').tools.names).toContain('finish_plan');
  });

  it('say so when a run asks past the end', async () => {
    const respond = replayedScript([say('only')]);
    const body = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'only' }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: '' }] }] };
    // A client error, not retried, naming the run and the turn it asked for.
    expect(await respond(body, 0)).toEqual({ status: 400, type: 'invalid_request_error', message: 'The script has no turn for the agent of the run "Hi": it asked for turn 2, past its 1.' });
  });
});
