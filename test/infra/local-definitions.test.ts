/**
 * The local stack loads its state machines without checking them against the ASL schema (it
 * saves its start about a second); this checks them once, with the interpreter's own validator.
 */
import '../../local/polyfills.js';
import { Duration } from 'aws-cdk-lib';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import { localResources, localStateMachines, synthesizeTemplate } from '../../local/definitions.js';

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
  ])('are valid ASL for %s', (_name, props) => {
    const machines = definitions(props);
    expect(machines.map((m) => m.logicalId)).toEqual([expect.stringContaining('AgentLoop'), expect.stringContaining('Orchestrator')]);
    for (const machine of machines) expect(() => load(machine.definition)).not.toThrow();
  });

  it('would be refused if one were not', () => {
    const [machine] = definitions();
    expect(() => load({ ...machine?.definition, StartAt: 'NoSuchState' })).toThrow();
  });
});
