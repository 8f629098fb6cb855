/**
 * The names of what Stepwise measures: the contract between the functions that emit the metrics
 * (as CloudWatch embedded metric format) and the dashboard and alarms that read them.
 */

/** The CloudWatch namespace of every Stepwise metric. */
export const metricsNamespace = 'Stepwise';

/** The `service` of every log line and the default metric dimension. */
export const serviceName = 'stepwise';

/** Metric names; all are counts. */
export const metricNames = {
  /** A run was created (intake: the API or an event); a repeated request counts nothing. Dimension: mode. */
  runsStarted: 'RunsStarted',
  /**
   * A run was marked failed because its orchestrator execution ended outside its own states
   * (stopped outside Stepwise, timed out, failed uncaught). Dimension: status (`ABORTED`,
   * `TIMED_OUT`, `FAILED`). A cancel through Stepwise is not counted: the run says cancelled first.
   */
  runsInterrupted: 'RunsInterrupted',
  /** An inference step finished (one model turn stored). Dimension: agent. */
  iterations: 'Iterations',
  /** A tool step finished. Dimensions: agent, tool. */
  toolCalls: 'ToolCalls',
  /** A tool step finished with an `is_error` result (0 otherwise). Dimensions: agent, tool. */
  toolErrors: 'ToolErrors',
  /** Tokens of the model calls an inference step made. Dimension: agent. */
  inputTokens: 'InputTokens',
  outputTokens: 'OutputTokens',
  cacheReadInputTokens: 'CacheReadInputTokens',
  cacheCreationInputTokens: 'CacheCreationInputTokens',
} as const;

/**
 * Metric dimensions. Kept low-cardinality on purpose: never a run id (each distinct value is a
 * billed custom metric), and a tool name only when the agent has such a tool.
 */
export const metricDimensions = { service: 'service', agent: 'agent', tool: 'tool', mode: 'mode', status: 'status' } as const;

/** The `tool` dimension of a call of a tool the agent does not have (the model made the name up). */
export const otherTool = 'other';
