/**
 * Stepwise on one machine: the emulators, the synthesized state machines in the local runtime
 * with the Lambda handler modules bound in-process, the Step Functions API on loopback for the
 * intake's real SFNClient, and the HTTP API.
 */
import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createAdaptorServer } from '@hono/node-server';
import { localHostsOf, refuseLocally } from './guard.js';
import { apiWiring } from '../functions/wiring/api.js';
import { externalConfig, localCredentials, readExternalToolsEnv, wire } from '../functions/wiring/wire.js';
import { configuredDefinitions } from '../functions/wiring/agents.js';
import { externalToolNames, externalToolNamesEnvironment } from '../functions/core/tools/external/names.js';
import { createApi } from '../functions/api/app.js';
import { bearerCallers } from '../functions/api/callers.js';
import { localCaller } from '../functions/core/callers/types.js';
import { type DeadLetters } from '../functions/core/intake/types.js';
import { intakeEvent } from '../functions/core/intake/events.js';
import { runRequestedDetailType } from '../functions/core/intake/request.js';
import { executionEndedPattern } from '../functions/core/runs/execution-ended.js';
import { runEndedPattern } from '../functions/core/traces/run-ended.js';
import { localAccount, localFunctions, localResources, localStateMachines } from './definitions.js';
import { localTemplate } from './template.js';
import { type LocalIssuer, localIssuerIn, localTenantClaim } from './issuer.js';
import type { StepwiseStackProps } from '../lib/stepwise-stack.js';
import { type RequestCounter, localRegion, startEmulators } from './stand-ins/emulators.js';
import { type LocalEvent, type LocalHandler, LocalRuntime } from './runtime/runtime.js';
import { inlineDistributedMaps } from './runtime/distributed-map.js';
import { type LocalFunctionHandler, type LocalLambdaApi, startLambdaApi } from './stand-ins/lambda-api.js';
import { startSfnApi } from './stand-ins/sfn-api.js';
import { startLoopbackServer } from './stand-ins/http-server.js';
import { consoleRoutes, withConsole } from './console.js';
import { localEventRoutes, localTokenRoutes } from './routes.js';
import { builtinTools } from '../functions/core/tools/builtin/builtin.js';
import { scheduleSource } from '../functions/core/schedules/types.js';
import { LocalScheduler, type LocalSchedulerOptions } from './runtime/scheduler.js';
import { storedSchedules } from './schedules.js';

export interface LocalStackOptions {
  /** Port of the HTTP API; 0 for any free port. @default 8787 */
  port?: number;
  /** Folder for emulator data; in memory (a temporary folder) when absent. */
  dataDir?: string;
  /** Shortens every state machine `Retry` wait to this many milliseconds (tests). */
  retryIntervalMs?: number;
  /** More environment for the handlers (provider, model, keys). */
  env?: Record<string, string | undefined>;
  onEvent?: (event: LocalEvent) => void;
  /**
   * Props of the stack whose definitions run locally (e.g. a lowered continue-as-new threshold,
   * a short approval timeout); its `approvalTools` apply to runs created through the local API,
   * its `agents` and `workflows` (else those of `STEPWISE_AGENTS` and `STEPWISE_WORKFLOWS`) are
   * checked as at synth and are the handlers' definitions.
   */
  stackProps?: StepwiseStackProps;
  /** Wraps each Lambda handler module (fault injection in tests). */
  wrapHandler?: (name: string, handler: LocalHandler) => LocalHandler;
  /** Functions the local Lambda API serves, by name: the handlers of Lambda tools. */
  functions?: Record<string, LocalFunctionHandler>;
  /**
   * Runs each HTTP API request inside it (measuring: the bench tells the requests the API
   * function makes from the handlers' by the async context this sets, as `wrapHandler` does for theirs).
   */
  aroundApi?: <T>(work: () => T) => T;
  /** The local scheduler's clock, and `manual: true` to move its time only with `scheduler.tick(now)` (tests). */
  schedules?: Pick<LocalSchedulerOptions, 'clock' | 'manual' | 'onFired'>;
}

