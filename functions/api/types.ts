/** What the HTTP API is built on: its dependencies, as the composition root hands them over. */
import type { ApprovalStore, TaskTokens } from '../core/approvals/types.js';
import type { AccessPolicy } from '../core/callers/types.js';
import type { ConversationStore } from '../core/conversation/types.js';
import type { StartEvalDeps } from '../core/evals/deployed.js';
import type { AgentCatalog } from '../core/definitions/catalog.js';
import type { ForkCopies } from '../core/fork/types.js';
import type { IntakeDeps } from '../core/intake/types.js';
import type { RunStore } from '../core/runs/types.js';
import type { ScheduleTrigger } from '../core/schedules/types.js';
import type { ToolCatalogStore } from '../core/tools/external/types.js';
import type { Workspace } from '../core/workspace/types.js';
import type { A2ASettings } from './a2a/card.js';
import type { MemoryStore } from '../core/memory/types.js';
import type { Authenticate } from './callers.js';
import type { ErrorLog } from './errors.js';
import type { McpWaitSettings } from './mcp-tools.js';
import type { StreamDeps } from './stream.js';

export interface ApiDeps extends IntakeDeps, StreamDeps {
  /** The deployment's agents and workflows: what bodies may name, and what `GET /agents` lists; the built-ins only when absent. */
  agents?: AgentCatalog;
  runs: RunStore;
  conversations: ConversationStore;
  workspaceFor(runId: string): Workspace;
  /** Memory scopes by key prefix (`GET|DELETE /memories`); the memory routes fail without it. */
  memoryFor?(prefix: string): MemoryStore;
  /** Copies a fork's conversation and workspace (`POST /runs/{runId}/fork`). */
  forks: ForkCopies;
  approvals: ApprovalStore;
  /** Wakes a run that waits for a decision. */
  tokens: TaskTokens;
  /** Runs' external tool catalogs: the schemas a reviewer's edited input of an MCP or Lambda tool is checked against. */
  catalogs?: Pick<ToolCatalogStore, 'getCatalog'>;
  /** Who is calling: read once per request, before any run is looked at. */
  authenticate: Authenticate;
  /** Deployment settings of who may do what (`separateReviewer`). */
  access?: AccessPolicy;
  /** Where unexpected errors are reported (the function's structured logger); stderr when absent. */
  log?: ErrorLog;
  /** Deployed evals (`/evals`): none when the deployment has no evals state machine (501). */
  evals?: StartEvalDeps;
  /** A short-lived link to a run's file, for files too large for a response; without it they are refused (413). */
  fileLinks?: (runId: string, path: string) => Promise<string>;
  /** What the A2A agent card says of callers' auth and the JSON-RPC URL (docs/a2a.md); the local server's (an optional bearer token, this origin) when absent. */
  a2a?: A2ASettings;
  /** What fires schedules (EventBridge Scheduler, or the dev runtime's); without it and `schedules`, the schedule routes answer 501. */
  scheduleTrigger?: ScheduleTrigger;
  /** The most schedules one caller may have. @default 100 */
  maxSchedulesPerCaller?: number;
  /** How long the MCP tool `start_run` with `wait` follows a run (docs/mcp.md). */
  mcp?: McpWaitSettings;
}
