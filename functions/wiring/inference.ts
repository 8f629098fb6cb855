/**
 * The inference Lambda's body, shared by its per-provider entries (inference.ts, inference-bedrock.ts): each
 * entry names the provider it bundles; logging, metrics and the step are the same.
 */
import { metricNames } from '../core/telemetry/metrics.js';
import { type InferenceResult, InferenceInput, type LoopBound } from '../core/steps/types.js';
import { loopInferenceStep } from '../core/steps/inference.js';
import { parseEvent } from '../core/steps/input.js';
import { count, countTokens, dimensions, instrumented, logger, meteredModel, stepKeys } from '../adapters/aws/telemetry.js';
import { listingSources } from './external.js';
import type { ProviderWiring } from './model.js';
import { otlpTraces } from './tracer.js';
import { wire } from './wire.js';

/** A Lambda handler running one inference step with the given model wiring, its tokens counted. */
export function inferenceHandler(model: ProviderWiring): (event: unknown) => Promise<InferenceResult | LoopBound> {
  const wiring = wire(process.env, { model: (env) => meteredModel(model(env), countTokens), externalTools: listingSources, traces: otlpTraces });
  // The step streams the answer into live text (wiring.liveText); a failed write is only logged.
  const deps = { ...wiring, livePolicy: { log: (message: string, detail: Record<string, unknown>) => logger.warn(message, detail) } };
  return async (event) => {
    try {
      return await step(event);
    } finally {
      // Lambda freezes the process once it answers: the step's spans go before (docs/traces.md).
      await wiring.traces.tracer.flush();
    }
  };

  function step(event: unknown): Promise<InferenceResult | LoopBound> {
    return instrumented(stepKeys(event), async () => {
      const input = parseEvent(InferenceInput, event);
      dimensions({ agent: input.agent });
      const result = await loopInferenceStep(input, deps);
      if (!('seq' in result)) {
        logger.info('The step is at a bound of the loop', { stopReason: result.stopReason });
        return result;
      }
      count(metricNames.iterations);
      logger.info('Inference step finished', { stopReason: result.stopReason, toolCalls: result.toolCalls.length, seq: result.seq });
      return result;
    });
  }
}
