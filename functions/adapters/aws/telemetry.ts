/**
 * Structured logs and metrics of the Lambda functions, with Powertools for AWS Lambda: one Logger
 * and one Metrics per module (so per Lambda), keys and metrics scoped to one invocation. The core
 * knows nothing of them; handlers wrap their one core call in `instrumented`.
 *
 * Local runs: `POWERTOOLS_LOG_LEVEL` and `POWERTOOLS_METRICS_DISABLED` (or `POWERTOOLS_DEV`) are
 * read when the module loads; the local stack sets quiet defaults for both.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import * as z from 'zod';
import { StepwiseError } from '../../core/errors/errors.js';
import type { ModelProvider } from '../../core/model/types.js';
import type { Usage } from '../../core/model/messages.js';
import { type metricDimensions, metricNames, metricsNamespace, serviceName } from '../../core/telemetry/metrics.js';

export const logger = new Logger({ serviceName });
export const metrics = new Metrics({ namespace: metricsNamespace, serviceName });

/** What every log line of one step carries, read leniently from the raw event (before validation). */
const StepKeys = z.object({
  runId: z.string().min(1).optional().catch(undefined),
  agent: z.string().min(1).optional().catch(undefined),
  iteration: z.number().int().nonnegative().optional().catch(undefined),
  toolUseId: z.string().min(1).optional().catch(undefined),
  /** The tool's name, as the state machine passes it with the call. */
  name: z.string().min(1).optional().catch(undefined),
});

export interface LogKeys {
  runId?: string;
  agent?: string;
  iteration?: number;
  toolUseId?: string;
  tool?: string;
}

/** The log keys of a step event: `runId`, `agent`, `iteration`, and for a tool call `toolUseId` and `tool`. */
export function stepKeys(event: unknown): LogKeys {
  const parsed = StepKeys.safeParse(event);
  if (!parsed.success) return {};
  const { name, ...keys } = parsed.data;
  const all: LogKeys = { ...keys, ...(name ? { tool: name } : {}) };
  return Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined)) as LogKeys;
}

/** What one invocation measured, kept apart from any other invocation's until its one EMF line is written. */
interface Measured {
  dimensions: Record<string, string>;
  metadata: Record<string, string>;
  counts: [name: string, value: number][];
}

/**
 * The measures of the invocation at hand. Invocations of one module can overlap in one process
 * (the local runtime runs a turn's parallel tool calls side by side, as Lambda managed instances
 * do), and Powertools' buffer is the module's: recorded straight into it, one invocation's
 * dimension would land on another's line, with a `Dimension "agent" has already been added`
 * warning for each.
 */
const current = new AsyncLocalStorage<Measured>();
/** Where measures go outside `instrumented` (a handler that flushes by itself). */
const outside: Measured = { dimensions: {}, metadata: {}, counts: [] };
const measures = (): Measured => current.getStore() ?? outside;

/**
 * Runs one invocation with `keys` on every log line it writes and flushes its metrics when it
 * ends, thrown or not. The keys are cleared afterwards: Lambda reuses the module for the next
 * invocation. (One invocation at a time per module, as in Lambda; on Lambda managed instances
 * Powertools keeps keys per invocation itself.)
 */
export async function instrumented<T>(keys: LogKeys, work: () => Promise<T>): Promise<T> {
  logger.resetKeys();
  logger.appendKeys({ ...keys });
  // The metric line carries the run's ids as metadata: searchable, never a dimension.
  const metadata = Object.fromEntries(Object.entries(keys).filter(([key]) => key !== 'agent' && key !== 'tool').map(([key, value]) => [key, String(value)]));
  return current.run({ dimensions: {}, metadata, counts: [] }, async () => {
    try {
      return await work();
    } catch (error) {
      const named = described(error);
      if (named) logger.error('Invocation failed', named);
      else logger.error('Invocation failed', error as Error);
      throw error;
    } finally {
      flushMetrics();
      logger.resetKeys();
    }
  });
}

/**
 * A named error of Stepwise as a log line takes it: by name, message and cause, without a stack
 * (its name and message say what happened, and a transient one is logged at every retry).
 * Anything else, a bug, is logged whole.
 */
function described(error: unknown): { error: Record<string, unknown> } | undefined {
  if (!(error instanceof StepwiseError)) return undefined;
  const { cause } = error;
  return {
    error: {
      name: error.name,
      message: error.message,
      ...(cause instanceof Error ? { cause: { name: cause.name, message: cause.message } } : cause !== undefined ? { cause: String(cause) } : {}),
    },
  };
}

/**
 * Writes the invocation's metrics as one EMF line, if it recorded any (an empty flush only
 * warns); either way nothing of this invocation is left for the next. The buffer is filled and
 * written in one synchronous go, so no other invocation's measures come between.
 */
export function flushMetrics(): void {
  const measured = measures();
  const { dimensions: named, metadata, counts } = { ...measured };
  Object.assign(measured, { dimensions: {}, metadata: {}, counts: [] });
  metrics.clearMetrics();
  metrics.clearDimensions();
  metrics.clearMetadata();
  if (!counts.length) return;
  for (const [key, value] of Object.entries(named)) metrics.addDimension(key, value);
  for (const [key, value] of Object.entries(metadata)) metrics.addMetadata(key, value);
  for (const [name, value] of counts) metrics.addMetric(name, MetricUnit.Count, value);
  metrics.publishStoredMetrics();
}

/** Counts one event. */
export function count(name: string, value = 1): void {
  measures().counts.push([name, value]);
}

/** Sets the invocation's metric dimensions (cleared by the flush); a dimension set again takes the later value. */
export function dimensions(values: Partial<Record<keyof typeof metricDimensions, string>>): void {
  const measured = measures();
  for (const [key, value] of Object.entries(values)) if (value) measured.dimensions[key] = value;
}

/** Records the tokens of one model call. */
export function countTokens(usage: Usage): void {
  count(metricNames.inputTokens, usage.inputTokens);
  count(metricNames.outputTokens, usage.outputTokens);
  count(metricNames.cacheReadInputTokens, usage.cacheReadInputTokens);
  count(metricNames.cacheCreationInputTokens, usage.cacheCreationInputTokens);
}

/**
 * The model, reporting the usage of every call it answers: the tokens actually spent, compaction
 * summaries included, and none for a retried step that returns its stored answer.
 */
export function meteredModel(model: ModelProvider, onUsage: (usage: Usage) => void): ModelProvider {
  return {
    async generate(request) {
      const response = await model.generate(request);
      onUsage(response.usage);
      return response;
    },
  };
}
