import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { type ContextPolicy } from '../../functions/core/compaction/types.js';
import { chooseCut, estimatedTokens, modelMessages, needsCompaction, refusedPolicy, summaryInstruction, summaryRequestMessages } from '../../functions/core/compaction/context.js';
import { type Conversation, type StoredMessage } from '../../functions/core/conversation/types.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { type Message, type Usage, textOf, toolResult, toolUses } from '../../functions/core/model/messages.js';
import { ContextWindowExceeded, type ModelRequest, ModelResponseEmpty, ModelUnavailable } from '../../functions/core/model/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { memoryCore, say, use } from '../support/agents.js';

const cid = conversationIdOf('run-1', 'single');
/** A window of 1,000 tokens: compact past 800, keep about 300 verbatim. */
const small: ContextPolicy = { windowTokens: 1_000, compactAt: 0.8, keepShare: 0.3 };

/** A core on in-memory fakes with the small window, answering in at most 100 tokens. */
async function smallCore(goal: string) {
  const core = await memoryCore(goal);
  core.deps.context = small;
  core.deps.settings = { model: 'claude-test', maxTokens: 100 };
  return core;
}

/** A turn whose usage the test sets, whatever its content (the scripted model counts 4 chars a token otherwise). */
function sized(turn: ScriptedTurn, inputTokens: number, outputTokens = 20): ScriptedTurn {
  return { ...turn, usage: { inputTokens, outputTokens, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 } };
}

const add = (id: string, a: number) => use([id, 'calculator', { operation: 'add', a, b: 1 }]);

/** A calculator call after about 250 tokens of reasoning. */
function thinkThenAdd(id: string, a: number): ScriptedTurn {
  return { content: [{ type: 'text', text: `Adding ${a}. ${'x'.repeat(1_000)}` }, ...add(id, a).content] };
}
const isSummaryRequest = (r: ModelRequest) => JSON.stringify(r.messages.at(-1)?.content).includes(summaryInstruction);

/** Every `tool_use` of a request is answered, in the next message, by results in call order. */
function expectPairsIntact(messages: Message[]): void {
  messages.forEach((message, i) => {
    const results = messages[i + 1]?.content.filter((b) => b.type === 'tool_result') ?? [];
    if (message.role === 'assistant') {
      expect(results.map((r) => (r.type === 'tool_result' ? r.tool_use_id : ''))).toEqual(toolUses(message).map((c) => c.id));
    }
    if (i === 0) expect(message.content.some((b) => b.type === 'tool_result')).toBe(false);
  });
  messages.forEach((m, i) => {
    if (i > 0) expect(m.role).not.toBe(messages[i - 1]?.role);
  });
}

