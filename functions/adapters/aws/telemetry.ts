/**
 * Structured logs and metrics of the Lambda functions, with Powertools for AWS Lambda: one Logger
 * and one Metrics per module (so per Lambda), keys and metrics scoped to one invocation. The core
 * knows nothing of them; handlers wrap their one core call in `instrumented`.
 *
 * Local runs: `POWERTOOLS_LOG_LEVEL` and `POWERTOOLS_METRICS_DISABLED` (or `POWERTOOLS_DEV`) are
 * read when the module loads; the local stack sets quiet defaults for both.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import * as z from 'zod';
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
  for (const [key, value] of Object.entries(keys)) if (key !== 'agent' && key !== 'tool') metrics.addMetadata(key, String(value));
  try {
    return await work();
  } catch (error) {
    logger.error('Invocation failed', error as Error);
    throw error;
  } finally {
    flushMetrics();
    logger.resetKeys();
  }
}

/**
 * Writes the invocation's metrics as one EMF line, if it recorded any (an empty flush only
 * warns); either way nothing of this invocation is left for the next.
 */
export function flushMetrics(): void {
  if (metrics.hasStoredMetrics()) return void metrics.publishStoredMetrics();
  metrics.clearDimensions();
  metrics.clearMetadata();
}

/** Counts one event. */
export function count(name: string, value = 1): void {
  metrics.addMetric(name, MetricUnit.Count, value);
}

/** Sets the invocation's metric dimensions (cleared by the flush). */
export function dimensions(values: Partial<Record<keyof typeof metricDimensions, string>>): void {
  for (const [key, value] of Object.entries(values)) if (value) metrics.addDimension(key, value);
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
