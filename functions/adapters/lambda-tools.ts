/**
 * A deployment's own Lambda functions as tools: the input is checked against the tool's JSON
 * Schema (Ajv) and, when valid, sent as the invocation's payload; the function's answer is the
 * tool result. A function error, an answer `{ "isError": true, "content": "…" }`, a refused or
 * timed-out invocation all become error results the model can act on (invariant 5).
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import {
  type ExternalOutcome,
  type ExternalTool,
  type LambdaToolConfig,
  type ToolSource,
  lambdaCatalogEntries,
} from '../core/tools/external.js';

export interface LambdaToolsOptions {
  /** Milliseconds one invocation may take; below the tool Lambda's timeout (invariant 3). @default 60000 */
  timeoutMs?: number;
}

/** The configured Lambda tools, invoked with an injected client. */
export class LambdaToolSource implements ToolSource {
  readonly id = 'lambda';
  readonly agents;
  private readonly tools: ExternalTool[];
  private readonly validators = new Map<string, ValidateFunction>();

  /** Compiles every schema now, so a malformed one fails the function when it loads. */
  constructor(
    configs: readonly LambdaToolConfig[],
    private readonly lambda: LambdaClient,
    private readonly options: LambdaToolsOptions = {},
  ) {
    this.tools = lambdaCatalogEntries(configs);
    this.agents = [...new Set(this.tools.flatMap((tool) => tool.agents))];
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    for (const tool of this.tools) {
      try {
        this.validators.set(tool.name, ajv.compile(tool.inputSchema));
      } catch (error) {
        throw new Error(`Stepwise is misconfigured: the inputSchema of Lambda tool "${tool.name}" is not a valid JSON Schema (${String(error)}).`);
      }
    }
  }

  list(): Promise<ExternalTool[]> {
    return Promise.resolve(this.tools);
  }

  async call(tool: ExternalTool, input: unknown): Promise<ExternalOutcome> {
    const validate = this.validators.get(tool.name);
    if (!validate) return { content: `${tool.name} is not configured in this deployment any more.`, isError: true };
    if (!validate(input)) return { content: `Invalid input for ${tool.name}: ${describeErrors(validate.errors ?? [])}`, isError: true };
    const timeoutMs = this.options.timeoutMs ?? 60_000;
    let out;
    try {
      out = await this.lambda.send(
        new InvokeCommand({ FunctionName: tool.target, Payload: new TextEncoder().encode(JSON.stringify(input)) }),
        { abortSignal: AbortSignal.timeout(timeoutMs) },
      );
    } catch (error) {
      const reason = error instanceof Error ? (error.name === 'TimeoutError' || error.name === 'AbortError' ? `no answer within ${timeoutMs / 1000} s` : `${error.name}: ${error.message}`) : String(error);
      return { content: `${tool.name} could not be invoked: ${reason}`, isError: true };
    }
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
    const answer = parseJson(text);
    if (out.FunctionError) return { content: `${tool.name} failed: ${functionErrorMessage(answer, text)}`, isError: true };
    return outcomeOf(answer, text);
  }
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
