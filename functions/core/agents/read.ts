/**
 * The definition a run's agent follows, by name and version: the built-in when it is that version,
 * else the stored one, read once per warm function (a version never changes).
 */
import { builtinAgents, versionOf } from '../definitions/definition.js';
import { AgentDefinition } from '../definitions/types.js';
import { type AgentDefinitionStore, AgentDefinitionMissing, type AgentRef } from './types.js';

const builtins = new Map(builtinAgents.map((agent) => [`${agent.name}@${versionOf(agent)}`, agent]));

/** Definitions read from a store, by `<name>@<version>` (at most 100). */
const read = new Map<string, AgentDefinition>();

/** The definition of `ref`; `AgentDefinitionMissing` when it is neither built in nor stored. */
export async function definitionFor(ref: AgentRef, store: AgentDefinitionStore | undefined): Promise<AgentDefinition> {
  const key = `${ref.name}@${ref.version}`;
  const known = builtins.get(key) ?? read.get(key);
  if (known) return known;
  const stored = store ? await store.get(ref) : undefined;
  if (stored === undefined) throw new AgentDefinitionMissing(`Version ${ref.version} of agent "${ref.name}" is not stored.`);
  const definition = AgentDefinition.parse(stored);
  if (read.size >= 100) read.delete(read.keys().next().value ?? '');
  read.set(key, definition);
  return definition;
}
