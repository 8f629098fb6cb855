import { describe, expect, it } from 'vitest';
import type { Conversation, StoredMessage } from '../../functions/core/conversation/types.js';
import { NotFound, StepStateInvalid } from '../../functions/core/errors/errors.js';
import { ModelResponseEmpty } from '../../functions/core/model/types.js';
import { cancelRun } from '../../functions/core/intake/create.js';
import { RunCancelled } from '../../functions/core/runs/types.js';
import { OrchestratorUnavailable } from '../../functions/adapters/aws/intake.js';
import { describeCall, resultLimits, runResult } from '../../functions/core/result/result.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { memoryCore, say, use } from '../support/agents.js';

const step0 = { runId: 'run-1', agent: 'single' as const, iteration: 0 };
const zero = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
const plan = { goal: 'Write a.md.', steps: [{ description: 'Write it.', action: 'create_file' }] };

describe('the end of an agent’s part', () => {
  it('finishes the run at a stop sequence just as at the end of a turn', async () => {
    const answers = [];
    for (const stopReason of ['end_turn', 'stop_sequence'] as const) {
      const core = await memoryCore();
      core.model.addTurn({ ...say('5'), stopReason });
      const step = await inferenceStep(step0, core.deps);
      answers.push({ step, result: core.runs.runs.get('run-1')?.result });
    }
    const finished = { step: { stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 1 }, result: { response: '5', actionsTaken: [] } };
    expect(answers).toEqual([finished, { ...finished, step: { ...finished.step, stopReason: 'stop_sequence' } }]);
  });

  it('gives the run no result when a turn stops for another reason, or when the Architect finishes', async () => {
    const results = [];
    for (const [agent, stopReason] of [['single', 'max_tokens'], ['single', 'pause_turn'], ['architect', 'end_turn']] as const) {
      const core = await memoryCore();
      core.model.addTurn({ ...say('…'), stopReason });
      await inferenceStep({ ...step0, agent }, core.deps);
      results.push(core.runs.runs.get('run-1')?.result);
    }
    expect(results).toEqual([undefined, undefined, undefined]);
  });

  it('ends the Architect’s part at an accepted plan, without asking the model again', async () => {
    const core = await memoryCore('Write a.md.');
    core.deps.plans = core.runs;
    core.model.addTurn(use(['toolu_l', 'list_files', {}]), use(['toolu_p', 'finish_plan', plan]));
    await inferenceStep({ ...step0, agent: 'architect' }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'architect', seq: 1, toolUseId: 'toolu_l' }, core.deps);
    await inferenceStep({ ...step0, agent: 'architect', iteration: 1 }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'architect', seq: 3, toolUseId: 'toolu_p' }, core.deps);
    expect(await inferenceStep({ ...step0, agent: 'architect', iteration: 2 }, core.deps)).toEqual({
      stopReason: 'end_turn',
      toolCalls: [],
      gated: false,
      iteration: 2,
      next: 3,
      seq: 3,
    });
    expect(core.model.requests).toHaveLength(2);
  });

  it('asks the Architect again when its plan call was interrupted before it returned', async () => {
    const core = await memoryCore('Write a.md.');
    core.deps.plans = core.runs;
    core.model.addTurn(use(['toolu_p', 'finish_plan', plan]), say('again'));
    await inferenceStep({ ...step0, agent: 'architect' }, core.deps);
    await inferenceStep({ ...step0, agent: 'architect', iteration: 1 }, core.deps);
    expect(core.model.requests).toHaveLength(2);
  });

  it('sends a refused plan back to the Architect to correct', async () => {
    const core = await memoryCore('Write a.md.');
    core.deps.plans = core.runs;
    core.model.addTurn(use(['toolu_p', 'finish_plan', { goal: 'Write a.md.', steps: [] }]), say('fixing'));
    await inferenceStep({ ...step0, agent: 'architect' }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'architect', seq: 1, toolUseId: 'toolu_p' }, core.deps);
    expect(await inferenceStep({ ...step0, agent: 'architect', iteration: 1 }, core.deps)).toEqual({
      stopReason: 'end_turn',
      toolCalls: [],
      gated: false,
      iteration: 1,
      next: 2,
      seq: 3,
    });
    expect(core.model.requests).toHaveLength(2);
  });

  it('asks the Architect again after a plan call answered alongside another tool’s', async () => {
    const core = await memoryCore('Write a.md.');
    core.deps.plans = core.runs;
    core.model.addTurn(use(['toolu_l', 'list_files', {}], ['toolu_p', 'finish_plan', { goal: 'x', steps: [] }]), say('again'));
    await inferenceStep({ ...step0, agent: 'architect' }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'architect', seq: 1, toolUseId: 'toolu_l' }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'architect', seq: 1, toolUseId: 'toolu_p' }, core.deps);
    await inferenceStep({ ...step0, agent: 'architect', iteration: 1 }, core.deps);
    expect(core.model.requests).toHaveLength(2);
  });
});

