import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { BuiltinAgentName } from '../functions/core/agents/types.js';
import { runIndexes } from '../functions/adapters/dynamo/layout.js';
import { metricNames, metricsNamespace, serviceName } from '../functions/core/telemetry/metrics.js';

/** The most lines a per-agent graph draws one by one (the tokens graph draws four per agent). */
const maxLinesPerGraph = 100;

export interface ObservabilityProps {
  /** The orchestrator: one execution per run, so its executions are the runs. */
  readonly orchestrator: sfn.IStateMachine;
  /** The agent loop: one execution per agent of a run (and per continuation). */
  readonly agentLoop: sfn.IStateMachine;
  /** Every Stepwise function, by a short name used in alarm ids and widget labels. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** The intake's dead-letter queue: refused events and events the rule could not deliver. */
  readonly deadLetters: sqs.IQueue;
  /**
   * The table: its writes throttled, and each run index's (an index that cannot take its writes
   * throttles the table's: docs/SCALE.md, "Backpressure").
   * @default no DynamoDB alarms
   */
  readonly table?: dynamodb.ITable;
  /**
   * The places of the agents whose iterations and tokens are graphed, as the metrics' `agent`
   * dimension names them: an agent's name, the built-in assistant's `single`.
   * @default the built-ins' (`single`, `architect`, `coder`)
   */
  readonly agents?: readonly string[];
  /**
   * The HTTP API and the function behind it. That function answers its errors as 500 responses
   * (the router turns them into answers), so its Lambda `Errors` metric never sees them: the
   * API's 5xx count is alarmed instead.
   * @default no API alarm
   */
  readonly api?: { readonly httpApi: apigw.IHttpApi; readonly function: lambda.IFunction };
  /**
   * The stream function, with its timeout and the longest it holds a stream: a stream that runs
   * past `maxStream` did not end cleanly, and its URL's 5xx answers are errors its router answered
   * (which the Lambda `Errors` metric never sees).
   * @default no stream alarms
   */
  readonly stream?: { readonly function: lambda.IFunction; readonly timeout: Duration; readonly maxStream: Duration };
  /**
   * Where alarms notify when they go off.
   * @default none: the alarms only change state (see them in the console or on the dashboard)
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * The dashboard's name.
   * @default `${stackName}-stepwise`
   */
  readonly dashboardName?: string;
  /**
   * The period of every alarm and graph.
   * @default Duration.minutes(5)
   */
  readonly period?: Duration;
}

/**
 * A CloudWatch dashboard and alarms for Stepwise (docs/operations.md, "Alarms"): failed, timed-out and
 * throttled executions of both state machines, orchestrator executions stopped outside Stepwise,
 * Lambda errors and throttles, API and stream URL 5xx answers, a stream that ran near its timeout,
 * and a dead-letter queue that holds anything. Runs succeeded/failed are the orchestrator's own execution metrics:
 * its last states are direct DynamoDB/EventBridge integrations that no function sees, and it
 * ends failed exactly when the run does (`RunFailed`).
 */
export class Observability extends Construct {
  public readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm, each going off on one bad thing in one period. */
  public readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const period = props.period ?? Duration.minutes(5);
    const machines = { Orchestrator: props.orchestrator, AgentLoop: props.agentLoop };

