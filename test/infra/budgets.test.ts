/** Budgets in the deployed stack: the settings reach the functions that check them, each with the spend grants it needs and no more. */
import { describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { functionOf, statementsOf, stepwiseStack } from '../support/template.js';
import type { Template } from 'aws-cdk-lib/assertions';

const budgets = { defaultRunMaxUsd: 2, defaultRunMaxTokens: 2_000_000, dailyMaxUsdPerCaller: 50 };
const { template, violations } = synthesize((app) => new StepwiseStack(app, 'Budgets', { budgets }), { nag: true });

/** The actions a role may take on the daily spend items (`spend#…`). */
function spendActions(on: Template, rolePrefix: string): string[] {
  return statementsOf(on, rolePrefix)
    .filter((s) => JSON.stringify(s.Condition ?? {}).includes('"spend#*"'))
    .flatMap((s) => [s.Action].flat())
    .sort();
}

describe('budgets in the deployed stack', () => {
  it('tells the intake and the API the default run budget and the daily limit, and the inference function the daily limit', () => {
    for (const handler of ['api', 'run-requested']) {
      expect(functionOf(template, handler).Properties.Environment.Variables).toMatchObject({
        STEPWISE_DEFAULT_RUN_MAX_USD: '2',
        STEPWISE_DEFAULT_RUN_MAX_TOKENS: '2000000',
        STEPWISE_DAILY_MAX_USD: '50',
      });
    }
    const inference = functionOf(template, 'inference').Properties.Environment.Variables;
    expect(inference.STEPWISE_DAILY_MAX_USD).toBe('50');
    expect(inference.STEPWISE_DEFAULT_RUN_MAX_USD).toBeUndefined();
  });

  it('lets inference copy run costs into the daily spend and sum it, the intake and the API only sum it, and no other function touch it', () => {
    expect(spendActions(template, 'InferenceRole')).toEqual(['dynamodb:Query', 'dynamodb:UpdateItem']);
    expect(spendActions(template, 'FrontDoorApiRole')).toEqual(['dynamodb:Query']);
    expect(spendActions(template, 'FrontDoorIntakeRole')).toEqual(['dynamodb:Query']);
    // POST /agui starts runs too.
    expect(spendActions(template, 'LiveStreamRole')).toEqual(['dynamodb:Query']);
    for (const role of ['ToolRole', 'ApprovalRole', 'ExecutionEndedFunctionRole']) expect(spendActions(template, role)).toEqual([]);
  });

  it('grants nothing on the daily spend without a daily limit', () => {
    const plain = stepwiseStack().template;
    for (const role of ['InferenceRole', 'FrontDoorApiRole', 'FrontDoorIntakeRole', 'LiveStreamRole']) expect(spendActions(plain, role)).toEqual([]);
  });

  it('lets the daily counters expire: the table’s TTL attribute is the one they set', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true } });
  });

  it('stays clean under cdk-nag', () => {
    expect(violations).toEqual([]);
  });

  it.each([
    [{ dailyMaxUsdPerCaller: 0 }, 'budgets.dailyMaxUsdPerCaller must be a positive number, not 0.'],
    [{ defaultRunMaxTokens: 1.5 }, 'budgets.defaultRunMaxTokens must be a positive whole number, not 1.5.'],
    [{ defaultRunMaxUsd: -1 }, 'budgets.defaultRunMaxUsd must be a positive number, not -1.'],
  ])('refuses %j at synth', (bad, message) => {
    expect(() => synthesize((app) => new StepwiseStack(app, 'Bad', { budgets: bad }))).toThrow(message);
  });
});