describe('compaction in the inference step', () => {
  it('summarizes the older turns once the conversation passes the share of the window, keeping all of it stored', async () => {
    const core = await smallCore('Add up a list, one number at a time.');
    // Sizes as the model counts them (4 characters a token): each turn about 275 tokens, so the
    // conversation passes 800 after the third.
    core.model.addTurn(
      thinkThenAdd('toolu_1', 1),
      thinkThenAdd('toolu_2', 2),
      thinkThenAdd('toolu_3', 3),
      say('Goal: add up a list. Done so far: 1+1=2, 2+1=3, 3+1=4.'), // the summary
      thinkThenAdd('toolu_4', 4),
      say('The total is 5.'),
    );

    const outcome = await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 10 }, core.deps);

    expect(outcome).toEqual({ response: 'The total is 5.', iterations: 5, stopReason: 'end_turn' });
    const requests = core.model.requests;
    expect(requests.map(isSummaryRequest)).toEqual([false, false, false, true, false, false]);
    // The summary request is the prefix the model had been sent, with the instruction added.
    expect(requests[3]?.messages.slice(0, -1)).toEqual(requests[2]?.messages.slice(0, -1));
    expect(requests[3]?.system).toBe(requests[2]?.system);

    const stored = await core.conversations.load(cid);
    expect(stored.messages.map((m) => m.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(stored.compaction).toMatchObject({ fromSeq: 5, atSeq: 6, runId: 'run-1', iteration: 3 });
    const summary: Message = {
      role: 'user',
      content: [{ type: 'text', text: expect.stringContaining('Goal: add up a list. Done so far: 1+1=2, 2+1=3, 3+1=4.') as string }],
    };
    const kept = stored.messages.filter((m) => m.seq >= 5).map(({ role, content }) => ({ role, content }));
    expect(requests[4]?.messages).toEqual([summary, ...kept.slice(0, 2)]);
    // Later requests start with the same bytes, so the cached prefix is reused.
    expect(JSON.stringify(requests[5]?.messages.slice(0, 3))).toBe(JSON.stringify(requests[4]?.messages));
    for (const request of requests.filter((r) => !isSummaryRequest(r))) expectPairsIntact(request.messages);
  });

  it('counts the summary call in the step’s usage and cost', async () => {
    const core = await smallCore('Add.');
    core.deps.settings = { model: 'claude-sonnet-4-5', maxTokens: 100 };
    const usage = (inputTokens: number): Usage => ({ inputTokens, outputTokens: 10, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    core.model.addTurn(
      { ...add('toolu_1', 1), usage: usage(900) },
      { ...say('summary'), usage: usage(1_000) },
      { ...say('2'), usage: usage(100) },
    );
    await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5 }, core.deps);
    // 900 + 10 tokens after the first turn: the second step compacts, then answers.
    const run = core.runs.runs.get('run-1');
    expect(run?.usage).toEqual({ inputTokens: 2_000, outputTokens: 30, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    expect(run?.usageByAgent).toEqual({ single: run?.usage });
    expect(run?.estimatedCostUsd).toBeCloseTo((2_000 * 3 + 30 * 15) / 1e6, 12);
  });

  it('compacts and calls again, once, when the model says the prompt is too long', async () => {
    const core = await smallCore('Add.');
    core.model.addTurn(
      sized(add('toolu_1', 1), 100),
      sized(add('toolu_2', 2), 200),
      () => {
        throw new ContextWindowExceeded('prompt is too long: 1200 tokens > 1000 maximum');
      },
      say('summary of the sums'),
      say('3'),
    );
    const outcome = await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5 }, core.deps);
    expect(outcome.response).toBe('3');
    expect(core.model.requests.map(isSummaryRequest)).toEqual([false, false, false, true, false]);
    expect(JSON.stringify(core.model.requests[4]?.messages[0])).toContain('summary of the sums');
  });

  it('compacts when the answer stops at the context window, and does not store the cut answer', async () => {
    const core = await smallCore('Add.');
    core.model.addTurn(
      sized(add('toolu_1', 1), 100),
      { ...say('partial'), stopReason: 'model_context_window_exceeded' },
      say('summary'),
      say('2'),
    );
    const outcome = await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5 }, core.deps);
    expect(outcome.response).toBe('2');
    const stored = await core.conversations.load(cid);
    expect(stored.messages.map((m) => textOf(m))).not.toContain('partial');
  });

  it('fails with ContextWindowExceeded when the conversation is still too long after compacting', async () => {
    const core = await smallCore('Add.');
    const tooLong = () => {
      throw new ContextWindowExceeded('prompt is too long');
    };
    core.model.addTurn(sized(add('toolu_1', 1), 100), tooLong, say('summary'), tooLong);
    await expect(runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5 }, core.deps)).rejects.toMatchObject({
      name: 'ContextWindowExceeded',
    });
    expect(core.model.requests.filter(isSummaryRequest)).toHaveLength(1);
  });

  it('fails with ContextWindowExceeded when there is nothing older to summarize', async () => {
    const core = await smallCore('A goal too long for the window.');
    core.model.addTurn(() => {
      throw new ContextWindowExceeded('prompt is too long');
    });
    await expect(inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps)).rejects.toMatchObject({
      name: 'ContextWindowExceeded',
    });
    expect(core.model.requests).toHaveLength(1);
  });

  it('reuses the stored summary when the step is retried after a failure', async () => {
    const core = await smallCore('Add.');
    core.model.addTurn(sized(add('toolu_1', 1), 100), sized(add('toolu_2', 2), 900), say('the summary'), () => {
      throw new ModelUnavailable('dropped');
    });
    const step = async (iteration: number) => {
      const result = await inferenceStep({ runId: 'run-1', agent: 'single', iteration }, core.deps);
      for (const call of result.toolCalls) {
        await toolStep({ runId: 'run-1', agent: 'single', seq: result.seq, toolUseId: call.id }, core.deps);
      }
      return result;
    };
    await step(0);
    await step(1);
    await expect(step(2)).rejects.toMatchObject({ name: 'ModelUnavailable' });

    core.model.addTurn(say('3'));
    expect(await step(2)).toMatchObject({ stopReason: 'end_turn' });
    expect(core.model.requests.filter(isSummaryRequest)).toHaveLength(1);
    expect(JSON.stringify(core.model.requests.at(-1)?.messages[0])).toContain('the summary');
  });

  it('compacts again later, summarizing the earlier summary with the turns after it', async () => {
    const core = await smallCore('Add many.');
    core.model.addTurn(
      sized(add('toolu_1', 1), 300),
      sized(add('toolu_2', 2), 900),
      say('first summary'),
      sized(add('toolu_3', 3), 500),
      sized(add('toolu_4', 4), 900),
      say('second summary'),
      say('done'),
    );
    await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 10 }, core.deps);
    const summaries = core.model.requests.filter(isSummaryRequest);
    expect(summaries).toHaveLength(2);
    expect(JSON.stringify(summaries[1]?.messages[0])).toContain('first summary');
    expect(JSON.stringify(core.model.requests.at(-1)?.messages[0])).toContain('second summary');
    expect((await core.conversations.load(cid)).messages).toHaveLength(10);
  });
});

