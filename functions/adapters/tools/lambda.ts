/**
 * A deployment's own Lambda functions as tools: the input is checked against the tool's JSON
 * Schema (Ajv) and, when valid, sent as the invocation's payload; the function's answer is the
 * tool result. A function error, an answer `{ "isError": true, "content": "…" }`, a refused or
 * timed-out invocation all become error results the model can act on (invariant 5, docs/ARCHITECTURE.md).
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { type ExternalCallContext, type ExternalOutcome, type ExternalTool, type LambdaToolConfig, type ToolSource, ToolUnavailable } from '../../core/tools/external/types.js';
import { lambdaCatalogEntries } from '../../core/tools/external/external-tools.js';

export interface LambdaToolsOptions {
  /** Milliseconds one invocation may take; below the tool Lambda's timeout (invariant 3, docs/ARCHITECTURE.md). @default 60000 */
  timeoutMs?: number;
  /** Told what the model is not: a tool left out for its schema, an invocation refused by AWS. */
  warn?: (message: string) => void;
}

/** The configured Lambda tools, invoked with an injected client. */
export class LambdaToolSource implements ToolSource {
  readonly id = 'lambda';
  readonly agents;
  private readonly tools: ExternalTool[];
  private readonly validators = new Map<string, ValidateFunction>();

  /**
   * Compiles every schema now. One that does not compile (synth checks them too) leaves its tool
   * out, reported, rather than failing the function and every built-in tool with it.
   */
  constructor(
    configs: readonly LambdaToolConfig[],
    private readonly lambda: LambdaClient,
    private readonly options: LambdaToolsOptions = {},
  ) {
    this.tools = lambdaCatalogEntries(configs).filter((tool) => {
      try {
        this.validators.set(tool.name, compileToolSchema(tool.name, tool.inputSchema));
        return true;
      } catch (error) {
        options.warn?.(`Lambda tool left out: ${error instanceof Error ? error.message : String(error)}`);
        return false;
      }
    });
    this.agents = [...new Set(this.tools.flatMap((tool) => tool.agents))];
  }

  list(): Promise<ExternalTool[]> {
    return Promise.resolve(this.tools);
  }

  /**
   * Invokes the function with the validated input as its event. The step's `runId` and `toolUseId`
   * ride in the client context (`context.clientContext.custom` in Node.js), so a function can
   * recognize a tool step retried after it ran, with the run's `owner` (principal) and `tenant`, so
   * it acts for that caller rather than for the deployment. The context, not the event: the model
   * writes the event, so it could forge them there, and a function's event stays its input.
   */
  async call(tool: ExternalTool, input: unknown, context?: ExternalCallContext): Promise<ExternalOutcome> {
    const validate = this.validators.get(tool.name);
    if (!validate) return { content: `${tool.name} is not configured in this deployment any more.`, isError: true, ran: false };
    if (!validate(input)) return { content: `Invalid input for ${tool.name}: ${describeErrors(validate.errors ?? [])}`, isError: true, ran: false };
    const timeoutMs = this.options.timeoutMs ?? 60_000;
    let out;
    try {
      out = await this.lambda.send(
        new InvokeCommand({
          FunctionName: tool.target,
          Payload: new TextEncoder().encode(JSON.stringify(input)),
          ...(context ? { ClientContext: Buffer.from(JSON.stringify({ custom: callKeys(context) })).toString('base64') } : {}),
        }),
        { abortSignal: AbortSignal.timeout(timeoutMs) },
      );
    } catch (error) {
      if (!(error instanceof Error)) return { content: `${tool.name} could not be invoked.`, isError: true };
      if (error.name === 'TimeoutError' || error.name === 'AbortError') {
        return { content: `${tool.name} could not be invoked: no answer within ${timeoutMs / 1000} s`, isError: true };
      }
      // Throttling and Lambda's own faults are not the tool's answer: the state machine retries them.
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
      if (error.name === 'TooManyRequestsException' || status === 429 || status >= 500) {
        throw new ToolUnavailable(`Lambda could not invoke ${tool.name} (${error.name}): ${error.message}`, { cause: error });
      }
      // A deployment fault (access, a missing function): the model learns only that the tool is
      // unusable, not the account's ARNs; the log has the details.
      this.options.warn?.(`Lambda tool ${tool.name} could not be invoked: ${error.name}: ${error.message}`);
      return { content: `${tool.name} could not be invoked (${error.name}); it is not usable in this run.`, isError: true };
    }
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
    const answer = parseJson(text);
    if (out.FunctionError) return { content: `${tool.name} failed: ${functionErrorMessage(answer, text)}`, isError: true };
    return outcomeOf(answer, text);
  }
}

/** What a function learns of the call besides its input: the step's keys and for whom it runs. */
function callKeys({ runId, toolUseId, owner }: ExternalCallContext): Record<string, string> {
  return { runId, toolUseId, ...(owner ? { owner: owner.principal } : {}), ...(owner?.tenant !== undefined ? { tenant: owner.tenant } : {}) };
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return undefined;
  }
}

/** A function's answer as a tool result: a string as it is, an error envelope as an error, other JSON as JSON. */
function outcomeOf(answer: unknown, raw: string): ExternalOutcome {
  if (typeof answer === 'string') return { content: answer, isError: false };
  if (answer !== null && typeof answer === 'object' && (answer as { isError?: unknown }).isError === true) {
    const content = (answer as { content?: unknown }).content;
    return { content: typeof content === 'string' ? content : JSON.stringify(answer), isError: true };
  }
  return { content: answer === undefined ? raw : JSON.stringify(answer), isError: false };
}

/** Lambda's error payload (`{ errorType, errorMessage }`) as one line. */
function functionErrorMessage(answer: unknown, raw: string): string {
  if (answer !== null && typeof answer === 'object') {
    const { errorType, errorMessage } = answer as { errorType?: unknown; errorMessage?: unknown };
    if (typeof errorMessage === 'string') return typeof errorType === 'string' ? `${errorType}: ${errorMessage}` : errorMessage;
  }
  return raw || 'the function reported an error';
}

/** Ajv's errors as one line a model can act on: `/path: problem; /path: problem`. */
function describeErrors(errors: ErrorObject[]): string {
  return errors
    .map((e) => {
      const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: unknown }).additionalProperty)})` : '';
      return `${e.instancePath || '(input)'}: ${e.message ?? e.keyword}${extra}`;
    })
    .join('; ');
}

/** Tool input schemas (JSON Schema) compiled with Ajv: at synth, and when a function loads. */

const ajv = new Ajv2020({ allErrors: true, strict: false });

/**
 * A validator for a tool's input schema. A `$schema` naming another draft (draft-07 is what most
 * generators write) is dropped: Ajv 2020 would refuse the unknown meta-schema, and the keywords a
 * tool schema uses mean the same in both. Throws, naming the tool, when the schema is not valid.
 */
export function compileToolSchema(name: string, schema: Record<string, unknown>): ValidateFunction {
  const { $schema: _dialect, ...rest } = schema;
  try {
    return ajv.compile(rest);
  } catch (error) {
    throw new Error(`the inputSchema of tool "${name}" is not a valid JSON Schema (${error instanceof Error ? error.message : String(error)})`);
  }
}
