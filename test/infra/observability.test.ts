import { Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { logicalIdOf, stepwiseStack } from '../support/template.js';

type Resource = { Properties: Record<string, unknown> };
const { template } = stepwiseStack();
const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];

/** The alarms on `metricName` in `namespace`, by the dimension value they watch. */
function alarmsOn(namespace: string, metricName: string): Resource[] {
  return alarms.filter((a) => a.Properties.Namespace === namespace && a.Properties.MetricName === metricName);
}

const oneOrMore = {
  Threshold: 1,
  EvaluationPeriods: 1,
  Period: 300,
  ComparisonOperator: 'GreaterThanOrEqualToThreshold',
  TreatMissingData: 'notBreaching',
};

describe('Observability', () => {
  it('alarms on failed, timed-out and throttled executions of both state machines', () => {
    const machines = ['Orchestrator', 'AgentLoop'].map((prefix) => ({ Ref: logicalIdOf(template, prefix, 'AWS::StepFunctions::StateMachine') }));
    for (const metricName of ['ExecutionsFailed', 'ExecutionsTimedOut', 'ExecutionThrottled']) {
      const found = alarmsOn('AWS/States', metricName);
      expect(found.map((a) => a.Properties.Dimensions)).toEqual(
        expect.arrayContaining(machines.map((ref) => [{ Name: 'StateMachineArn', Value: ref }])),
      );
      expect(found).toHaveLength(2);
      for (const alarm of found) expect(alarm.Properties).toMatchObject({ ...oneOrMore, Statistic: 'Sum' });
    }
  });

  it('alarms on the throttles of every function, and on the errors of every function but the API\'s', () => {
    const functions = Object.keys(template.findResources('AWS::Lambda::Function')).map((id) => ({ Ref: id }));
    expect(functions).toHaveLength(8);
    const api = { Ref: logicalIdOf(template, 'FrontDoorApiFunction', 'AWS::Lambda::Function') };
    const watched = (metricName: string) => alarmsOn('AWS/Lambda', metricName).map((a) => (a.Properties.Dimensions as { Value: unknown }[])[0]?.Value);
    expect(watched('Throttles')).toEqual(expect.arrayContaining(functions));
    expect(watched('Throttles')).toHaveLength(8);
    expect(watched('Errors')).toEqual(expect.arrayContaining(functions.filter((f) => f.Ref !== api.Ref)));
    expect(watched('Errors')).not.toContainEqual(api);
    expect(watched('Errors')).toHaveLength(7);
    for (const alarm of [...alarmsOn('AWS/Lambda', 'Errors'), ...alarmsOn('AWS/Lambda', 'Throttles')]) {
      expect(alarm.Properties).toMatchObject({ ...oneOrMore, Statistic: 'Sum' });
    }
  });

  it('alarms on the HTTP API\'s 5xx answers, which the API function\'s Errors metric never sees (the router answers its errors)', () => {
    const [alarm, ...others] = alarmsOn('AWS/ApiGateway', '5xx');
    expect(others).toEqual([]);
    expect(alarm?.Properties).toMatchObject({
      ...oneOrMore,
      Statistic: 'Sum',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: logicalIdOf(template, 'FrontDoorHttpApi', 'AWS::ApiGatewayV2::Api') } }],
    });
  });

  it('alarms on the stream URL\'s 5xx answers and on a stream that ran past its clean end, toward the function\'s timeout', () => {
    const stream = [{ Name: 'FunctionName', Value: { Ref: logicalIdOf(template, 'LiveStreamFunction', 'AWS::Lambda::Function') } }];
    const [url5xx, ...others] = alarmsOn('AWS/Lambda', 'Url5xxCount');
    expect(others).toEqual([]);
    expect(url5xx?.Properties).toMatchObject({ ...oneOrMore, Statistic: 'Sum', Dimensions: stream });
    const [duration, ...more] = alarmsOn('AWS/Lambda', 'Duration');
    expect(more).toEqual([]);
    // Streams end at 840 s (STEPWISE_STREAM_MAX_SECONDS); the timeout is 900 s.
    expect(duration?.Properties).toMatchObject({ ...oneOrMore, Statistic: 'Maximum', Dimensions: stream, Threshold: 870_000 });
  });

  it('alarms on orchestrator executions stopped outside Stepwise, counted where their runs are marked, not on every cancel', () => {
    const [alarm, ...others] = alarmsOn('Stepwise', 'RunsInterrupted');
    expect(others).toEqual([]);
    expect(alarm?.Properties).toMatchObject({
      ...oneOrMore,
      Statistic: 'Sum',
      Dimensions: [
        { Name: 'service', Value: 'stepwise' },
        { Name: 'status', Value: 'ABORTED' },
      ],
    });
  });

  it('alarms as soon as the dead-letter queue holds a message', () => {
    const [alarm, ...others] = alarmsOn('AWS/SQS', 'ApproximateNumberOfMessagesVisible');
    expect(others).toEqual([]);
    expect(alarm?.Properties).toMatchObject({
      ...oneOrMore,
      Statistic: 'Maximum',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalIdOf(template, 'FrontDoorDeadLetters', 'AWS::SQS::Queue'), 'QueueName'] } }],
    });
  });

  it('alarms on throttled writes to the table and to each run index, and on throttled state transitions, and graphs them', () => {
    const [tableId] = Object.keys(template.findResources('AWS::DynamoDB::GlobalTable'));
    const table = { Ref: tableId };
    const onDynamo = alarmsOn('AWS/DynamoDB', 'WriteThrottleEvents').map((a) => a.Properties);
    expect(onDynamo.map((a) => a.Dimensions)).toEqual(
      expect.arrayContaining([
        [{ Name: 'TableName', Value: table }],
        ...['runs-by-owner', 'runs-by-tenant', 'running-by-owner'].map((index) => [
          { Name: 'GlobalSecondaryIndexName', Value: index },
          { Name: 'TableName', Value: table },
        ]),
      ]),
    );
    expect(onDynamo).toHaveLength(4);
    for (const alarm of onDynamo) expect(alarm).toMatchObject({ ...oneOrMore, Statistic: 'Sum' });
    const transitions = alarmsOn('AWS/States', 'ThrottledEvents').map((a) => a.Properties);
    expect(transitions).toEqual([expect.objectContaining({ ...oneOrMore, Statistic: 'Sum', Dimensions: [{ Name: 'ServiceMetric', Value: 'StateTransition' }] })]);
    const body = JSON.stringify((Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as Resource).Properties.DashboardBody);
    for (const text of ['Throttles: DynamoDB writes', 'WriteThrottleEvents', 'GlobalSecondaryIndexName', 'runs-by-tenant', 'ThrottledEvents', 'StateTransition']) expect(body).toContain(text);
  });

  it('has 31 alarms and, by default, no alarm actions', () => {
    // Executions (2 machines x 3, 1 aborted outside Stepwise), functions (8 throttles, 7 errors), API 5xx,
    // stream URL 5xx and stream duration, dead letters, throttles (state transitions, the table, 3 indexes).
    expect(alarms).toHaveLength(6 + 1 + 15 + 1 + 2 + 1 + 5);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toBeUndefined();
  });

  it('notifies an SNS topic from every alarm when one is given', () => {
    const { template: withTopic } = synthesize(
      (app) => new StepwiseStack(app, 'Alarmed', { alarmTopic: new sns.Topic(new Stack(app, 'Topic'), 'Alarms') }),
    );
    const found = Object.values(withTopic.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    expect(found).toHaveLength(31);
    for (const alarm of found) expect(JSON.stringify(alarm.Properties.AlarmActions)).toContain('Topic');
  });

  it('draws a dashboard of runs, iterations, tokens, tool errors, Lambda duration and errors, and dead letters', () => {
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Resource[];
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);
    for (const text of [
      'Runs (orchestrator executions)',
      'AWS/States',
      'ExecutionsSucceeded',
      'RunsStarted',
      'Iterations',
      'InputTokens',
      'OutputTokens',
      'CacheReadInputTokens',
      'ToolErrors',
      'SEARCH(',
      'AWS/Lambda',
      'Duration',
      'ApproximateNumberOfMessagesVisible',
      'RunsInterrupted',
      '5xx',
    ]) {
      expect(body).toContain(text);
    }
    // The custom metrics are read with the dimensions the functions emit them with.
    expect(body).toContain('\\"Stepwise\\",\\"Iterations\\",\\"agent\\",\\"coder\\",\\"service\\",\\"stepwise\\"');
  });

  it('past 25 agents (the built-ins\' three among them), graphs each kind of their iterations and tokens as one search, not a line per agent', () => {
    const agents = Array.from({ length: 23 }, (_, i) => ({ name: `agent-${i}`, description: 'Works.', instructions: 'Work.' }));
    const { template: many } = synthesize((app) => new StepwiseStack(app, 'Many', { agents }));
    const dashboard = Object.values(many.findResources('AWS::CloudWatch::Dashboard'))[0] as { Properties: { DashboardBody: { 'Fn::Join': [string, unknown[]] } } };
    // The body's JSON, with the template's tokens (the Region) as a placeholder.
    const body = dashboard.Properties.DashboardBody['Fn::Join'][1].map((part) => (typeof part === 'string' ? part : 'TOKEN')).join('');
    const widgets = (JSON.parse(body) as { widgets: { properties: { title: string; metrics?: unknown[] } }[] }).widgets;
    const metricsOf = (title: string) => widgets.find((w) => w.properties.title === title)?.properties.metrics;
    const search = (metric: string, label: string) => [{ label, expression: `SEARCH('{Stepwise,service,agent} MetricName="${metric}"', 'Sum', 300)` }];
    expect(metricsOf('Iterations by agent')).toEqual([search('Iterations', 'iterations')]);
    expect(metricsOf('Tokens')).toEqual([
      search('InputTokens', 'input'),
      search('OutputTokens', 'output'),
      search('CacheReadInputTokens', 'cache read'),
      search('CacheCreationInputTokens', 'cache write'),
    ]);
  }, 60_000);

  it('traces every state machine with X-Ray, their roles allowed to send the segments', () => {
    const machines = template.findResources('AWS::StepFunctions::StateMachine');
    expect(Object.keys(machines)).toHaveLength(3);
    for (const machine of Object.values(machines) as Resource[]) {
      expect(machine.Properties.TracingConfiguration).toEqual({ Enabled: true });
      const roleId = (machine.Properties.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      template.hasResourceProperties('AWS::IAM::Policy', {
        Roles: [{ Ref: roleId }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Action: Match.arrayWith(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']), Resource: '*' }),
          ]),
        },
      });
    }
  });
});
