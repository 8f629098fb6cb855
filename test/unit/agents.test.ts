import { describe, expect, it } from 'vitest';
import { agentProfile, openingMessage } from '../../functions/core/agents/profiles.js';
import { finishPlan } from '../../functions/core/tools/builtin/finish-plan.js';
import { defaultToolLimits } from '../../functions/core/tools/registry.js';
import { MemoryRunStore, MemoryWorkspace, newRun } from '../support/memory.js';

const plan = { goal: 'Write hello.txt.', steps: [{ description: 'Create the file.', action: 'create_file', parameters: { path: 'hello.txt' } }] };

describe('agentProfile', () => {
  it('gives each agent its own tools, and only the Architect a finish tool', () => {
    const tools = (['single', 'architect', 'coder'] as const).map((name) => {
      const { tools, finishTool } = agentProfile(name);
      return { name, tools: tools.names, finishTool };
    });
    expect(tools).toEqual([
      { name: 'single', tools: ['calculator', 'read_file', 'write_file', 'list_files', 'edit_file'], finishTool: undefined },
      { name: 'architect', tools: ['finish_plan', 'read_file', 'list_files'], finishTool: 'finish_plan' },
      { name: 'coder', tools: ['read_file', 'write_file', 'list_files', 'edit_file', 'calculator'], finishTool: undefined },
    ]);
  });
});

describe('openingMessage', () => {
  it('opens the single agent’s and the Architect’s part with the goal alone', () => {
    const run = { goal: 'Write hello.txt.', plan };
    expect([openingMessage(run, 'single'), openingMessage(run, 'architect')]).toEqual([
      [{ type: 'text', text: 'Write hello.txt.' }],
      [{ type: 'text', text: 'Write hello.txt.' }],
    ]);
  });

  it('opens the Coder’s part with the goal and the Architect’s plan', () => {
    expect(openingMessage({ goal: 'Say hello.', plan }, 'coder')).toEqual([
      {
        type: 'text',
        text:
          "The user's goal:\nSay hello.\n\nThe Architect's plan:\nGoal: Write hello.txt.\n\nSteps:\n" +
          '1. [create_file] Create the file.\n   parameters: {"path":"hello.txt"}\n\nCarry out this plan in the workspace.',
      },
    ]);
  });

  it('refuses to start the Coder of a run without a plan', () => {
    expect(() => openingMessage({ goal: 'Say hello.' }, 'coder')).toThrow(new Error('The Coder cannot start: the run has no plan.'));
  });
});

describe('finish_plan', () => {
  const ctx = (plans?: MemoryRunStore) => ({
    runId: 'run-1',
    workspace: new MemoryWorkspace(),
    limits: defaultToolLimits,
    ...(plans ? { plans } : {}),
  });

  it('stores the plan on the run and counts its steps', async () => {
    const runs = new MemoryRunStore();
    await runs.create(newRun('run-1', 'Write two files.'));
    const two = { ...plan, steps: [...plan.steps, { description: 'Read it back.', action: 'verify' }] };
    expect([await finishPlan.run(plan, ctx(runs)), await finishPlan.run(two, ctx(runs))]).toEqual([
      'Plan accepted: 1 step. The Coder will carry it out.',
      'Plan accepted: 2 steps. The Coder will carry it out.',
    ]);
    expect(runs.runs.get('run-1')?.plan).toEqual(two);
  });

  it('is a tool error where no plan can be stored', async () => {
    await expect(finishPlan.run(plan, ctx())).rejects.toThrow('plans cannot be stored in this context.');
  });
});
