/** Stepwise as a library: the construct, its props, and the parts it is made of. */
export {
  StepwiseAgents,
  type StepwiseAgentsProps,
  type StepwiseFunctions,
  type StepwiseStateMachines,
} from './stepwise-agents.js';
export type { ApiAuth } from './front-door.js';
export type { StepwiseBucketProps, StepwiseTableProps, StorageProps } from './storage.js';
export type { EventBusSettings, StepwiseEventBusProps } from './event-bus.js';
export { ExternalTools, type LambdaToolConfig, type McpServerConfig } from './external-tools.js';
export { type ConsoleSettings, StepwiseStack, type StepwiseStackProps } from './stepwise-stack.js';
export { type ConsoleSignIn, StepwiseConsole, type StepwiseConsoleProps } from './console.js';
export { ConsoleUsers, type ConsoleUsersProps } from './console-users.js';
export { Observability, type ObservabilityProps } from './observability.js';
