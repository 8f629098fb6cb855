#!/usr/bin/env node
/** The CDK app: `npx cdk synth` / `npx cdk deploy`. Settings come from `cdk.json` context. */
import { readFileSync } from 'node:fs';
import { App, Duration, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { AgentDefinitionConfig, WorkflowDefinitionConfig } from '../lib/agent-definitions.js';
import type { McpServerConfig } from '../lib/external-tools.js';
import type { ApiAuth, BudgetProps, CallerSettings } from '../lib/front-door.js';
import { type ConsoleSettings, StepwiseStack } from '../lib/stepwise-stack.js';

const app = new App();
const context = (key: string) => app.node.tryGetContext(`stepwise:${key}`) as string | number | string[] | undefined;
const providers = ['anthropic', 'bedrock', 'scripted'] as const;
const provider = providers.find((p) => p === String(context('provider') ?? 'anthropic'));
if (!provider) throw new Error(`stepwise:provider must be one of ${providers.join(', ')}, not "${String(context('provider'))}".`);
// A JSON list in cdk.json, or a comma-separated one on the command line (-c stepwise:allowedModels=a,b).
const allowed = context('allowedModels') ?? [];
// The web console: {} (on, the default in cdk.json), { "cognito": { "domainPrefix": "…" } } for a user
// pool to sign in with, { "oidc": { "clientId": "…" } } under your own JWT issuer, or false (off).
const consoleContext = app.node.tryGetContext('stepwise:console') as ConsoleSettings | false | 'false' | undefined;
const consoleSetting = consoleContext === false || consoleContext === 'false' ? undefined : consoleContext;
/**
 * A JSON setting: as written in cdk.json, or its JSON text (or `@<file>` of it) on the command line
 * (-c stepwise:agents=@agents.json). The construct checks what it holds.
 */
function jsonContext(key: string): unknown {
  const value: unknown = app.node.tryGetContext(`stepwise:${key}`);
  if (typeof value !== 'string') return value;
  const file = value.startsWith('@') ? value.slice(1) : undefined;
  try {
    return JSON.parse(file ? readFileSync(file, 'utf8') : value) as unknown;
  } catch (error) {
    throw new Error(`stepwise:${key}: ${file ? `${file}: ` : ''}${error instanceof Error ? error.message : String(error)}`);
  }
}
new StepwiseStack(app, 'Stepwise', {
  provider,
  model: String(context('model') ?? 'claude-sonnet-4-5'),
  allowedModels: (Array.isArray(allowed) ? allowed : String(allowed).split(',')).map((m) => String(m).trim()).filter(Boolean),
  maxTokens: Number(context('maxTokens') ?? 8192),
  contextWindowTokens: Number(context('contextWindowTokens') ?? 200_000),
  // { "type": "iam", "reviewerArns"?: [...], "adminArns"?: [...] } (default) or
  // { "type": "jwt", "issuer": "...", "audience": ["..."], "tenantClaim"?: "custom:tenant", "jwksUri"?: "..." }.
  auth: (app.node.tryGetContext('stepwise:auth') as ApiAuth | undefined) ?? { type: 'iam' },
  // { "separateReviewer"?: true, "maxRunningRunsPerCaller"?: 5,
  //   "trustedSources"?: [{ "source": "app.portal", "principals": ["arn:aws:iam::111122223333:role/Portal"] }] }.
  callers: (app.node.tryGetContext('stepwise:callers') as CallerSettings | undefined) ?? {},
  // { "defaultRunMaxUsd"?: 2, "defaultRunMaxTokens"?: 2000000, "dailyMaxUsdPerCaller"?: 50 }.
  budgets: (app.node.tryGetContext('stepwise:budgets') as BudgetProps | undefined) ?? {},
  // Tools whose calls wait for a reviewer in every run, and how long a call waits (seconds).
  approvalTools: (app.node.tryGetContext('stepwise:approvalTools') as string[] | undefined) ?? [],
  approvalTimeout: Duration.seconds(Number(context('approvalTimeout') ?? 86_400)),
  // An egress call of a run that has read untrusted content waits for a reviewer unless this is false.
  reviewEgressAfterUntrusted: String(context('reviewEgressAfterUntrusted') ?? true) !== 'false',
  // The longest a run may take (seconds); by default a day plus the approval timeout.
  ...(context('runTimeout') ? { runTimeout: Duration.seconds(Number(context('runTimeout'))) } : {}),
  // Remote MCP servers: [{ "name": "docs", "url": "https://…/mcp", "agents"?: ["single", "coder"] }].
  mcpServers: (app.node.tryGetContext('stepwise:mcpServers') as McpServerConfig[] | undefined) ?? [],
  // Your agents [{ "name", "description", "instructions", "tools"?, "model"?, … }] and workflows
  // [{ "name", "description", "steps": ["<agent>", { "parallel": ["<agent>", …] }] }], checked at synth.
  agents: (jsonContext('agents') as AgentDefinitionConfig[] | undefined) ?? [],
  workflows: (jsonContext('workflows') as WorkflowDefinitionConfig[] | undefined) ?? [],
  // The most event streams open at once (the stream function's reserved concurrency, 100 when unset;
  // "unreserved" for none), and per caller (10 when unset).
  ...(context('maxConcurrentStreams') ? { maxConcurrentStreams: context('maxConcurrentStreams') === 'unreserved' ? ('unreserved' as const) : Number(context('maxConcurrentStreams')) } : {}),
  ...(context('maxStreamsPerCaller') ? { maxStreamsPerCaller: Number(context('maxStreamsPerCaller')) } : {}),
  ...(consoleSetting ? { console: consoleSetting } : {}),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
