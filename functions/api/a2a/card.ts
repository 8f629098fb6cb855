/**
 * The A2A agent card of a deployment (docs/a2a.md, "The agent card"): one skill per agent and
 * workflow a run may name, the JSON-RPC interface, and how callers authenticate there.
 */
import { type AgentCard, type AgentSkill, type SecurityRequirement, type SecurityScheme } from '@a2a-js/sdk';
import { createHash } from 'node:crypto';
import type { AgentSummary } from '../../core/definitions/catalog.js';
import { workflowOnlyAgents } from '../../core/definitions/definition.js';

/** How callers authenticate at the JSON-RPC interface: the deployment's auth, or the local server's optional bearer token. */
export type CardAuth = 'iam' | 'jwt' | 'local';

/** What the A2A routes need to know of the deployment: how callers authenticate, and where the JSON-RPC interface is. */
export interface A2ASettings {
  auth: CardAuth;
  /** The JSON-RPC interface's URL (deployed: the stream URL's `/a2a`); the request's own origin's `/a2a` when absent. */
  url?: string;
}

/** The A2A protocol version the interface speaks (`@a2a-js/sdk` 1.x). */
export const a2aProtocolVersion = '1.0';

/** What the card says about a deployment. */
export interface CardSettings {
  /** The deployment's agents and workflows, as `GET /agents` lists them. */
  agents: AgentSummary[];
  /** The JSON-RPC interface's absolute URL. */
  url: string;
  auth: CardAuth;
}

/** The skill of one agent or workflow: picked by naming it in the message's metadata (or a data part). */
function skillOf(summary: AgentSummary): AgentSkill {
  const pick = summary.kind === 'workflow' ? `{ "workflow": "${summary.name}" }` : `{ "agent": "${summary.name}" }`;
  const fallback = summary.name === 'assistant' ? ' The skill of a message that names none.' : '';
  return {
    id: summary.name,
    name: summary.name,
    description: `${summary.description} (send the message with metadata ${pick}.${fallback})`,
    tags: [summary.kind, ...(summary.builtin ? ['builtin'] : []), ...summary.tools],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  };
}

/** The card's security: SigV4 under IAM auth, a bearer JWT under JWT auth; locally a bearer token of the local issuer, or none (the caller `local`). */
function securityOf(auth: CardAuth): { securitySchemes: Record<string, SecurityScheme>; securityRequirements: SecurityRequirement[] } {
  const required = (name: string): SecurityRequirement => ({ schemes: { [name]: { list: [] } } });
  if (auth === 'iam') {
    const sigv4: SecurityScheme = {
      scheme: {
        $case: 'httpAuthSecurityScheme',
        value: {
          scheme: 'AWS4-HMAC-SHA256',
          bearerFormat: '',
          description: "AWS Signature Version 4 of an IAM principal allowed by the deployment's caller policy (service `lambda` at the stream URL, `execute-api` at the HTTP API).",
        },
      },
    };
    return { securitySchemes: { sigv4 }, securityRequirements: [required('sigv4')] };
  }
  const bearer: SecurityScheme = {
    scheme: {
      $case: 'httpAuthSecurityScheme',
      value: {
        scheme: 'Bearer',
        bearerFormat: 'JWT',
        description: auth === 'jwt' ? "A token of the deployment's issuer, for one of its audiences." : 'A token of the local issuer (`stepwise token`); without one the caller is `local`.',
      },
    },
  };
  return { securitySchemes: { bearer }, securityRequirements: auth === 'jwt' ? [required('bearer')] : [{ schemes: {} }, required('bearer')] };
}

/**
 * The card: one skill per agent and workflow a run may name (the Architect and the Coder work
 * only inside `plan-and-build`), the JSON-RPC interface at `url`, streaming, no push
 * notifications. Its version is a hash of the skills' versions: it changes when an agent does.
 */
export function agentCard(settings: CardSettings): AgentCard {
  const runnable = settings.agents.filter((summary) => !(summary.kind === 'agent' && workflowOnlyAgents.includes(summary.name)));
  const version = createHash('sha256')
    .update(runnable.map((summary) => `${summary.name}@${summary.version}`).join('\n'))
    .digest('hex')
    .slice(0, 12);
  return {
    name: 'Stepwise',
    description: 'Tool-using LLM agents on AWS. A task is a run of one of the skills below: its text parts are the goal, its context the conversation it continues.',
    supportedInterfaces: [{ url: settings.url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: a2aProtocolVersion }],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    ...securityOf(settings.auth),
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: runnable.map(skillOf),
    signatures: [],
  };
}
