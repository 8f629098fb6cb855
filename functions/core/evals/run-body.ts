/**
 * What an eval case's runs are started with, the same for `stepwise eval` (through the API) and
 * the deployed evals (through intake's core): the case's run body, and the judge run's prompt and
 * verdict schema.
 */
import type { EvalCase, EvalSuite } from './types.js';

/** The body that starts a case's run: the suite's target, version and limit, the case's goal and files. */
export function caseBody(suite: EvalSuite, kase: EvalCase) {
  return {
    goal: kase.goal,
    ...(suite.agent ? { agent: suite.agent } : {}),
    ...(suite.workflow ? { workflow: suite.workflow } : {}),
    ...(suite.mode ? { mode: suite.mode } : {}),
    ...(suite.agentVersion ? { agentVersion: suite.agentVersion } : {}),
    ...(suite.maxIterations ? { maxIterations: suite.maxIterations } : {}),
    ...(kase.files ? { files: kase.files } : {}),
  };
}

/** The structured answer a judge run gives. */
export const verdictSchema = {
  type: 'object',
  properties: {
    pass: { type: 'boolean', description: 'true only when the answer meets every point of the rubric' },
    reason: { type: 'string', description: 'one sentence: why it passes or fails' },
  },
  required: ['pass', 'reason'],
  additionalProperties: false,
};

/**
 * What a judge run is asked: the rubric first (a tag a test script keys on comes first with it),
 * then the task and the answer to grade.
 */
export function judgePrompt(rubric: string, goal: string, answer: string): string {
  return [
    `Grade an AI agent's answer against this rubric:\n\n${rubric}`,
    `The task the agent was given:\n\n${goal}`,
    `The agent's answer:\n\n${answer || '(no answer)'}`,
    'Use no tools but final_answer: give pass (true only when the answer meets every point of the rubric) and reason (one sentence).',
  ].join('\n\n---\n\n');
}

/** The body of a judge run: single mode, a few model calls, the verdict as its structured output. */
export function judgeBody(rubric: string, goal: string, answer: string) {
  return { mode: 'single' as const, goal: judgePrompt(rubric, goal, answer), maxIterations: 3, output: { schema: verdictSchema } };
}