describe('chooseCut', () => {
  /** A conversation of turns: user opening, then assistant turns with n calls, each answered. */
  function conversationOf(turns: { calls: number; chars: number; paused: boolean }[], fromSeq?: number): Conversation {
    const messages: StoredMessage[] = [];
    const meta = { runId: 'r', iteration: 0 };
    messages.push({ seq: 0, role: 'user', content: [{ type: 'text', text: 'goal' }], meta });
    turns.forEach((turn, t) => {
      const calls = Array.from({ length: turn.paused ? 0 : turn.calls }, (_, i) => ({ type: 'tool_use' as const, id: `t${t}_${i}`, name: 'x', input: {} }));
      const text = { type: 'text' as const, text: 'x'.repeat(turn.chars) };
      messages.push({ seq: messages.length, role: 'assistant', content: [text, ...calls], meta: { ...meta, stopReason: turn.paused ? 'pause_turn' : 'tool_use' } });
      if (turn.paused) return;
      messages.push({
        seq: messages.length,
        role: 'user',
        content: calls.length ? calls.map((c) => toolResult(c.id, 'ok')) : [{ type: 'text', text: 'go on' }],
        meta,
      });
    });
    const compaction =
      fromSeq === undefined
        ? undefined
        : { fromSeq, atSeq: fromSeq, summary: 's', runId: 'r', iteration: 0, usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }, model: 'm' };
    return { messages, pendingResults: [], ...(compaction ? { compaction } : {}) };
  }

  it('never splits a tool_use from its result, never repeats a role, and always moves forward', () => {
    const turn = fc.record({ calls: fc.integer({ min: 0, max: 4 }), chars: fc.integer({ min: 0, max: 3_000 }), paused: fc.boolean() });
    fc.assert(
      fc.property(fc.array(turn, { minLength: 1, maxLength: 30 }), fc.integer({ min: 200, max: 20_000 }), (turns, window) => {
        const policy = { windowTokens: window, compactAt: 0.8, keepShare: 0.25 };
        let conversation = conversationOf(turns);
        for (let round = 0; round < 3; round++) {
          const cut = chooseCut(conversation, policy);
          if (cut === undefined) return;
          const at = conversation.messages.findIndex((m) => m.seq === cut);
          expect(conversation.messages[at]?.role).toBe('assistant');
          expect(conversation.messages[at - 1]?.role).toBe('user');
          expect(cut).toBeGreaterThan(conversation.compaction?.fromSeq ?? 0);
          conversation = conversationOf(turns, cut);
          const sent = modelMessages(conversation);
          expect(sent[0]?.role).toBe('user');
          // Paused turns legitimately repeat the assistant role; only pairing is checked across them.
          sent.forEach((message, i) => {
            if (message.role !== 'assistant' || toolUses(message).length === 0) return;
            const next = sent[i + 1];
            if (!next) return;
            const answered = next.content.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []));
            expect(answered).toEqual(toolUses(message).map((c) => c.id));
          });
          expect(sent[1]?.role).toBe('assistant');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the newest turns that fit the kept share of the window', () => {
    const conversation = conversationOf(Array.from({ length: 8 }, () => ({ calls: 1, chars: 400, paused: false })));
    // Each turn is about 125 + 15 tokens; 300 tokens keep the last two turns (from message 13).
    const cut = chooseCut(conversation, small);
    expect(cut).toBe(13);
  });
});

describe('the size of a conversation', () => {
  const meta = { runId: 'r', iteration: 0 };
  const usage = { inputTokens: 100, outputTokens: 10, cacheReadInputTokens: 1_000, cacheCreationInputTokens: 10_000 };
  const messages: StoredMessage[] = [
    { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta },
    { seq: 1, role: 'assistant', content: [{ type: 'text', text: 'ok' }], meta: { ...meta, usage } },
    { seq: 2, role: 'user', content: [{ type: 'text', text: 'x'.repeat(30) }], meta },
  ];
  const compaction = (atSeq: number) => ({ fromSeq: 1, atSeq, summary: 's', runId: 'r', iteration: 0, usage, model: 'm' });

  it('is the last count the model made plus a rough count of what came after, unknown until the model counts a compacted conversation', () => {
    // The user message after the count is 58 characters of JSON: 15 tokens.
    expect([
      estimatedTokens({ messages, pendingResults: [] }),
      estimatedTokens({ messages, pendingResults: [], compaction: compaction(0) }),
      estimatedTokens({ messages, pendingResults: [], compaction: compaction(1) }),
      estimatedTokens({ messages: messages.slice(0, 1), pendingResults: [] }),
    ]).toEqual([11_125, 11_125, undefined, undefined]);
  });

  it('needs compacting past the share of the window or without room for an answer, and never while unknown', () => {
    const conversation = { messages, pendingResults: [] };
    const policy = (windowTokens: number) => ({ windowTokens, compactAt: 0.5, keepShare: 0.25 });
    expect([
      needsCompaction(conversation, policy(22_250)),
      needsCompaction(conversation, policy(22_249)),
      needsCompaction(conversation, policy(100_000), 88_875),
      needsCompaction(conversation, policy(100_000), 88_876),
      needsCompaction({ messages: messages.slice(0, 1), pendingResults: [] }, policy(1)),
    ]).toEqual([false, true, false, true, false]);
  });

  it('is cut by the window a refusal names, else by the conversation’s own rough size, never by more than the configured window', () => {
    const conversation = { messages, pendingResults: [] };
    const policy = { windowTokens: 1_000, compactAt: 0.8, keepShare: 0.25 };
    // The three messages are 8 + 8 + 15 tokens by the rough count.
    expect([
      refusedPolicy(conversation, policy, 500),
      refusedPolicy(conversation, policy, 5_000),
      refusedPolicy(conversation, policy),
      refusedPolicy({ messages: [], pendingResults: [] }, policy),
    ]).toEqual([
      { ...policy, windowTokens: 500 },
      policy,
      { ...policy, windowTokens: 31 },
      { ...policy, windowTokens: 1 },
    ]);
  });
});

describe('where compaction cuts', () => {
  const meta = { runId: 'r', iteration: 0 };
  const text = (seq: number, role: 'user' | 'assistant', chars: number): StoredMessage => ({ seq, role, content: [{ type: 'text', text: 'x'.repeat(chars) }], meta });

  it('keeps the turns that fit the kept share exactly, and cuts nothing when no assistant message follows a user one', () => {
    // A 20-character text is 48 characters of JSON: 12 tokens; from message 1 on the conversation is 48 tokens.
    const messages = [text(0, 'user', 20), text(1, 'assistant', 20), text(2, 'user', 20), text(3, 'assistant', 20), text(4, 'user', 20)];
    const policy = (windowTokens: number) => ({ windowTokens, compactAt: 0.8, keepShare: 1 });
    expect([
      chooseCut({ messages, pendingResults: [] }, policy(48)),
      chooseCut({ messages, pendingResults: [] }, policy(47)),
      chooseCut({ messages: [text(0, 'assistant', 1), text(1, 'assistant', 1)], pendingResults: [] }, policy(1)),
      chooseCut({ messages: [text(0, 'user', 1)], pendingResults: [] }, policy(1)),
    ]).toEqual([1, 3, undefined, undefined]);
  });

  it('asks for the summary after the last message before the cut, as a user message of its own when that one is the model’s', () => {
    const messages = [text(0, 'user', 1), text(1, 'assistant', 1), text(2, 'user', 1)];
    expect(summaryRequestMessages({ messages, pendingResults: [] }, 2)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'x' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'x' }] },
      { role: 'user', content: [{ type: 'text', text: summaryInstruction }] },
    ]);
    expect(summaryRequestMessages({ messages, pendingResults: [] }, 0)).toEqual([{ role: 'user', content: [{ type: 'text', text: summaryInstruction }] }]);
    expect(summaryRequestMessages({ messages, pendingResults: [] }, 3).at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'x' }, { type: 'text', text: summaryInstruction }],
    });
  });
});

