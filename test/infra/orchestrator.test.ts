import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { definitionOf, logicalIdOf, stepwiseStack, statementsOf } from '../support/template.js';

const { template } = stepwiseStack();

describe('Orchestrator', () => {
  it('nests the agent loop with startExecution.sync:2 and may start only that state machine', () => {
    const states = definitionOf(template, 'Orchestrator').States as Record<string, { Resource?: unknown; Parameters?: Record<string, unknown> }>;
    const loopRef = { Ref: logicalIdOf(template, 'AgentLoop', 'AWS::StepFunctions::StateMachine') };
    type State = { Resource?: unknown; Parameters?: Record<string, unknown>; ItemProcessor?: { States: Record<string, State> } };
    // A team's workflow runs each step's agents in a Map inside the Map of its steps.
    const stepAgents = (states.WorkflowSteps as State | undefined)?.ItemProcessor?.States.StepAgents?.ItemProcessor?.States ?? {};
    const nested = { ...states, RunStepAgent: stepAgents.RunStepAgent } as Record<string, State>;
    for (const state of ['RunSingle', 'RunArchitect', 'RunCoder', 'RunStepAgent']) {
      expect(nested[state]?.Resource).toEqual({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::states:startExecution.sync:2']] });
    }
    // A one-agent run's agent, and a workflow step's, is the input's (its place, and the short label its executions carry).
    for (const state of ['RunSingle', 'RunStepAgent']) {
      expect(nested[state]?.Parameters).toMatchObject({ StateMachineArn: loopRef, 'Name.$': "States.Format('{}-{}', $.runId, $.label)", Input: { 'agent.$': '$.agent', 'label.$': '$.label' } });
    }
    // Each agent of a workflow step keeps its own iteration limit, which the intake put on its item.
    type MapState = State & { ItemSelector?: Record<string, unknown> };
    const stepMap = (states.WorkflowSteps as State | undefined)?.ItemProcessor?.States.StepAgents as MapState | undefined;
    expect(stepMap?.ItemSelector).toMatchObject({ 'agent.$': '$$.Map.Item.Value.agent', 'maxIterations.$': '$$.Map.Item.Value.maxIterations' });
    for (const agent of ['architect', 'coder']) {
      const state = `Run${agent[0]?.toUpperCase()}${agent.slice(1)}`;
      expect(nested[state]?.Parameters).toMatchObject({ StateMachineArn: loopRef, 'Name.$': `States.Format('{}-${agent}', $.runId)`, Input: { agent, label: agent } });
    }
    const statements = statementsOf(template, 'OrchestratorStateMachineRole');
    const starts = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('states:')));
    // Exactly the agent loop, and its executions: `execution:<name>:*`, never `<name>*`, which also
    // matches the executions of a look-alike state machine (`<name>-v2`).
    const executions = {
      'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':execution:', { 'Fn::Select': [6, { 'Fn::Split': [':', loopRef] }] }, ':*']],
    };
    expect(starts).toEqual([
      { Action: 'states:StartExecution', Effect: 'Allow', Resource: loopRef },
      { Action: ['states:DescribeExecution', 'states:StopExecution'], Effect: 'Allow', Resource: executions },
    ]);
  });

  it('reads and updates run records only: each DynamoDB grant carries the run family\'s LeadingKeys condition', () => {
    const tableArn = {
      'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':dynamodb:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':table/', { Ref: logicalIdOf(template, 'StorageTable', 'AWS::DynamoDB::GlobalTable') }]],
    };
    const onlyRuns = { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['run#*'] } };
    const items = statementsOf(template, 'OrchestratorStateMachineRole').filter((s) => [s.Action].flat().some((a) => a.startsWith('dynamodb:')));
    expect(items).toEqual([
      { Action: 'dynamodb:UpdateItem', Effect: 'Allow', Resource: tableArn, Condition: onlyRuns },
      { Action: 'dynamodb:GetItem', Effect: 'Allow', Resource: tableArn, Condition: onlyRuns },
    ]);
  });

  it('ends an execution that outlives a day plus the approval timeout (48 hours by default) as timed out', () => {
    expect(definitionOf(template, 'Orchestrator').TimeoutSeconds).toBe(48 * 60 * 60);
    // The session lock's lease, a quarter of an hour longer, goes to the functions that take locks.
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ STEPWISE_HANDLER: 'api', STEPWISE_SESSION_LEASE_SECONDS: String(48 * 60 * 60 + 15 * 60) }) },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ STEPWISE_HANDLER: 'run-requested', STEPWISE_SESSION_LEASE_SECONDS: String(48 * 60 * 60 + 15 * 60) }) },
    });
  });

  it('sends completion events to the project bus', () => {
    const states = definitionOf(template, 'Orchestrator').States as Record<string, { Parameters?: { Entries?: Record<string, unknown>[] } }>;
    const busRef = { 'Fn::GetAtt': [logicalIdOf(template, 'Bus', 'AWS::Events::EventBus'), 'Arn'] };
    for (const name of ['EmitSucceeded', 'EmitFailed', 'EmitCancelled']) {
      expect(states[name]?.Parameters?.Entries?.[0]).toMatchObject({ Source: 'stepwise', EventBusName: busRef });
    }
  });
});

