import { describe, expect, it } from 'vitest';
import { textBlock } from '../../functions/core/model/messages.js';
import type { InferenceFeature, ToolFeature } from '../../functions/core/steps/hooks.js';
import { inferenceFeatures, toolFeatures } from '../../functions/core/steps/features.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { memoryCore, say, use } from '../support/agents.js';

/** Features that write down, in one shared log, each point they are called at. */
function recorders(log: string[], ...names: string[]): InferenceFeature[] {
  return names.map((name) => ({
    name,
    continueWith: () => {
      log.push(`${name}.continueWith`);
      return undefined;
    },
    request: () => void log.push(`${name}.request`),
    beforeModel: async () => void log.push(`${name}.beforeModel`),
    aroundModel: async (_call, next) => {
      log.push(`${name}.aroundModel:in`);
      const response = await next();
      log.push(`${name}.aroundModel:out`);
      return response;
    },
    afterModel: () => void log.push(`${name}.afterModel`),
    afterCount: async (counted) => void log.push(`${name}.afterCount:${counted.call}`),
    settle: async () => void log.push(`${name}.settle`),
  }));
}

function toolRecorders(log: string[], ...names: string[]): ToolFeature[] {
  return names.map((name) => ({
    name,
    beforeTool: async () => void log.push(`${name}.beforeTool`),
    afterTool: () => void log.push(`${name}.afterTool`),
  }));
}

describe('the inference step pipeline', () => {
  it('calls each hook point in pipeline order, and the features at a point in the order they are listed', async () => {
    const core = await memoryCore();
    core.model.addTurn(say('5'));
    const log: string[] = [];
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...core.deps, features: recorders(log, 'a', 'b') });
    expect(log).toEqual([
      'a.continueWith',
      'b.continueWith',
      'a.request',
      'b.request',
      'a.beforeModel',
      'b.beforeModel',
      'a.aroundModel:in',
      'b.aroundModel:in',
      'b.aroundModel:out',
      'a.aroundModel:out',
      'a.afterModel',
      'b.afterModel',
      'a.afterCount:answer',
      'b.afterCount:answer',
      'a.settle',
      'b.settle',
    ]);
  });

  it('asks the features what to say after a turn that ended, and sends the first answer', async () => {
    const core = await memoryCore();
    core.model.addTurn(say('done'), say('more'));
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    const log: string[] = [];
    const [first, second] = recorders(log, 'quiet', 'speaker');
    const speaker: InferenceFeature = { ...second, name: 'speaker', continueWith: () => (log.push('speaker.continueWith'), [textBlock('Go on.')]) };
    const third: InferenceFeature = { name: 'unasked', continueWith: () => (log.push('unasked.continueWith'), [textBlock('Never sent.')]) };
    if (!first) throw new Error('no recorder');
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, { ...core.deps, features: [first, speaker, third] });
    expect(log.slice(0, 3)).toEqual(['quiet.continueWith', 'speaker.continueWith', 'quiet.request']);
    expect(core.model.requests[1]?.messages.at(-1)).toEqual({ role: 'user', content: [textBlock('Go on.')] });
  });

  it('lets a feature shape the request, wrap the model call and decide what the answer means', async () => {
    const core = await memoryCore();
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    const seen: unknown[] = [];
    const feature: InferenceFeature = {
      name: 'shaper',
      request: (_step, request) => {
        request.system += ' [shaped]';
      },
      aroundModel: (_call, next) => next({ onProgress: (partial) => void seen.push(partial.length) }),
      afterModel: (answer) => {
        answer.calls = [];
        answer.stopReason = 'end_turn';
      },
    };
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...core.deps, features: [feature] });
    expect(core.model.requests[0]?.system.endsWith(' [shaped]')).toBe(true);
    expect(step).toEqual({ stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 1 });
  });

  it.each(['request', 'beforeModel', 'afterModel', 'afterCount', 'settle'] as const)(
    'fails the step when a feature fails at %s, and calls no later feature of that point',
    async (point) => {
      const core = await memoryCore();
      core.model.addTurn(say('5'));
      const log: string[] = [];
      const failing: InferenceFeature = {
        name: 'failing',
        [point]: () => {
          throw new Error(`${point} failed`);
        },
      };
      const [after] = recorders(log, 'after');
      if (!after) throw new Error('no recorder');
      await expect(
        inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...core.deps, features: [failing, after] }),
      ).rejects.toThrow(`${point} failed`);
      expect(log).not.toContain(point === 'afterCount' ? 'after.afterCount:answer' : `after.${point}`);
    },
  );

  it('keeps no model answer it did not store: a failure around the call leaves the conversation without it', async () => {
    const core = await memoryCore();
    core.model.addTurn(say('5'));
    const failing: InferenceFeature = { name: 'failing', aroundModel: () => Promise.reject(new Error('around failed')) };
    await expect(inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...core.deps, features: [failing] })).rejects.toThrow('around failed');
    const conversation = await core.conversations.load('run/run-1/single');
    expect(conversation.messages.map((m) => m.role)).toEqual(['user']);
    expect(core.model.requests).toEqual([]);
  });

  it('lists the deployment’s features in the order their hooks depend on', () => {
    expect(inferenceFeatures.map((feature) => feature.name)).toEqual(['external-tools', 'untrusted-rules', 'memory', 'approvals', 'output', 'children', 'budgets', 'compaction', 'live', 'traces', 'result']);
    expect(toolFeatures.map((feature) => feature.name)).toEqual(['approvals', 'result-size', 'untrusted', 'traces']);
  });
});