describe('what a step counts', () => {
  it('adds every kind of token of the step to the run, and a cost only for a priced model', async () => {
    const usage = { inputTokens: 10, outputTokens: 20, cacheReadInputTokens: 30, cacheCreationInputTokens: 40 };
    const core = await memoryCore();
    core.model.addTurn({ ...say('5'), usage });
    await inferenceStep(step0, core.deps);
    const priced = await memoryCore();
    priced.model.addTurn({ ...say('5'), usage });
    await inferenceStep({ ...step0, model: 'claude-haiku-4-5' }, priced.deps);
    const run = (r: typeof core) => {
      const { usage, usageByAgent, estimatedCostUsd } = r.runs.runs.get('run-1') ?? {};
      return { usage, usageByAgent, estimatedCostUsd };
    };
    expect([run(core), run(priced)]).toEqual([
      { usage, usageByAgent: { single: usage }, estimatedCostUsd: 0 },
      { usage, usageByAgent: { single: usage }, estimatedCostUsd: (10 * 1 + 20 * 5 + 30 * 0.1 + 40 * 1.25) / 1_000_000 },
    ]);
  });
});

describe('inferenceStep on a state the loop never wrote', () => {
  it('refuses a later step of a run with no messages, and a run that does not exist', async () => {
    const core = await memoryCore();
    await expect(inferenceStep({ ...step0, iteration: 3 }, core.deps)).rejects.toThrow(
      new StepStateInvalid('Run run-1 has no messages, but step 3 was asked for.'),
    );
    await expect(inferenceStep({ ...step0, runId: 'run-9' }, core.deps)).rejects.toThrow(new NotFound('Run run-9 does not exist.'));
  });

  it('refuses an answer without content, so the step is retried instead of storing it', async () => {
    const core = await memoryCore();
    core.model.addTurn({ content: [], stopReason: 'end_turn' });
    await expect(inferenceStep(step0, core.deps)).rejects.toThrow(new ModelResponseEmpty('The model returned no content (stop_reason "end_turn").'));
    expect((await core.conversations.load('run/run-1/single')).messages).toHaveLength(1);
  });

  it('takes the answer another attempt of the same step stored first', async () => {
    const core = await memoryCore();
    core.model.addTurn(() => {
      // While this attempt waits for the model, a retry of the step stores its own answer.
      void core.conversations.append('run/run-1/single', { seq: 1, role: 'assistant', content: [{ type: 'text', text: 'first' }], meta: { ...step0, stopReason: 'end_turn', usage: zero } });
      return say('second');
    });
    expect(await inferenceStep(step0, core.deps)).toEqual({ stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 1 });
    expect(core.runs.runs.get('run-1')?.result).toEqual({ response: 'first', actionsTaken: [] });
  });

  it('refuses to overwrite a message another step took', async () => {
    const core = await memoryCore();
    core.model.addTurn(() => {
      void core.conversations.append('run/run-1/single', { seq: 1, role: 'assistant', content: [{ type: 'text', text: 'other' }], meta: { runId: 'run-0', iteration: 0 } });
      return say('mine');
    });
    await expect(inferenceStep(step0, core.deps)).rejects.toThrow(new StepStateInvalid('Message 1 of run/run-1/single was taken by another step.'));
  });
});

