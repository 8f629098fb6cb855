/**
 * The phase of a run each agent works in. The orchestrator records it when the agent starts;
 * a follower that sees an agent's messages before the record's change names the same phase.
 * Type imports only, so the CLI bundle carries no more than this object.
 */
import type { BuiltinAgentName } from './types.js';
import type { Phase } from '../runs/types.js';

export const agentPhases = { single: 'executing', architect: 'planning', coder: 'executing' } as const satisfies Record<BuiltinAgentName, Phase>;

/** The phase of the agent at `place`: a team's agents execute. */
export function phaseOf(place: string): Phase {
  return place === 'architect' ? 'planning' : 'executing';
}