describe('the tool step pipeline', () => {
  async function toolTurn() {
    const core = await memoryCore();
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    return { core, input: { runId: 'run-1', agent: 'single' as const, seq: step.seq, toolUseId: 'toolu_1' } };
  }

  it('calls beforeTool and afterTool of each feature in order, around the run', async () => {
    const { core, input } = await toolTurn();
    const log: string[] = [];
    const ran: ToolFeature = { name: 'witness', afterTool: (outcome) => void log.push(`ran=${outcome.ran} ${outcome.result.content}`) };
    await toolStep(input, { ...core.deps, features: [...toolRecorders(log, 'a', 'b'), ran] });
    expect(log).toEqual(['a.beforeTool', 'b.beforeTool', 'a.afterTool', 'b.afterTool', 'ran=true 5']);
  });

  it('stores what an after-tool feature made of the result, and nothing runs for a call a before-tool feature answered', async () => {
    const { core, input } = await toolTurn();
    const deny: ToolFeature = { name: 'deny', beforeTool: async (call) => void (call.answer = { type: 'tool_result', tool_use_id: call.call.id, content: 'No.', is_error: true }) };
    const note: ToolFeature = { name: 'note', afterTool: (outcome) => void (outcome.result = { ...outcome.result, content: `${outcome.result.content} (noted, ran=${outcome.ran})` }) };
    expect(await toolStep(input, { ...core.deps, features: [deny, note] })).toEqual({ toolUseId: 'toolu_1', isError: true });
    const conversation = await core.conversations.load('run/run-1/single');
    expect(conversation.pendingResults).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'No. (noted, ran=false)', is_error: true }]);
    expect(conversation.notRun).toEqual(new Set(['1/0']));
  });

  it.each(['beforeTool', 'afterTool'] as const)('fails the step when a feature fails at %s, storing no result', async (point) => {
    const { core, input } = await toolTurn();
    const failing: ToolFeature = {
      name: 'failing',
      [point]: () => {
        throw new Error(`${point} failed`);
      },
    };
    await expect(toolStep(input, { ...core.deps, features: [failing] })).rejects.toThrow(`${point} failed`);
    expect((await core.conversations.load('run/run-1/single')).pendingResults).toEqual([]);
  });
});
