/**
 * Lambda: the steps of a deployed eval (docs/evals.md, "Deployed"), called by the evals state
 * machine with `{ step, … }`: start a case's run, start its judges, judge it, record a case that
 * errored, write the report, or mark the eval failed.
 */
import * as z from 'zod';
import { failEval, finishCase, recordCaseError, startCase, startJudges, writeReport } from '../core/evals/case-steps.js';
import { instrumented } from '../adapters/aws/telemetry.js';
import { evalStepWiring } from '../wiring/evals.js';
import { wire } from '../wiring/wire.js';

const deps = evalStepWiring(wire(process.env));

const Owner = z.object({ principal: z.string().min(1), tenant: z.string().optional() });
const Failure = z.object({ Error: z.string().optional(), Cause: z.string().optional() }).optional();
const Case = { evalId: z.string().min(1), index: z.number().int().nonnegative(), owner: Owner };
const Eval = { evalId: z.string().min(1), owner: Owner };

/** The event of each step, as the state machine's payloads name them. */
export const EvalStepEvent = z.discriminatedUnion('step', [
  z.object({ step: z.literal('startCase'), ...Case }),
  z.object({ step: z.literal('startJudges'), ...Case }),
  z.object({ step: z.literal('finishCase'), ...Case }),
  z.object({ step: z.literal('caseError'), ...Case, failure: Failure }),
  z.object({ step: z.literal('report'), ...Eval }),
  z.object({ step: z.literal('failEval'), ...Eval, failure: Failure }),
]);

export async function handler(event: unknown): Promise<unknown> {
  return instrumented({}, async () => {
    const e = EvalStepEvent.parse(event);
    switch (e.step) {
      case 'startCase':
        return startCase(e, deps);
      case 'startJudges':
        return startJudges(e, deps);
      case 'finishCase':
        return finishCase(e, deps);
      case 'caseError':
        return recordCaseError(e, deps);
      case 'report':
        return writeReport(e, deps);
      case 'failEval':
        return failEval(e, deps);
    }
  });
}
