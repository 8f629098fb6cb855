/**
 * Calls of agents at the inference step: each call of an agent the step's answer makes starts a
 * child run (made here, once per call), which the loop runs as a nested execution; a call that
 * may start none (too deep, bad input) is answered here with a tool error and runs nothing.
 *
 * It runs at `settle`, after the turn was counted: a turn that spends the run's budget stops the
 * run there (its calls answered as not run), and must leave no child run behind, marked running
 * with no execution to end it.
 */
import { toolResult, toolUses } from '../model/messages.js';
import type { InferenceFeature } from '../steps/hooks.js';
import { startChild } from './children.js';

export const childrenFeature: InferenceFeature = {
  name: 'children',
  async settle(answer) {
    const agents = answer.profile.agentTools;
    const calls = answer.calls.filter((call) => agents.has(call.name));
    if (calls.length === 0) return;
    const positions = toolUses(answer.message).map((call) => call.id);
    const { deps } = answer;
    for (const call of calls) {
      const started = await startChild(answer.input.runId, call, { runs: deps.runs, agentStore: deps.agentStore, clock: deps.clock });
      if ('child' in started) {
        answer.children.set(call.id, started.child);
        continue;
      }
      answer.calls = answer.calls.filter((c) => c.id !== call.id);
      await deps.conversations.putResult(answer.conversationId, answer.message.seq, positions.indexOf(call.id), toolResult(call.id, started.refused, true), { ran: false });
    }
  },
};
