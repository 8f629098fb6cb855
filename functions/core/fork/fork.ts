/**
 * Forks (docs/http-api.md, "Forks"): a new single-mode run of the caller that starts from one
 * agent's conversation of another run, cut before one of its user messages, and from a copy of
 * that run's workspace. Then it goes on with a new goal, or with the message it was cut at again
 * ("retry from here"). The source is only read: everything is copied to the fork's own keys.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import type { Caller } from '../callers/types.js';
import { type StoredMessage } from '../conversation/types.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { type RunRequestRules } from '../intake/types.js';
import { createRun } from '../intake/create.js';
import { runRequestFields } from '../intake/request.js';
import { isText } from '../model/messages.js';
import { AgentName } from '../agents/types.js';
import type { ForkedFrom, Run } from '../runs/types.js';
import { truncatedTextNote } from '../conversation/next-message.js';
import { type ForkDeps, ForkTooLarge, InvalidFork, maxForkFiles, maxForkItems } from './types.js';

/** The body of `POST /runs/{runId}/fork`, with the deployment's list of models applied when it has one. */
export function forkBody(rules: RunRequestRules = {}) {
  const fields = runRequestFields(rules);
  return z
    .object({
      fromSeq: z
        .number()
        .int()
        .nonnegative()
        .meta({ description: "The `seq` of a user message of the source's transcript: the fork keeps the messages before it." }),
      goal: fields.goal.optional().meta({ description: 'What the fork is sent after the copied messages; by default the message at `fromSeq` again ("retry from here").' }),
      agent: AgentName.optional().meta({ description: "Whose conversation to fork: required for a multi-agent run (architect or coder); a single-mode run's is single." }),
      maxIterations: fields.maxIterations,
      model: fields.model.meta({ description: "The fork's model; by default the source's." }),
    })
    .strict();
}

/** The body of the fork route, any model allowed (the OpenAPI document's schema). */
export const ForkBody = forkBody();

export type ForkBody = z.infer<typeof ForkBody>;

/**
 * Starts a fork of `source` (a run the caller may read) for the caller; returns what the route
 * answers. Validates against the source's stored conversation, refuses a source too large to copy
 * before anything is written, then creates the run through the intake (quota, idempotency), which
 * makes the copy before the fork's record exists.
 */
export async function forkRun(
  source: Run,
  body: ForkBody,
  deps: ForkDeps,
  options: { caller: Caller; idempotencyKey?: string },
): Promise<Pick<Run, 'runId' | 'status' | 'phase'>> {
  const agent = forkedAgent(source, body.agent);
  const sourceConversation = conversationIdOf(source.runId, agent, source.sessionId, source.owner);
  const conversation = await deps.conversations.load(sourceConversation);
  const at = cutAt(conversation.messages, source.runId, body.fromSeq);
  const goal = body.goal ?? retryGoal(at);

  const kept = conversation.messages.filter((m) => m.seq < body.fromSeq);
  const items = kept.reduce((sum, m) => sum + 1 + m.content.filter((b) => b.type === 'tool_result').length, 0);
  if (items > maxForkItems) {
    throw new ForkTooLarge(`The conversation before message ${body.fromSeq} has ${items} items; a fork copies at most ${maxForkItems}.`);
  }
  const files = await deps.workspaceFor(source.runId).list('', maxForkFiles);
  if (files.truncated) {
    throw new ForkTooLarge(`The workspace of run ${source.runId} holds more than ${maxForkFiles} files; a fork copies at most ${maxForkFiles}.`);
  }
  const paths = files.entries.map((e) => e.path);

  const from: ForkedFrom = { runId: source.runId, agent, seq: body.fromSeq };
  const model = body.model ?? source.model;
  return createRun(
    {
      goal,
      mode: 'single',
      maxIterations: body.maxIterations,
      ...(model ? { model } : {}),
      // A fork keeps the source's reviewers: its calls of those tools wait for a decision too.
      ...(source.approvals ? { approvals: source.approvals } : {}),
    },
    deps,
    {
      caller: options.caller,
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
      fork: {
        from,
        requestHash: requestHash(source.runId, body),
        copy: async (runId) => {
          await Promise.all([
            deps.forks.conversation(sourceConversation, conversationIdOf(runId, 'single'), body.fromSeq),
            deps.forks.workspace(source.runId, runId, paths),
          ]);
        },
      },
    },
  );
}

/** The agent whose conversation is forked: named for a multi-agent run, `single` for a single-mode one. */
function forkedAgent(source: Run, agent: AgentName | undefined): AgentName {
  if (source.mode === 'single') {
    if (agent !== undefined && agent !== 'single') throw new InvalidFork('agent', `must be single (or left out): run ${source.runId} is a single-mode run`);
    return 'single';
  }
  if (agent === undefined) throw new InvalidFork('agent', `is required: run ${source.runId} is a multi-agent run; name architect or coder`);
  if (agent === 'single') throw new InvalidFork('agent', `must be architect or coder: run ${source.runId} is a multi-agent run`);
  return agent;
}

/**
 * The message the fork is cut at: a user message of this run that states a turn, not one that
 * carries tool results (those belong to the turn before them).
 */
function cutAt(messages: readonly StoredMessage[], runId: string, seq: number): StoredMessage {
  const message = messages.find((m) => m.seq === seq);
  // A session's conversation holds other runs' messages too; the fork names one of this run's, as its transcript shows them.
  if (!message || message.meta.runId !== runId) throw new InvalidFork('fromSeq', `names no message of run ${runId} (no message ${seq} in its transcript)`);
  if (message.role !== 'user') throw new InvalidFork('fromSeq', `names message ${seq}, the model's answer; fork from a user message`);
  if (message.content.some((b) => b.type === 'tool_result')) {
    throw new InvalidFork('fromSeq', `names message ${seq}, which carries tool results; fork from a user message that states a turn`);
  }
  return message;
}

/** What "retry from here" sends again: the message's own text, without a note the loop adds by itself. */
function retryGoal(message: StoredMessage): string {
  const text = message.content
    .filter(isText)
    .map((b) => b.text)
    .filter((t) => t !== truncatedTextNote)
    .join('\n')
    .trim();
  if (!text) throw new InvalidFork('goal', `is required: message ${message.seq} has no text of its own to send again`);
  return text;
}

/** The fork request as the idempotency check sees it: the source and the body, keys sorted. */
function requestHash(sourceRunId: string, body: ForkBody): string {
  const request: Record<string, unknown> = { ...body, forkOf: sourceRunId };
  const canonical = JSON.stringify(Object.keys(request).sort().map((k) => [k, request[k]]));
  return createHash('sha256').update(canonical).digest('hex');
}