    // One event is one too many: each of these means a run failed or was kept from running.
    for (const [name, machine] of Object.entries(machines)) {
      this.alarm(`${name}ExecutionsFailed`, machine.metricFailed({ period }), `${name} executions failed.`, props.alarmTopic);
      this.alarm(`${name}ExecutionsTimedOut`, machine.metricTimedOut({ period }), `${name} executions timed out.`, props.alarmTopic);
      this.alarm(`${name}ExecutionThrottled`, machine.metricThrottled({ period }), `${name} executions were throttled.`, props.alarmTopic);
    }
    // Stopped outside Stepwise: AWS/States counts every abort, and each cancel through the API
    // aborts the orchestrator, so this counts the runs the execution-ended function had to mark.
    // (An alarm's metric carries no label: a labelled one becomes a metric-math alarm.)
    const interrupted = (status: string) =>
      new cloudwatch.Metric({
        namespace: metricsNamespace,
        metricName: metricNames.runsInterrupted,
        dimensionsMap: { service: serviceName, status },
        statistic: cloudwatch.Stats.SUM,
        period,
      });
    this.alarm(
      'OrchestratorExecutionsAborted',
      interrupted('ABORTED'),
      'Orchestrator executions were stopped outside Stepwise (a cancel through the API does not count); their runs were marked failed.',
      props.alarmTopic,
    );
    for (const [name, fn] of Object.entries(props.functions)) {
      if (fn !== props.api?.function) {
        this.alarm(`${name}Errors`, fn.metricErrors({ period }), `The ${name} function failed invocations.`, props.alarmTopic);
      }
      this.alarm(`${name}Throttles`, fn.metricThrottles({ period }), `The ${name} function was throttled.`, props.alarmTopic);
    }
    const serverErrors = props.api?.httpApi.metricServerError({ period, statistic: cloudwatch.Stats.SUM });
    if (serverErrors) this.alarm('Api5xx', serverErrors, 'The HTTP API answered with 5xx (errors of the API function included).', props.alarmTopic);
    const stream = props.stream;
    const streamUrl = (metricName: string, label: string) =>
      stream?.function.metric(metricName, { period, statistic: cloudwatch.Stats.SUM, label });
    if (stream) {
      this.alarm('StreamUrl5xx', stream.function.metric('Url5xxCount', { period, statistic: cloudwatch.Stats.SUM }), 'The stream URL answered with 5xx (errors of the stream function included).', props.alarmTopic);
      // Streams end at maxStream; one that runs halfway to the timeout did not end cleanly.
      const nearTimeout = stream.maxStream.plus(Duration.seconds((stream.timeout.toSeconds() - stream.maxStream.toSeconds()) / 2));
      this.alarm(
        'StreamDurationNearTimeout',
        stream.function.metricDuration({ period, statistic: cloudwatch.Stats.MAXIMUM }),
        `A stream ran past ${nearTimeout.toSeconds()} s, near the function's ${stream.timeout.toSeconds()} s timeout: it did not end cleanly at ${stream.maxStream.toSeconds()} s.`,
        props.alarmTopic,
        nearTimeout.toMilliseconds(),
      );
    }
    const throttles = this.throttleAlarms(props, period);
    const deadLetterDepth = props.deadLetters.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM });
    this.alarm('DeadLetters', deadLetterDepth, 'Events wait in the dead-letter queue: run requests that could not start, or execution ends not recorded.', props.alarmTopic);

    const custom = (metricName: string, dimensionsMap: Record<string, string>, label: string) =>
      new cloudwatch.Metric({
        namespace: metricsNamespace,
        metricName,
        dimensionsMap: { service: serviceName, ...dimensionsMap },
        statistic: cloudwatch.Stats.SUM,
        period,
        label,
      });
    const tokenKinds = [
      [metricNames.inputTokens, 'input'],
      [metricNames.outputTokens, 'output'],
      [metricNames.cacheReadInputTokens, 'cache read'],
      [metricNames.cacheCreationInputTokens, 'cache write'],
    ] as const;
    const agents = [...new Set(props.agents ?? BuiltinAgentName.options)];
    // One line per agent (four in the tokens graph) while a graph stays readable; past that, one
    // search finds every agent's.
    const perAgent = (metricName: string, kind?: string): cloudwatch.IMetric[] =>
      agents.length * tokenKinds.length <= maxLinesPerGraph
        ? agents.map((agent) => custom(metricName, { agent }, kind ? `${kind} · ${agent}` : agent))
        : [
            new cloudwatch.MathExpression({
              expression: `SEARCH('{${metricsNamespace},service,agent} MetricName="${metricName}"', 'Sum', ${period.toSeconds()})`,
              label: kind ?? 'iterations',
              period,
            }),
          ];
    // Tools are many (and grow): one search finds every agent/tool pair that reported.
    const perTool = (metricName: string, label: string) =>
      new cloudwatch.MathExpression({
        expression: `SEARCH('{${metricsNamespace},service,agent,tool} MetricName="${metricName}"', 'Sum', ${period.toSeconds()})`,
        label,
        period,
      });
    const executions = (machine: sfn.IStateMachine) => [
      machine.metricStarted({ period, label: 'started' }),
      machine.metricSucceeded({ period, label: 'succeeded' }),
      machine.metricFailed({ period, label: 'failed' }),
      machine.metricTimedOut({ period, label: 'timed out' }),
      machine.metricAborted({ period, label: 'aborted (cancelled)' }),
      machine.metricThrottled({ period, label: 'throttled' }),
    ];
    const runModes = ['single', 'multi'];
    const fns = Object.entries(props.functions);
    // Streams last minutes: their duration has a graph of its own, not the steps' milliseconds.
    const steps = fns.filter(([, fn]) => fn !== stream?.function);
    const width = 8;

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName ?? `${Stack.of(this).stackName}-stepwise`,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Runs (orchestrator executions)',
        left: [
          ...runModes.map((mode) => custom(metricNames.runsStarted, { mode }, `created · ${mode}`)),
          ...executions(props.orchestrator),
          ...['ABORTED', 'TIMED_OUT', 'FAILED'].map((status) => interrupted(status).with({ label: `marked failed · ${status.toLowerCase()}` })),
        ],
        width,
      }),
      new cloudwatch.GraphWidget({ title: 'Agent-loop executions', left: executions(props.agentLoop), width }),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width, height: 6 }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'Iterations by agent', left: perAgent(metricNames.iterations), width }),
      new cloudwatch.GraphWidget({
        title: 'Tokens',
        left: tokenKinds.flatMap(([metricName, kind]) => perAgent(metricName, kind)),
        width,
      }),
      new cloudwatch.GraphWidget({
        title: 'Tool calls and tool errors',
        left: [perTool(metricNames.toolCalls, 'calls')],
        right: [perTool(metricNames.toolErrors, 'errors')],
        width,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Lambda duration (p90)',
        left: steps.map(([name, fn]) => fn.metricDuration({ period, statistic: cloudwatch.Stats.p(90), label: name })),
        width,
      }),
      new cloudwatch.GraphWidget({
        title: 'Lambda errors and throttles',
        left: fns.map(([name, fn]) => fn.metricErrors({ period, label: `${name} errors` })),
        right: fns.map(([name, fn]) => fn.metricThrottles({ period, label: `${name} throttles` })),
        width,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth and API 5xx',
        left: [deadLetterDepth.with({ label: 'messages visible' })],
        right: serverErrors ? [serverErrors.with({ label: 'API 5xx answers' })] : [],
        width,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'Throttles: DynamoDB writes (table, run indexes) and state transitions', left: throttles.dynamo, right: [throttles.transitions], width }),
    );
    if (stream) {
      this.dashboard.addWidgets(
        new cloudwatch.GraphWidget({
          title: 'Event streams',
          left: [
            streamUrl('UrlRequestCount', 'streams opened'),
            streamUrl('Url4xxCount', '4xx'),
            streamUrl('Url5xxCount', '5xx'),
          ].filter((metric): metric is cloudwatch.Metric => metric !== undefined),
          right: [stream.function.metricDuration({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'longest stream (ms)' })],
          width,
        }),
      );
    }
  }

  /**
   * Alarms on throttled DynamoDB writes (the table's, each run index's) and on throttled state
   * transitions (the account's token bucket, shared by every state machine): each is retried with
   * backoff, so runs slow down rather than fail, but a team should raise the quota or spread the load.
   */
  private throttleAlarms(props: ObservabilityProps, period: Duration): { dynamo: cloudwatch.Metric[]; transitions: cloudwatch.Metric } {
    const transitions = sfn.StateTransitionMetric.metricThrottledEvents({ period, statistic: cloudwatch.Stats.SUM });
    this.alarm('StateTransitionsThrottled', transitions, 'State transitions were throttled (the account and Region quota, shared by every state machine): runs were held back.', props.alarmTopic);
    const dynamo: cloudwatch.Metric[] = [];
    const table = props.table;
    if (!table) return { dynamo, transitions: transitions.with({ label: 'state transitions throttled' }) };
    // An alarm's metric carries no label (a labelled one becomes a metric-math alarm); the graph's do.
    const writeThrottles = (dimensionsMap: Record<string, string>) =>
      new cloudwatch.Metric({ namespace: 'AWS/DynamoDB', metricName: 'WriteThrottleEvents', dimensionsMap, statistic: cloudwatch.Stats.SUM, period });
    const onTable = writeThrottles({ TableName: table.tableName });
    this.alarm('TableWritesThrottled', onTable, 'Writes to the table were throttled: steps were retried.', props.alarmTopic);
    dynamo.push(onTable.with({ label: 'table' }));
    for (const index of Object.values(runIndexes)) {
      const onIndex = writeThrottles({ TableName: table.tableName, GlobalSecondaryIndexName: index.name });
      this.alarm(
        `IndexWritesThrottled${index.family[0]?.toUpperCase()}${index.family.slice(1)}`,
        onIndex,
        `Writes to the index ${index.name} were throttled, and with them the table's (a hot partition: docs/SCALE.md).`,
        props.alarmTopic,
      );
      dynamo.push(onIndex.with({ label: index.name }));
    }
    return { dynamo, transitions: transitions.with({ label: 'state transitions throttled' }) };
  }

  /** An alarm on one or more events of `metric` in a period (or on reaching `threshold`); missing data is no event. */
  private alarm(id: string, metric: cloudwatch.IMetric, description: string, topic?: sns.ITopic, threshold = 1): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `Stepwise: ${description}`,
    });
    if (topic) alarm.addAlarmAction(new actions.SnsAction(topic));
    this.alarms.push(alarm);
  }
}
