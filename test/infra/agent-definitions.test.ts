/**
 * A deployment's own agents and workflows (DESIGN §12): checked at synth with one line naming the
 * definition and field, bundled into the functions that start runs, graphed on the dashboard.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionConfig, WorkflowDefinitionConfig } from '../../lib/agent-definitions.js';
import { StepwiseAgents, type StepwiseAgentsProps } from '../../lib/stepwise-agents.js';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import type { FunctionResource } from '../support/template.js';

const triage: AgentDefinitionConfig = {
  name: 'triage',
  description: 'Sorts incoming issues by urgency.',
  instructions: 'Sort the issues you are given by urgency, most urgent first, and say why in one line each.',
  tools: ['calculator', 'agent:summarizer'],
};
const summarizer: AgentDefinitionConfig = { name: 'summarizer', description: 'Summarizes a text.', instructions: 'Summarize the text in three sentences.' };
const critic: AgentDefinitionConfig = { name: 'critic', description: 'Finds the weak points of a text.', instructions: 'List the weak points of the text.', tools: ['read_file'] };
const review: WorkflowDefinitionConfig = { name: 'review', description: 'A summary and a critique at once, then triage.', steps: [{ parallel: ['summarizer', 'critic'] }, 'triage'] };

/** The construct in a fresh stack (no bundling), for what must fail before anything is synthesized. */
function agentsWith(props: StepwiseAgentsProps): StepwiseAgents {
  return new StepwiseAgents(new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Mine'), 'Agents', props);
}

/** The message construction fails with, or `undefined`. */
function refusal(props: StepwiseAgentsProps): string | undefined {
  try {
    agentsWith(props);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

describe('StepwiseAgents with agents of your own, at synth', () => {
  it.each<[string, StepwiseAgentsProps, string]>([
    [
      'an unknown tool',
      { agents: [{ ...triage, tools: ['calculator', 'nope'] }] },
      'Stepwise agents: agent "triage": tools[1] "nope" is not a tool of this deployment (it has calculator, read_file, write_file, list_files, edit_file, and agent:<name>)',
    ],
    [
      'agents that call each other in a cycle',
      { agents: [triage, { ...summarizer, tools: ['agent:critic'] }, { ...critic, tools: ['agent:triage'] }] },
      'Stepwise agents: agents "triage" → "summarizer" → "critic" → "triage" call each other in a cycle',
    ],
    [
      'an agent that calls itself',
      { agents: [{ ...summarizer, tools: ['agent:summarizer'] }] },
      'Stepwise agents: agents "summarizer" → "summarizer" call each other in a cycle',
    ],
    [
      'an unknown agent',
      { agents: [triage] },
      'Stepwise agents: agent "triage": tools[1] "agent:summarizer" names no agent this deployment has (assistant, triage)',
    ],
    [
      'a model the deployment does not allow',
      { agents: [{ ...summarizer, model: 'claude-opus-4-1' }], allowedModels: ['claude-haiku-4-5'] },
      'Stepwise agents: agent "summarizer": model "claude-opus-4-1" is not one this deployment allows (claude-sonnet-4-5, claude-haiku-4-5)',
    ],
    [
      'an output schema that is no object',
      { agents: [{ ...summarizer, output: { schema: { type: 'string' } } }] },
      'Stepwise agents: agent "summarizer": output.schema: must describe an object: "type": "object" at the top (the answer is the input of a tool, which is an object)',
    ],
    ['a built-in\'s name', { agents: [{ ...summarizer, name: 'coder' }] }, 'Stepwise agents: agent "coder": name is taken by a built-in (assistant, architect, coder, plan-and-build, single, multi)'],
    ['a field the schema lacks', { agents: [{ ...summarizer, prompt: 'x' } as AgentDefinitionConfig] }, 'Stepwise agents: agents[0] ("summarizer"): (the definition): Unrecognized key: "prompt"'],
    [
      'a workflow step naming no agent',
      { agents: [summarizer], workflows: [{ ...review, steps: ['summarizer', 'triage'] }] },
      'Stepwise agents: workflow "review": steps[1] "triage" names no agent this deployment has (assistant, summarizer)',
    ],
  ])('refuses %s with one line naming the definition and field', (_case, props, message) => {
    expect(refusal(props)).toBe(message);
  });

  it('takes the tools of the deployment\'s MCP servers and Lambda functions, whole servers included', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Mine');
    const researcher = { ...summarizer, name: 'researcher', tools: ['docs__*', 'docs__search', 'word_count', 'agent:summarizer'] };
    const agents = new StepwiseAgents(stack, 'Agents', {
      mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }],
      tools: [{ name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' }, function: lambda.Function.fromFunctionName(stack, 'WordCount', 'word-count') }],
      agents: [researcher, summarizer],
    });
    expect(agents.agentPlaces).toEqual(['single', 'architect', 'coder', 'researcher', 'summarizer']);
    expect(refusal({ agents: [researcher, summarizer] })).toMatch(/^Stepwise agents: agent "researcher": tools\[0\] "docs__\*" is not a tool of this deployment/);
  });

  it('refuses definitions too long for the command line that bundles them, before esbuild would', () => {
    const long = (name: string) => ({ ...summarizer, name, instructions: 'x'.repeat(45_000) });
    expect(refusal({ agents: [long('a'), long('b'), long('c')] })).toMatch(
      /^Stepwise agents: the agents' definitions take \d+ bytes as the functions' bundling argument, over the 131071 one argument may hold: shorten their instructions$/,
    );
  });

  it('with none (cdk.json\'s empty lists) makes the template of a stack without them', () => {
    const template = (props: StepwiseAgentsProps) => synthesize((app) => new StepwiseStack(app, 'Stepwise', props)).template.toJSON();
    expect(template({ agents: [], workflows: [] })).toEqual(template({}));
  }, 120_000);
});

describe('cdk synth of the app (bin/app.ts)', () => {
  /** Runs the CDK app as `cdk synth` does, with `context` as the CLI hands it over. */
  function synth(context: Record<string, unknown>): Promise<{ code: number | null; stderr: string }> {
    const outdir = mkdtempSync(join(tmpdir(), 'stepwise-app-'));
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'bin/app.ts'], {
        env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [], ...context }) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('exit', (code) => {
        rmSync(outdir, { recursive: true, force: true });
        resolve({ code, stderr });
      });
    });
  }

  const line = 'Stepwise agents: agent "triage": tools[1] "nope" is not a tool of this deployment (it has calculator, read_file, write_file, list_files, edit_file, and agent:<name>)';

  it('fails on a definition of "stepwise:agents" in cdk.json, naming it', async () => {
    const { code, stderr } = await synth({ 'stepwise:agents': [{ ...triage, tools: ['calculator', 'nope'] }] });
    expect(code).not.toBe(0);
    expect(stderr).toContain(`AgentConfigInvalid: ${line}\n`);
  }, 60_000);

  it('fails on one in a file that -c stepwise:agents=@<path> names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-agents-'));
    try {
      writeFileSync(join(dir, 'agents.json'), JSON.stringify([{ ...triage, tools: ['calculator', 'nope'] }]));
      const { code, stderr } = await synth({ 'stepwise:agents': `@${join(dir, 'agents.json')}` });
      expect(code).not.toBe(0);
      expect(stderr).toContain(`AgentConfigInvalid: ${line}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('StepwiseAgents with agents of your own, deployed', () => {
  /** Each function's bundled code, by handler, as `cdk synth` writes it. */
  let code: Record<string, string>;
  let dashboard: string;
  /** The inference role's S3 actions on run objects (runs/*: goals too long for their record). */
  let inferenceRunObjects: string[];

  beforeAll(() => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepwise-bundles-'));
    try {
      const app = new App({ outdir });
      const stack = new StepwiseStack(app, 'Agents', { agents: [triage, summarizer, critic], workflows: [review] });
      app.synth();
      const template = JSON.parse(readFileSync(join(outdir, stack.templateFile), 'utf8')) as { Resources: Record<string, FunctionResource & { Type: string }> };
      const resources = Object.values(template.Resources);
      code = Object.fromEntries(
        resources
          .filter((r) => r.Type === 'AWS::Lambda::Function' && typeof r.Properties.Environment.Variables.STEPWISE_HANDLER === 'string')
          .map((r) => {
            const asset = String((r.Properties.Code as { S3Key: string }).S3Key).replace(/\.zip$/, '');
            return [String(r.Properties.Environment.Variables.STEPWISE_HANDLER), readFileSync(join(outdir, `asset.${asset}`, 'index.mjs'), 'utf8')];
          }),
      );
      dashboard = JSON.stringify(resources.find((r) => r.Type === 'AWS::CloudWatch::Dashboard')?.Properties);
      const policies = Object.entries(template.Resources).filter(([id, r]) => r.Type === 'AWS::IAM::Policy' && id.startsWith('InferenceRoleDefaultPolicy'));
      inferenceRunObjects = policies
        .flatMap(([, r]) => (r.Properties as unknown as { PolicyDocument: { Statement: { Action: string | string[]; Resource?: unknown }[] } }).PolicyDocument.Statement)
        .filter((st) => JSON.stringify(st.Resource ?? {}).includes('/runs/*'))
        .flatMap((st) => [st.Action].flat())
        .sort();
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 240_000);

  it('bundles the definitions into the code of the functions that start runs, and of no other', () => {
    const carries = (text: string) => Object.keys(code).filter((handler) => code[handler]?.includes(text)).sort();
    // esbuild writes each define as a string literal of the definitions' JSON.
    // The eval steps start runs too (a deployed eval's cases, as the intake does).
    expect(carries(triage.instructions)).toEqual(['api', 'eval-step', 'run-requested', 'stream']);
    expect(carries(review.description)).toEqual(['api', 'eval-step', 'run-requested', 'stream']);
    expect(Object.keys(code).sort()).toEqual(['api', 'approval', 'eval-step', 'execution-ended', 'inference', 'run-requested', 'stream', 'tool']);
  });

  it('lets the inference step write a run\'s long goal when an agent calls agents (it makes each child run)', () => {
    expect(inferenceRunObjects).toEqual(['s3:GetObject', 's3:PutObject']);
  });

  it('graphs the iterations and tokens of each of its agents beside the built-ins\'', () => {
    for (const agent of ['single', 'architect', 'coder', 'triage', 'summarizer', 'critic']) {
      expect(dashboard).toContain(`\\"Stepwise\\",\\"Iterations\\",\\"agent\\",\\"${agent}\\",\\"service\\",\\"stepwise\\"`);
      expect(dashboard).toContain(`\\"Stepwise\\",\\"InputTokens\\",\\"agent\\",\\"${agent}\\",\\"service\\",\\"stepwise\\",{\\"label\\":\\"input · ${agent}\\"`);
    }
  });
});