describe('compaction that does not shorten', () => {
  it('refuses a blank summary, so the step is retried instead of storing it', async () => {
    const core = await smallCore('Add up a list, one number at a time.');
    core.model.addTurn(thinkThenAdd('toolu_1', 1), thinkThenAdd('toolu_2', 2), thinkThenAdd('toolu_3', 3), say('  '));
    await expect(runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 10 }, core.deps)).rejects.toThrow(
      new ModelResponseEmpty('The model returned no summary when asked to compact the conversation.'),
    );
    expect((await core.conversations.load(cid)).compaction).toBeUndefined();
  });

  it('stores the answer of a just-compacted conversation that the model still finds too long, compacting no more', async () => {
    const core = await smallCore('Add up a list, one number at a time.');
    core.model.addTurn(
      thinkThenAdd('toolu_1', 1),
      thinkThenAdd('toolu_2', 2),
      thinkThenAdd('toolu_3', 3),
      say('Summary so far.'),
      { ...say('cut off'), stopReason: 'model_context_window_exceeded' },
    );
    await expect(runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 10 }, core.deps)).rejects.toThrow(ContextWindowExceeded);
    expect([core.model.requests.filter(isSummaryRequest).length, (await core.conversations.load(cid)).messages.at(-1)?.meta.stopReason]).toEqual([
      1,
      'model_context_window_exceeded',
    ]);
  });
});
