/**
 * The features of the two steps, in the order their hooks run at each point (docs/ARCHITECTURE.md,
 * "The step pipeline"). The order is part of the behaviour: the run's tools are
 * listed before the policy naming them is checked, the budget is checked before compaction makes a
 * summary call, compaction retries around live text (each retried call writes its own attempt), a
 * reviewer's note is added to a result before its size is capped, and an untrusted result is
 * marked last, so the cap never cuts off its closing tag. Traces wrap each model call innermost (one
 * `chat` span per call made) and see a tool's result as it is stored.
 */
import { approvalsFeature, approvalsToolFeature } from '../approvals/feature.js';
import { budgetsFeature } from '../budgets/feature.js';
import { childrenFeature } from '../children/feature.js';
import { compactionFeature } from '../compaction/feature.js';
import { liveFeature } from '../live/feature.js';
import { memoryFeature } from '../memory/feature.js';
import { outputFeature } from '../output/feature.js';
import { resultFeature } from '../result/feature.js';
import { externalToolsFeature } from '../tools/external/feature.js';
import { resultSizeFeature } from '../tools/feature.js';
import { tracesFeature, tracesToolFeature } from '../traces/feature.js';
import { untrustedRulesFeature, untrustedToolFeature } from '../untrusted/feature.js';
import type { InferenceFeature, ToolFeature } from './hooks.js';

/** The inference step's features. */
export const inferenceFeatures: readonly InferenceFeature[] = [
  externalToolsFeature,
  untrustedRulesFeature,
  memoryFeature,
  approvalsFeature,
  outputFeature,
  childrenFeature,
  budgetsFeature,
  compactionFeature,
  liveFeature,
  tracesFeature,
  resultFeature,
];

/** The tool step's features. */
export const toolFeatures: readonly ToolFeature[] = [approvalsToolFeature, resultSizeFeature, untrustedToolFeature, tracesToolFeature];
