/**
 * The local stack loads its state machines without checking them against the ASL schema (it
 * saves its start about a second); this checks them once, with the interpreter's own validator.
 */
import '../../local/polyfills.js';
import { Duration } from 'aws-cdk-lib';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import { inlineDistributedMaps } from '../../local/runtime/distributed-map.js';
import { localResources, localStateMachines } from '../../local/definitions.js';
import { localExternalToolProps, synthesizeTemplate } from '../../local/synth.js';

/** The state machines as the local stack loads them. */
function definitions(props: Parameters<typeof synthesizeTemplate>[0] = {}) {
  const template = synthesizeTemplate(props);
  return localStateMachines(template, localResources(template, { table: 'stepwise', bucket: 'stepwise-workspaces' }));
}

/** Loads a definition as the runtime does, with validation on. */
const load = (definition: Record<string, unknown>) =>
  new StateMachine(definition as unknown as StateMachineDefinition, { validationOptions: { checkArn: false, checkPaths: false } });

describe('the state machines the local stack runs', () => {
  it.each([
    ['the default stack', {}],
    ['a stack with approvals and a short approval timeout', { approvalTools: ['write_file'], approvalTimeout: Duration.seconds(30) }],
    [
      'a stack with agents and a workflow of its own',
      {
        agents: [
          { name: 'triage', description: 'Sorts issues.', instructions: 'Sort them.', tools: ['calculator', 'agent:summarizer'] },
          { name: 'summarizer', description: 'Summarizes.', instructions: 'Summarize.' },
        ],
        workflows: [{ name: 'review', description: 'Triage, then a summary.', steps: ['triage', 'summarizer'] }],
      },
    ],
  ])('are valid ASL for %s', (_name, props) => {
    const machines = definitions(props);
    expect(machines.map((m) => m.logicalId)).toEqual([expect.stringContaining('AgentLoop'), expect.stringContaining('Orchestrator'), expect.stringContaining('Evals')]);
    // The evals' Distributed Map runs inline over the items a Task reads first (local/runtime/distributed-map.ts): both forms are valid.
    for (const machine of machines) expect(() => load(machine.definition)).not.toThrow();
    for (const machine of machines) expect(() => load(inlineDistributedMaps(machine.definition))).not.toThrow();
  });

  it('would be refused if one were not', () => {
    const [machine] = definitions();
    expect(() => load({ ...machine?.definition, StartAt: 'NoSuchState' })).toThrow();
  });
});

describe('agent definitions in the local stack', () => {
  it('takes the MCP servers and Lambda tools this machine has, their functions imported by their local ARN', () => {
    const external = {
      mcpServers: [{ name: 'docs', url: 'http://127.0.0.1:8788/mcp' }],
      lambdaTools: [{ name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' as const }, functionName: 'word-count' }],
    };
    const researcher = { name: 'researcher', description: 'Researches.', instructions: 'Research.', tools: ['docs__*', 'word_count'] };
    const template = synthesizeTemplate((app) => ({ ...localExternalToolProps(app, external), agents: [researcher] }));
    expect(JSON.stringify(template)).toContain('arn:aws:lambda:us-east-1:000000000000:function:word-count');
    expect(() => synthesizeTemplate({ agents: [researcher] })).toThrow('Stepwise agents: agent "researcher": tools[0] "docs__*" is not a tool of this deployment');
  });
});