describe('runResult', () => {
  const meta = { runId: 'run-1', iteration: 0 };
  function conversationWith(calls: number, answer: string): { conversation: Conversation; final: StoredMessage } {
    const uses = Array.from({ length: calls }, (_, i) => ({ type: 'tool_use' as const, id: `t${i}`, name: 'calculator', input: { a: i } }));
    const final: StoredMessage = { seq: 3, role: 'assistant', content: [{ type: 'text', text: answer }], meta };
    const messages: StoredMessage[] = [
      { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta },
      { seq: 1, role: 'assistant', content: uses, meta },
      { seq: 2, role: 'user', content: uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: 'ok' })), meta },
      final,
    ];
    return { conversation: { messages, pendingResults: [] }, final };
  }

  it('keeps the first actions and the start of the answer, and says how much more there is', () => {
    const { conversation, final } = conversationWith(resultLimits.actions + 2, 'y'.repeat(resultLimits.responseChars + 1));
    const result = runResult(conversation, 'run-1', final);
    expect({ ...result, actionsTaken: result.actionsTaken.slice(-2) }).toEqual({
      response: `${'y'.repeat(resultLimits.responseChars)}\n\n[The answer is longer; the transcript has all of it.]`,
      actionsTaken: [`calculator {"a":${resultLimits.actions - 1}}`, '… and 2 more tool calls (see the transcript)'],
    });
    expect(result.actionsTaken).toHaveLength(resultLimits.actions + 1);
  });

  it('keeps a result exactly at the limits whole', () => {
    const { conversation, final } = conversationWith(resultLimits.actions, 'y'.repeat(resultLimits.responseChars));
    const result = runResult(conversation, 'run-1', final);
    expect([result.response.length, result.actionsTaken.length, result.actionsTaken.at(-1)]).toEqual([
      resultLimits.responseChars,
      resultLimits.actions,
      `calculator {"a":${resultLimits.actions - 1}}`,
    ]);
  });
});

describe('describeCall', () => {
  it('shows a call’s input whole up to 200 characters, and cut after that', () => {
    const call = (text: string) => ({ type: 'tool_use' as const, id: 't', name: 'write_file', input: { text } });
    const fits = 'x'.repeat(200 - '{"text":""}'.length);
    expect([describeCall(call(fits)), describeCall(call(`${fits}z`)), describeCall({ type: 'tool_use', id: 't', name: 'list_files', input: undefined })]).toEqual([
      `write_file {"text":"${fits}"}`,
      `write_file {"text":"${fits}z…`,
      'list_files {}',
    ]);
  });
});

describe('inferenceStep when another writer takes the sequence number', () => {
  const cid = 'session/s1';
  const foreign = (seq: number) => ({ seq, role: 'user' as const, content: [{ type: 'text' as const, text: 'stale' }], meta: { runId: 'run-0', iteration: 9 } });

  it('goes on when its own message was written by a concurrent attempt of the step', async () => {
    const core = await memoryCore();
    const append = core.conversations.append.bind(core.conversations);
    let raced = false;
    core.conversations.append = async (id, message) => {
      if (!raced && message.role === 'user') {
        raced = true;
        await append(id, message);
        return false;
      }
      return append(id, message);
    };
    core.model.addTurn(say('5'));
    expect(await inferenceStep({ ...step0, conversationId: cid }, core.deps)).toEqual({ stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 1 });
  });

  it('plans again after a stale step of another run wrote first', async () => {
    const core = await memoryCore();
    const append = core.conversations.append.bind(core.conversations);
    let raced = false;
    core.conversations.append = async (id, message) => {
      if (!raced) {
        raced = true;
        await append(id, foreign(message.seq));
        return false;
      }
      return append(id, message);
    };
    core.model.addTurn(say('5'));
    expect(await inferenceStep({ ...step0, conversationId: cid }, core.deps)).toEqual({ stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 2 });
  });

  it('gives up when the conversation keeps changing under it', async () => {
    const core = await memoryCore();
    const append = core.conversations.append.bind(core.conversations);
    let writes = 0;
    core.conversations.append = async (id, message) => {
      writes++;
      await append(id, foreign(message.seq));
      return false;
    };
    await expect(inferenceStep({ ...step0, conversationId: cid }, core.deps)).rejects.toThrow(
      new StepStateInvalid('Conversation session/s1 keeps changing under step 0.'),
    );
    expect(writes).toBe(3);
  });
});

