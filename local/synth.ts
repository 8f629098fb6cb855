/**
 * The CDK half of the local definitions: the stack synthesized in-process, without bundling.
 * Loading aws-cdk-lib and the stack's constructs takes seconds, so the local runtime imports this
 * module only when it has no template for its inputs yet (local/template.ts).
 */
import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { LambdaToolConfig, McpServerConfig } from '../functions/core/tools/external/types.js';
import { StepwiseStack, type StepwiseStackProps } from '../lib/stepwise-stack.js';
import { type Template, localAccount } from './definitions.js';
import { localRegion } from './stand-ins/emulators.js';

/**
 * Synthesizes the stack without bundling Lambda code and returns its template. What only a
 * deployment needs is left out: CDK's built-in CloudFormation validation (its WebAssembly engine
 * takes seconds to start; `cdk synth` still runs it) and the construct tree metadata. Props that
 * hold constructs (Lambda tools' functions) are made in the app `props` is given.
 */
export function synthesizeTemplate(props: StepwiseStackProps | ((app: App) => StepwiseStackProps) = {}): Template {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false, treeMetadata: false });
  const stack = new StepwiseStack(app, 'Stepwise', typeof props === 'function' ? props(app) : props);
  const assembly = app.synth({ validateOnSynthesis: false });
  return assembly.getStackByName(stack.stackName).template as Template;
}

/**
 * The local configuration's external tools as the stack's props, so the stack checks what names
 * them (agent definitions) against the tools this machine has: MCP servers as configured, Lambda
 * tools with their functions imported (by their local ARN) into a stack of their own.
 */
export function localExternalToolProps(
  app: App,
  config: { mcpServers: readonly McpServerConfig[]; lambdaTools: readonly LambdaToolConfig[] },
): Pick<StepwiseStackProps, 'mcpServers' | 'tools'> {
  const imports = config.lambdaTools.length ? new Stack(app, 'LocalFunctions') : undefined;
  return {
    ...(config.mcpServers.length ? { mcpServers: config.mcpServers } : {}),
    ...(imports
      ? {
          tools: config.lambdaTools.map(({ functionName, ...tool }, index) => ({
            ...tool,
            function: lambda.Function.fromFunctionArn(imports, `Tool${index}`, localFunctionArn(functionName)),
          })),
        }
      : {}),
  };
}

/** A function's ARN on this machine: an ARN as it is, a name in the local account and Region. */
function localFunctionArn(functionName: string): string {
  return functionName.startsWith('arn:') ? functionName : `arn:aws:lambda:${localRegion}:${localAccount}:function:${functionName}`;
}

