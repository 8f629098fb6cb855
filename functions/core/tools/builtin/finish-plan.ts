import { Plan } from '../../plan/types.js';
import { ToolFailure } from '../types.js';
import { defineTool } from '../registry.js';

/**
 * The Architect's last act: hands over the plan. An invalid plan is a tool error naming each
 * wrong field, so the model can correct it; a valid one is stored on the run.
 */
export const finishPlan = defineTool({
  name: 'finish_plan',
  description:
    'Submit the finished implementation plan for the Coder. Call it exactly once, when the plan is complete: ' +
    'a precise goal and an ordered list of steps, each with a description, an action and, where useful, parameters ' +
    '(such as the file path). After a valid plan is accepted your work is done.',
  input: Plan,
  async run(plan, ctx) {
    if (!ctx.plans) throw new ToolFailure('plans cannot be stored in this context.');
    await ctx.plans.savePlan(ctx.runId, plan);
    return `Plan accepted: ${plan.steps.length} step${plan.steps.length === 1 ? '' : 's'}. The Coder will carry it out.`;
  },
});