describe('inferenceStep, further', () => {
  it('refuses a step after the conversation ended, and sends a paused turn back', async () => {
    const ended = await memoryCore();
    ended.model.addTurn(say('5'));
    await inferenceStep(step0, ended.deps);
    await expect(inferenceStep({ ...step0, iteration: 1 }, ended.deps)).rejects.toThrow(
      new StepStateInvalid('The conversation already ended with message 1; there is nothing to send.'),
    );
    const paused = await memoryCore();
    paused.model.addTurn({ ...say('searching'), stopReason: 'pause_turn' }, say('found'));
    await inferenceStep(step0, paused.deps);
    expect(await inferenceStep({ ...step0, iteration: 1 }, paused.deps)).toEqual({ stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 1, next: 2, seq: 2 });
  });

  it('reads the conversation once for a step that writes its messages as planned', async () => {
    const core = await memoryCore();
    let loads = 0;
    const load = core.conversations.load.bind(core.conversations);
    core.conversations.load = (id) => (loads++, load(id));
    core.model.addTurn(say('5'));
    await inferenceStep(step0, core.deps);
    expect(loads).toBe(1);
  });

  it('hands on no tool call of a turn that stopped for another reason', async () => {
    const core = await memoryCore();
    core.model.addTurn({ ...use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 1 }]), stopReason: 'max_tokens' });
    expect(await inferenceStep(step0, core.deps)).toEqual({ stopReason: 'max_tokens', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 1 });
  });

  it('counts nothing for a stored answer that carries no usage', async () => {
    const core = await memoryCore();
    core.model.addTurn(() => {
      void core.conversations.append('run/run-1/single', { seq: 1, role: 'assistant', content: [{ type: 'text', text: 'first' }], meta: { ...step0, stopReason: 'end_turn' } });
      return say('second');
    });
    await inferenceStep(step0, core.deps);
    expect(core.runs.runs.get('run-1')?.iterations).toEqual({});
  });
});

describe('inferenceStep of a cancelled run', () => {
  it('calls the model no more when the cancel marked the run but stopping its execution failed', async () => {
    const c = await memoryCore();
    c.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    c.model.addTurn(say('5'));
    const first = await inferenceStep({ runId: c.runId, agent: 'single', iteration: 0 }, c.deps);
    await toolStep({ runId: c.runId, agent: 'single', seq: first.seq, toolUseId: 'toolu_1' }, c.deps);
    const announced: string[] = [];
    const starter = {
      start: () => Promise.resolve(),
      stop: () => Promise.reject(new OrchestratorUnavailable('StopExecution failed: ThrottlingException')),
      announceCancelled: (runId: string) => Promise.resolve(void announced.push(runId)),
    };

    await expect(cancelRun(c.runId, { runs: c.runs, starter })).rejects.toThrow('StopExecution failed');
    // The cancel is announced all the same: the run is cancelled, whatever its execution does next.
    expect(announced).toEqual([c.runId]);
    // The execution goes on: its next step refuses before the model is asked.
    await expect(inferenceStep({ runId: c.runId, agent: 'single', iteration: 1 }, c.deps)).rejects.toThrow(RunCancelled);
    expect(c.model.requests).toHaveLength(1);
    expect(await c.runs.get(c.runId)).toMatchObject({ status: 'cancelled', phase: 'cancelled' });
  });
});
