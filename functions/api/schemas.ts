/**
 * Every body, query and answer of the HTTP API as zod schemas: the router validates with them
 * and `GET /openapi.json` is generated from the routes declared with them (habit 2, docs/code-habits.md).
 */
import * as z from 'zod';
import { DecisionBody, DecisionRecorded, DecisionView, WaitingFor } from '../core/approvals/types.js';
import { AgentName } from '../core/agents/types.js';
import type { AgentSummary as CatalogSummary } from '../core/definitions/catalog.js';
import { WorkflowStep } from '../core/definitions/types.js';
import { CreateRunBody } from '../core/intake/request.js';
import { ContentBlock, Role, Usage } from '../core/model/messages.js';
import { Phase, Run, RunStatus, RunSummary } from '../core/runs/types.js';

export { CreateRunBody, DecisionBody, DecisionRecorded, Run };

/** A run as `GET /runs/{runId}` answers: the record, and the tool calls waiting for a decision. */
export const RunView = Run.extend({
  waitingFor: z.array(WaitingFor).meta({ description: 'Tool calls waiting for a reviewer; empty unless the run is running.' }),
  decisions: z.array(DecisionView).meta({ description: 'Tool calls decided so far, with who decided.' }),
}).meta({ id: 'Run' });
export type RunView = z.infer<typeof RunView>;

export const ToolUseId = z
  .string()
  .min(1)
  .max(256)
  .meta({ description: 'The id of the tool call, as `waitingFor` and the transcript show it.', example: 'toolu_01A09q90qw90lq917835lq9' });

export const RunId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,80}$/, 'must be 1-80 letters, digits, "_" or "-"')
  .meta({ description: 'The run id that POST /runs returned.', example: '51d1d0ba-0484-43bf-8faf-feb9881e5080' });

/** The query of `GET /runs`. */
export const RunsQuery = z
  .object({
    status: RunStatus.optional().meta({ description: 'Only runs with this status.' }),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z.string().max(4096).optional().meta({ description: 'The `nextCursor` of the previous page.' }),
    scope: z.enum(['mine', 'tenant']).default('mine').meta({ description: '`tenant`: every run of your tenant (reviewers and admins).' }),
  })
  .strict();

export const RunsPage = z
  .object({ items: z.array(RunSummary), nextCursor: z.string().optional() })
  .meta({ id: 'RunsPage', description: 'One page of runs, newest first.' });

export const Traceparent = z
  .string()
  .max(256)
  .meta({
    description: "The caller's W3C trace context: the run's trace is a child of its span (docs/traces.md). A malformed one is ignored, as the W3C spec says.",
    example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  });

export const IdempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'must be 1-255 printable ASCII characters')
  .meta({ description: 'Repeats of the same key and body within 24 hours return the same run.' });

export const Accepted = z
  .object({ runId: z.string(), status: RunStatus, phase: Phase })
  .meta({ id: 'Accepted', description: 'The run was created (or already existed) and is on its way.' });

export const MessagesQuery = z
  .object({
    agent: AgentName.optional().meta({ description: 'Only this agent\'s messages; all of the run\'s agents by default.' }),
    cursor: z.string().regex(/^\d{1,10}$/, 'must be a cursor from a previous page').optional(),
  })
  .strict();
export type MessagesQuery = z.infer<typeof MessagesQuery>;

export const MessagesPage = z
  .object({
    items: z.array(
      z.object({
        seq: z.number().int(),
        agent: AgentName,
        role: Role,
        content: z.array(ContentBlock),
        /** An answer's model call: when it began, how long it took, the model and its tokens (the console's timeline; docs/traces.md). */
        call: z
          .object({ startedAt: z.string(), ms: z.number().nonnegative(), model: z.string().optional(), usage: Usage.optional() })
          .optional()
          .meta({ description: "An answer's model call: when it began, how many milliseconds it took, the model that answered and its tokens." }),
      }),
    ),
    nextCursor: z.string().optional(),
  })
  .meta({ id: 'MessagesPage' });
export type MessagesPage = z.infer<typeof MessagesPage>;

export const FilesPage = z
  .object({ items: z.array(z.object({ path: z.string(), size: z.number().int() })), truncated: z.boolean().optional() })
  .meta({ id: 'FilesPage' });

/** One agent or workflow of the deployment, as `GET /agents` lists it (the catalog's `summaries()`). */
export const AgentSummary = z
  .object({
    name: z.string().meta({ description: 'What `POST /runs` names as `agent` or `workflow`.' }),
    kind: z.enum(['agent', 'workflow']),
    description: z.string(),
    version: z.string().meta({ description: 'A content hash of the definition: it changes when the definition does.', example: '3f9c2a61b0de' }),
    tools: z.array(z.string()).meta({ description: "An agent's tools, as its definition names them; empty for a workflow." }),
    model: z.string().optional().meta({ description: "The agent's model; the deployment's (or the run's) when absent." }),
    builtin: z.boolean().meta({ description: 'One of the built-ins: `assistant` (`mode: "single"`), `architect`, `coder`, `plan-and-build` (`mode: "multi"`).' }),
    steps: z.array(WorkflowStep).optional().meta({ description: "A workflow's steps: agent names, or `{ parallel: [...] }`." }),
  })
  .meta({ id: 'AgentSummary' });
export type AgentSummary = z.infer<typeof AgentSummary>;

export const AgentsPage = z
  .object({ items: z.array(AgentSummary) })
  .meta({ id: 'AgentsPage', description: "The deployment's agents (the built-ins first), then its workflows." });

// The schema describes what the catalog lists: a field added to one and not the other fails here.
const sameSummary: [AgentSummary, CatalogSummary] extends [CatalogSummary, AgentSummary] ? true : never = true;
void sameSummary;

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBody>;

export const Health = z.object({ ok: z.literal(true) });