export interface LocalStack {
  url: string;
  runtime: LocalRuntime;
  /** The local Lambda Invoke API that Lambda tools are called through; register more functions on it. */
  lambdas: LocalLambdaApi;
  /** What the DynamoDB emulator served (the bench). */
  requestCounter: RequestCounter;
  /** The local Step Functions API that the intake starts runs through (a test's second front door uses it too). */
  sfnEndpoint: string;
  /** The local token issuer: `POST /_local/tokens` and `stepwise token` hand out its tokens. */
  issuer: LocalIssuer;
  /** What fires schedules locally: `tick(now)` fires those due by then. */
  scheduler: LocalScheduler;
  /** Hands an event already on a bus to its rule's target again, as an at-least-once bus may; resolves when it was handled. */
  redeliver(eventId: string): Promise<void>;
  close(): Promise<void>;
}

/** How many stacks this process has started. */
let stacksStarted = 0;

/**
 * Starts the stack. The API's port and the data folder are taken before anything slow starts,
 * so a busy port (`PortInUse`) or a data folder in use (`DataDirInUse`) is reported at once;
 * until the stack is ready the API answers 503. Whatever started is stopped again on failure.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  let app: { fetch(request: Request): Response | Promise<Response> } | undefined;
  const around = options.aroundApi ?? (<T>(work: () => T) => work());
  const hosts = localHostsOf({ ...process.env, ...options.env }.STEPWISE_LOCAL_HOSTS);
  // Without http2 options the adaptor makes a plain node:http server.
  const server = await startLoopbackServer(
    createAdaptorServer({ fetch: (request) => refuseLocally(request, hosts) ?? around(() => app?.fetch(request) ?? starting()) }) as Server,
    options.port ?? 8787,
  );
  const undo: (() => unknown)[] = [() => server.close()];
  try {
    // The emulators start (S3 in its own process, on another core) while the stack synthesizes.
    const emulatorsStarting = startEmulators(options.dataDir ? { dataDir: options.dataDir } : {});
    undo.push(() => emulatorsStarting.then((emulators) => emulators.stop()));
    const source = { ...process.env, ...options.env };
    const external = externalConfig(readExternalToolsEnv(source));
    const configured = configuredDefinitions(source);
    const definitions = {
      agents: options.stackProps?.agents ?? (configured.agents as StepwiseStackProps['agents']),
      workflows: options.stackProps?.workflows ?? (configured.workflows as StepwiseStackProps['workflows']),
    };
    // The stack checks the definitions as `cdk synth` does, against the tools and models this machine has.
    const template = await localTemplate({
      external,
      stackProps: {
        ...options.stackProps,
        ...definitions,
        allowedModels: [...(options.stackProps?.allowedModels ?? []), ...localAllowedModels(source, definitions.agents)],
      },
    });
    const emulators = await emulatorsStarting;
    const lambdas = await startLambdaApi();
    undo.push(() => lambdas.close());
    for (const [name, handler] of Object.entries(options.functions ?? {})) lambdas.register(name, handler);
    const env = {
      // Locally the functions' logs say only what went wrong, and no CloudWatch reads their EMF
      // metrics; set POWERTOOLS_LOG_LEVEL=INFO (or POWERTOOLS_METRICS_DISABLED=false) to see more.
      POWERTOOLS_LOG_LEVEL: 'WARN',
      POWERTOOLS_METRICS_DISABLED: 'true',
      ...process.env,
      ...options.env,
      STEPWISE_TABLE: emulators.table,
      STEPWISE_BUCKET: emulators.bucket,
      STEPWISE_DYNAMODB_ENDPOINT: emulators.dynamoEndpoint,
      STEPWISE_S3_ENDPOINT: emulators.s3Endpoint,
      STEPWISE_LAMBDA_ENDPOINT: lambdas.url,
      // The handlers follow the definitions the stack checked, as deployed functions follow those
      // bundled into them; empty, none (not those an earlier stack of this process left behind).
      STEPWISE_AGENTS: definitions.agents ? JSON.stringify(definitions.agents) : '',
      STEPWISE_WORKFLOWS: definitions.workflows ? JSON.stringify(definitions.workflows) : '',
    };
    // The API and intake are told the external tools' names, as the stack tells them deployed
    // (approval policies may name those tools); the step functions read the whole configuration.
    // Both are set, so names an earlier stack of this process left behind do not stay.
    const names = externalToolNamesEnvironment(externalToolNames(external));
    Object.assign(env, { STEPWISE_MCP_SERVER_NAMES: '', STEPWISE_LAMBDA_TOOL_NAMES: '', ...names });
    // The handler modules wire themselves from the environment when they load, as in Lambda.
    Object.assign(process.env, env);
    // Locally the handler modules read this process's environment, not the template's, so its
    // STEPWISE_PROVIDER picks the inference module (the one a deployment on that provider bundles)
    // and binds it to whichever inference entry the template names.
    // A later stack of this process (the tests share their workers' modules) loads copies of its
    // own, told apart by a query, so that they wire themselves from this stack's environment.
    const copy = stacksStarted++ === 0 ? '' : `?stack=${stacksStarted}`;
    const handlerModule = (name: string) => {
      const specifier = `../functions/handlers/${name}.js${copy}`;
      return import(/* @vite-ignore */ specifier) as Promise<{ handler: LocalHandler }>;
    };
    const inference = (await handlerModule(process.env.STEPWISE_PROVIDER === 'bedrock' ? 'inference-bedrock' : 'inference')).handler;
    const modules: Record<string, LocalHandler> = {
      inference,
      'inference-bedrock': inference,
      tool: (await handlerModule('tool')).handler,
      approval: (await handlerModule('approval')).handler,
      // Loaded at its first step: it wires itself from the environment, which names the orchestrator only once the runtime exists.
      'eval-step': async (event) => (await handlerModule('eval-step')).handler(event),
    };
    const wrap = options.wrapHandler ?? ((_name: string, handler: LocalHandler) => handler);
    const handlers = Object.fromEntries(Object.entries(modules).map(([name, handler]) => [name, wrap(name, handler)]));

    // Rules on the default bus, routed once the runtime (and so the orchestrator's ARN) exists.
    const defaultBus: { route?: (event: LocalEvent) => Promise<void> | undefined } = {};
    const resources = localResources(template, { table: emulators.table, bucket: emulators.bucket });
    const dynamo = new DynamoDBClient({ endpoint: emulators.dynamoEndpoint, region: localRegion, credentials: localCredentials });
    undo.push(() => dynamo.destroy());
    const s3 = new S3Client({
      endpoint: emulators.s3Endpoint,
      region: localRegion,
      credentials: localCredentials,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    undo.push(() => s3.destroy());
    const runtime = new LocalRuntime({
      // The evals' Distributed Map runs inline over the items it reads (local/runtime/distributed-map.ts).
      stateMachines: localStateMachines(template, resources).map((machine) => ({ ...machine, definition: inlineDistributedMaps(machine.definition) })),
      readObject: async (bucket, key) => {
        const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return (await out.Body?.transformToString('utf8')) ?? '';
      },
      functions: localFunctions(template, resources),
      handlers,
      dynamo,
      ...(options.retryIntervalMs !== undefined ? { retryIntervalMs: options.retryIntervalMs } : {}),
      onEvent: (event) => {
        options.onEvent?.(event);
        defaultBus.route?.(event);
      },
      // Checked once by test/infra/local-definitions.test.ts rather than at every start.
      validateDefinitions: false,
    });
    const orchestratorArn = runtime.stateMachineArn('Orchestrator');
    // The execution-ended handler wires itself from the environment, as the others.
    process.env.STEPWISE_ORCHESTRATOR_ARN = orchestratorArn;
    const sfnApi = await startSfnApi(runtime);
    undo.push(() => sfnApi.close());

    // The intake and the API talk to the local Step Functions endpoint through the real SFNClient.
    const approvalTools = options.stackProps?.approvalTools;
    const wiring = wire({
      ...env,
      STEPWISE_SFN_ENDPOINT: sfnApi.url,
      STEPWISE_ORCHESTRATOR_ARN: orchestratorArn,
      STEPWISE_EVALS_ARN: runtime.stateMachineArn('Evals'),
      ...(approvalTools ? { STEPWISE_APPROVAL_TOOLS: approvalTools.join(',') } : {}),
    });
    // Callers present the local issuer's tokens, read as a JWT authorizer's claims are; without a
    // token the caller is `local`, a reviewer, so the docs' curl examples need no header.
    const issuer = await localIssuerIn(options.dataDir ?? mkdtempSync(join(tmpdir(), 'stepwise-issuer-')));
    // Schedules fire on the local bus as the schedules source, which the intake trusts to name their owners (as the stack does deployed).
    const scheduler = new LocalScheduler({
      ...options.schedules,
      fire: async (entry) => {
        const [eventId] = runtime.putEvents([entry]);
        const event = runtime.events.find((e) => e.id === eventId);
        if (event) await deliver(event);
      },
    });
    undo.push(() => scheduler.close());
    const api = {
      ...apiWiring(wiring, { authenticate: bearerCallers((token) => issuer.verify(token), { tenantClaim: localTenantClaim, tenantOptional: true }, localCaller) }),
      trustedSources: [...wiring.env.STEPWISE_TRUSTED_SOURCES, scheduleSource],
      scheduleTrigger: scheduler,
    };

    const deadLetters: unknown[] = [];
    const localDeadLetters: DeadLetters = { send: async (letter) => void deadLetters.push(letter) };
    /** An invocation that threw, as Lambda's on-failure destination records it (no retries locally). */
    const failedInvocation = (request: unknown, error: unknown) => {
      const { name, message } = error instanceof Error ? error : new Error(String(error));
      deadLetters.push({ requestContext: { condition: 'RetriesExhausted' }, requestPayload: request, responsePayload: { errorType: name, errorMessage: message } });
    };
    const envelope = (event: LocalEvent) => ({
      id: event.id,
      'detail-type': event.detailType,
      source: event.source,
      account: localAccount,
      time: event.time,
      detail: event.detail,
    });

    // The execution-ended rule: the orchestrator's ABORTED/FAILED/TIMED_OUT status events go to
    // its function, as deployed; the same pattern decides.
    const executionEnded = wrap('execution-ended', (await handlerModule('execution-ended')).handler);
    const pattern = executionEndedPattern(orchestratorArn);
    const deliveries = new Set<Promise<void>>();
    defaultBus.route = (event) => {
      const detail = event.detail as { stateMachineArn?: string; status?: string };
      const matches =
        event.eventBusName === 'default' &&
        pattern.source.includes(event.source) &&
        pattern.detailType.includes(event.detailType) &&
        pattern.detail.stateMachineArn.includes(String(detail.stateMachineArn)) &&
        pattern.detail.status.some((status) => status === detail.status);
      // The run-ended rule on Stepwise's bus: completion events go to the same function (its spans, docs/traces.md).
      const runEnded = event.eventBusName !== 'default' && runEndedPattern.source.includes(event.source) && runEndedPattern.detailType.includes(event.detailType);
      if (!matches && !runEnded) return undefined;
      const request = envelope(event);
      // Asynchronous, as the rule's invocation is: the execution's end does not wait for it. An
      // invocation that throws is tried twice more, as Lambda does an asynchronous invocation
      // (deployed after a minute, then two), and only then recorded as failed.
      const attempt = async (): Promise<void> => {
        for (let tries = 1; ; tries++) {
          try {
            await executionEnded(request);
            return;
          } catch (error) {
            if (tries === 3) throw error;
            await new Promise((r) => setTimeout(r, options.retryIntervalMs ?? 1_000));
          }
        }
      };
      const delivery = attempt()
        .catch((error: unknown) => failedInvocation(request, error))
        .finally(() => deliveries.delete(delivery));
      deliveries.add(delivery);
      return delivery;
    };
    // The rule: run requests on the bus go to the intake, as deployed. An invocation that throws
    // ends in the dead letters as Lambda's on-failure destination records it (without the
    // deployed retries: `redeliver` is the local retry).
    const deliver = async (event: LocalEvent) => {
      if (event.detailType !== runRequestedDetailType) return;
      const request = envelope(event);
      try {
        await intakeEvent(request, { ...api, deadLetters: localDeadLetters });
      } catch (error) {
        failedInvocation(request, error);
      }
    };
    scheduler.load(await storedSchedules(dynamo, emulators.table));
    // The agent card tells A2A clients the local server's auth: a bearer token of the local issuer, or none.
    app = createApi({ ...api, a2a: { auth: 'local' } })
      .route('/', localTokenRoutes({ issue: (request) => issuer.issue(request) }))
      .route(
        '/',
        localEventRoutes({
          // The bus carries the entry; the rule for run requests hands it to the intake, as deployed.
          async put(entry) {
            // As the bus's policy denies it deployed: only the scheduler puts the schedules source.
            if (entry.Source === scheduleSource) {
              return { Entries: [{ ErrorCode: 'AccessDeniedException', ErrorMessage: `Only the scheduler may put events of source ${scheduleSource}.` }], FailedEntryCount: 1 };
            }
            const [eventId] = runtime.putEvents([entry]);
            const event = runtime.events.find((e) => e.id === eventId);
            if (event) await deliver(event);
            return { Entries: [{ EventId: eventId }], FailedEntryCount: 0 };
          },
          list: () => runtime.events,
          deadLetters: () => deadLetters,
        }),
      );
    // The console at /console/, signing callers in through the local issuer.
    app = withConsole(
      app,
      consoleRoutes({
        auth: 'local',
        tools: builtinTools.map((tool) => tool.name),
        gatedTools: wiring.env.STEPWISE_APPROVAL_TOOLS,
        ...(wiring.env.STEPWISE_ALLOWED_MODELS ? { models: wiring.env.STEPWISE_ALLOWED_MODELS } : {}),
      }),
    );

    return {
      url: server.url,
      runtime,
      lambdas,
      issuer,
      scheduler,
      requestCounter: emulators.requests,
      sfnEndpoint: sfnApi.url,
      async redeliver(eventId) {
        const event = runtime.events.find((e) => e.id === eventId);
        if (!event) throw new Error(`No event ${eventId} on the local bus.`);
        await deliver(event);
        await defaultBus.route?.(event);
      },
      async close() {
        scheduler.close();
        await server.close();
        // Runs at work finish first; a run that waits (or comes to wait) for a decision is stopped.
        runtime.abandonWaits();
        const abandon = setInterval(() => runtime.abandonWaits(), 200);
        await runtime.idle().catch(() => undefined);
        clearInterval(abandon);
        await Promise.all([...deliveries]);
        await sfnApi.close();
        await lambdas.close();
        dynamo.destroy();
        await emulators.stop();
      },
    };
  } catch (error) {
    for (const step of undo.reverse()) await Promise.resolve(step()).catch(() => undefined);
    throw error;
  }
}

/**
 * The models a definition may name locally: those `STEPWISE_ALLOWED_MODELS` lists, as the local
 * functions read it; unset, any model, as there (so the ones the definitions name).
 */
function localAllowedModels(source: Record<string, string | undefined>, agents: readonly { model?: unknown }[] | undefined): string[] {
  if (!Array.isArray(agents) || !agents.length) return [];
  const listed = (source.STEPWISE_ALLOWED_MODELS ?? '').split(',').map((model) => model.trim()).filter(Boolean);
  if (listed.length) return listed;
  return agents.flatMap((agent) => (typeof agent?.model === 'string' ? [agent.model] : []));
}

/** The API's answer while the stack starts. */
function starting(): Response {
  return Response.json({ message: 'Stepwise is starting.' }, { status: 503, headers: { 'retry-after': '1' } });
}