describe('Evals', () => {
  type State = Record<string, unknown> & { ItemProcessor?: { StartAt: string; States: Record<string, Record<string, unknown>> } };
  const states = definitionOf(template, 'Evals').States as Record<string, State>;
  const cases = states.Cases as State;
  const orchestratorRef = { Ref: logicalIdOf(template, 'Orchestrator', 'AWS::StepFunctions::StateMachine') };
  const bucketRef = { Ref: logicalIdOf(template, 'StorageWorkspaces', 'AWS::S3::Bucket') };

  it("reads a suite's cases from S3 in a Distributed Map of standard child executions, as many at once as the eval asks, none failing the eval", () => {
    expect(cases).toMatchObject({
      Type: 'Map',
      ItemReader: {
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::s3:getObject']] },
        ReaderConfig: { InputType: 'JSON' },
        Parameters: { Bucket: bucketRef, 'Key.$': '$.itemsKey' },
      },
      MaxConcurrencyPath: '$.concurrency',
      ToleratedFailurePercentage: 100,
      ItemSelector: { 'evalId.$': '$.evalId', 'owner.$': '$.owner', 'index.$': '$$.Map.Item.Value.index' },
      Next: 'WriteReport',
    });
    expect(cases.ItemProcessor).toMatchObject({ ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' }, StartAt: 'StartCase' });
  });

  it('runs each case as a real orchestrator execution between its steps, and records a case whose steps fail as an error', () => {
    const item = cases.ItemProcessor?.States ?? {};
    const sync = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::states:startExecution.sync:2']] };
    expect(item.RunCase).toMatchObject({ Resource: sync, Parameters: { StateMachineArn: orchestratorRef, 'Name.$': '$.run.runId', 'Input.$': '$.run.orchestrator' }, Next: 'StartJudges' });
    // A run that failed is judged from its record all the same.
    expect(item.RunCase?.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: null, Next: 'StartJudges' }]);
    expect((item.Judges as State).ItemProcessor?.States.RunJudge).toMatchObject({ Resource: sync, Parameters: { StateMachineArn: orchestratorRef, 'Name.$': '$.runId' } });
    for (const step of ['StartCase', 'StartJudges', 'FinishCase']) {
      expect(item[step]?.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'CaseError' }]);
    }
    expect((item.StartCase?.Retry as { ErrorEquals: string[] }[]).some((r) => r.ErrorEquals.includes('TooManyRuns'))).toBe(true);
    expect(item.CaseError?.Parameters).toMatchObject({ step: 'caseError', 'failure.$': '$.failure' });
  });

  it("may read only the suites' items, start the orchestrator and its own map's child executions", () => {
    // Its role's policy, and the one CDK adds for the Distributed Map's child executions.
    const statements = statementsOf(template, 'EvalsStateMachine');
    const selfRef = { Ref: logicalIdOf(template, 'EvalsStateMachine', 'AWS::StepFunctions::StateMachine') };
    expect(statements).toContainEqual({ Action: 's3:GetObject', Effect: 'Allow', Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketRef.Ref, 'Arn'] }, '/evals/*/cases.json']] } });
    // The orchestrator (each case and judge), and the evals machine itself (the map's child executions).
    expect(statements.filter((s) => [s.Action].flat().includes('states:StartExecution')).map((s) => s.Resource)).toEqual([orchestratorRef, selfRef]);
    // Describe/Stop name the orchestrator's executions exactly (`execution:<name>:*`), never a look-alike's.
    const executions = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':execution:', { 'Fn::Select': [6, { 'Fn::Split': [':', orchestratorRef] }] }, ':*']] };
    expect(statements).toContainEqual({ Action: ['states:DescribeExecution', 'states:StopExecution'], Effect: 'Allow', Resource: executions });
    expect(statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('s3:')))).toHaveLength(1);
  });
});
