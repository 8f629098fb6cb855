/**
 * Cursors of the event stream: an event's position in a run's sequence, as the opaque SSE `id`
 * a watcher resumes from.
 */
import type { AgentName } from '../agents/types.js';
import { InvalidCursor, type Run, placesOf } from '../runs/types.js';
import type { Group, Position } from './types.js';

/** The agents of a run by their places, in the order they work (a defined agent's is its name). */
export function agentsOf(run: Pick<Run, 'mode' | 'agents'>): AgentName[] {
  return placesOf(run);
}

function rank(group: Group): [number, number] {
  switch (group.kind) {
    case 'header':
      return [0, 0];
    case 'open':
      return [1 + group.agent, -1];
    case 'slot':
      return [1 + group.agent, group.seq];
    case 'close':
      return [1 + group.agent, Number.POSITIVE_INFINITY];
    case 'end':
      return [Number.POSITIVE_INFINITY, 0];
  }
}

/** Orders positions as their events are ordered. */
export function comparePositions(a: Position, b: Position): number {
  const [a1, a2] = rank(a.group);
  const [b1, b2] = rank(b.group);
  return a1 - b1 || a2 - b2 || a.n - b.n;
}

/**
 * A position as a cursor: `h.<n>`, `<agent>.o.<n>`, `<agent>.<seq>.<n>`, `<agent>.c.<n>`, `e.<n>`.
 * Opaque to clients; structured so that a resumed stream reads only from the slot it resumes in.
 */
export function encodeCursor(position: Position, agents: readonly AgentName[]): string {
  const { group, n } = position;
  switch (group.kind) {
    case 'header':
      return `h.${n}`;
    case 'end':
      return `e.${n}`;
    case 'open':
      return `${agents[group.agent]}.o.${n}`;
    case 'close':
      return `${agents[group.agent]}.c.${n}`;
    case 'slot':
      return `${agents[group.agent]}.${group.seq}.${n}`;
  }
}

const maxSeq = 9_999_999_999;

/** The position a cursor names in a run with these agents; `InvalidCursor` for anything else. */
export function parseCursor(cursor: string, agents: readonly AgentName[]): Position {
  const invalid = () => new InvalidCursor('The cursor is not one this run\'s event stream gave (use the id of an event you received).');
  const parts = cursor.split('.');
  const number = (text: string | undefined, max: number) => {
    if (text === undefined || !/^(0|[1-9]\d{0,9})$/.test(text) || Number(text) > max) throw invalid();
    return Number(text);
  };
  if (cursor.length > 64) throw invalid();
  if (parts.length === 2 && (parts[0] === 'h' || parts[0] === 'e')) {
    return { group: { kind: parts[0] === 'h' ? 'header' : 'end' }, n: number(parts[1], 1_000_000) };
  }
  if (parts.length !== 3) throw invalid();
  const agent = agents.indexOf(parts[0] as AgentName);
  if (agent < 0) throw invalid();
  const n = number(parts[2], 10_000_000);
  if (parts[1] === 'o') return { group: { kind: 'open', agent }, n };
  if (parts[1] === 'c') return { group: { kind: 'close', agent }, n };
  return { group: { kind: 'slot', agent, seq: number(parts[1], maxSeq) }, n };
}
