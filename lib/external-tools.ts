import { Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { toolNames } from '../functions/core/tools/builtin/builtin.js';
import type { AgentName } from '../functions/core/agents/types.js';
import { compileToolSchema } from '../functions/adapters/tools/lambda.js';
import { externalToolsConfig } from '../functions/core/tools/external/external-tools.js';
import type { Capability } from '../functions/core/tools/external/types.js';

/** A remote MCP server (Streamable HTTP) whose tools the agents may call as `<name>__<tool>`. */
export interface McpServerConfig {
  /** Prefixes its tools' names: 1..32 letters, digits or `-`. */
  readonly name: string;
  /** The server's Streamable HTTP endpoint, e.g. `https://mcp.example.com/mcp`. */
  readonly url: string;
  /**
   * The agents that see its tools.
   * @default ['single', 'coder']
   */
  readonly agents?: readonly AgentName[];
  /**
   * What its tools can do: `untrusted` (bring outside content in), `private` (read your data),
   * `egress` (send data out); `[]` for none.
   * @default ['untrusted', 'egress'] (unclassified: anything)
   */
  readonly capabilities?: readonly Capability[];
  /**
   * Per tool, by the name the model calls it (`<name>__<tool>`): overrides `capabilities`.
   * @default {}
   */
  readonly toolCapabilities?: Readonly<Record<string, readonly Capability[]>>;
}

/** A Lambda function of yours (any language) offered to the agents as a tool. */
export interface LambdaToolConfig {
  /** The tool's name: `^[a-zA-Z0-9_-]{1,64}$`, not a built-in tool's, without `__`. */
  readonly name: string;
  /** What the tool does and when to use it, for the model. */
  readonly description: string;
  /** The JSON Schema (an object schema) the input is checked against before the function is invoked. */
  readonly inputSchema: { readonly type: 'object'; readonly [keyword: string]: unknown };
  /** The function, invoked with the validated input as its event; its answer is the tool result. */
  readonly function: lambda.IFunction;
  /**
   * The agents that see this tool.
   * @default ['single', 'coder']
   */
  readonly agents?: readonly AgentName[];
  /**
   * What the tool can do: `untrusted`, `private`, `egress`; `[]` for none.
   * @default ['untrusted', 'egress'] (unclassified: anything)
   */
  readonly capabilities?: readonly Capability[];
}

export interface ExternalToolsProps {
  /** Lists the tools at a run's first model call. */
  readonly inference: lambda.Function;
  /** Calls them; the only function allowed to invoke the Lambda tools. */
  readonly tool: lambda.Function;
  /** @default [] */
  readonly mcpServers?: readonly McpServerConfig[];
  /** @default [] */
  readonly tools?: readonly LambdaToolConfig[];
}

/** Room left for Stepwise's own variables in Lambda's 4 KB of environment. */
const maxConfigChars = 3_000;

/**
 * Offers MCP servers' tools and Lambda tools to the agents: hands their configuration to the
 * inference and tool functions and lets the tool function invoke exactly the configured
 * functions, nothing else.
 */
export class ExternalTools extends Construct {
  /** The statement that lets the tool function invoke the Lambda tools, if there are any. */
  public readonly invokePolicy?: iam.PolicyStatement;

  constructor(scope: Construct, id: string, props: ExternalToolsProps) {
    super(scope, id);
    const mcpServers = (props.mcpServers ?? []).map(({ name, url, agents, capabilities, toolCapabilities }) => ({
      name,
      url,
      ...(agents ? { agents: [...agents] } : {}),
      ...(capabilities ? { capabilities: [...capabilities] } : {}),
      ...(toolCapabilities ? { toolCapabilities: Object.fromEntries(Object.entries(toolCapabilities).map(([tool, list]) => [tool, [...list]])) } : {}),
    }));
    const lambdaTools = (props.tools ?? []).map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      functionName: tool.function.functionArn,
      ...(tool.agents ? { agents: [...tool.agents] } : {}),
      ...(tool.capabilities ? { capabilities: [...tool.capabilities] } : {}),
    }));
    // The same rules the functions apply when they load, checked at synth instead of at run time.
    const placeholder = 'arn:aws:lambda:xx-xxxx-1:123456789012:function:' + 'x'.repeat(64);
    // A URL from elsewhere in the app (a token) is checked by the functions when they load.
    const placeholderUrl = 'https://token.invalid/mcp';
    const checked = externalToolsConfig(toolNames).safeParse({
      mcpServers: mcpServers.map((server) => (Token.isUnresolved(server.url) ? { ...server, url: placeholderUrl } : server)),
      lambdaTools: lambdaTools.map((tool) => ({ ...tool, functionName: placeholder })),
    });
    if (!checked.success) {
      const problems = checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      throw new Error(`Invalid external tools: ${problems}`);
    }
    // Ajv compiles each schema as the tool function will: one that fails is refused here, not in production.
    for (const tool of checked.data.lambdaTools) {
      try {
        compileToolSchema(tool.name, tool.inputSchema);
      } catch (error) {
        throw new Error(`Invalid external tools: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const size = Buffer.byteLength(JSON.stringify(checked.data));
    if (size > maxConfigChars) {
      throw new Error(
        `The external tools' configuration takes about ${size} bytes, over the ${maxConfigChars} Lambda's 4 KB environment leaves for it: shorten descriptions or schemas.`,
      );
    }

    const stack = Stack.of(this);
    const env: Record<string, string> = {};
    if (mcpServers.length) env.STEPWISE_MCP_SERVERS = stack.toJsonString(mcpServers);
    if (lambdaTools.length) env.STEPWISE_LAMBDA_TOOLS = stack.toJsonString(lambdaTools);
    for (const [name, value] of Object.entries(env)) {
      props.inference.addEnvironment(name, value);
      props.tool.addEnvironment(name, value);
    }

    if (props.tools?.length) {
      // The function ARNs themselves: no versions, aliases or other functions (no wildcard).
      this.invokePolicy = new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [...new Set(props.tools.map((tool) => tool.function.functionArn))],
      });
      props.tool.addToRolePolicy(this.invokePolicy);
    }
  }
}
