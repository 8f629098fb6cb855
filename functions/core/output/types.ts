/**
 * Structured output's limits and records.
 */
import { type ToolResultBlock } from '../model/messages.js';

/**
 * A schema is at most 16 KiB of JSON (it is sent with every request and kept on the run record);
 * an answer at most 64 KiB (it is kept on the run record, whose item must stay far below
 * DynamoDB's 400 KB: invariant 2).
 */
export const outputLimits = { schemaBytes: 16 * 1024, answerBytes: 64 * 1024 };

/** The tool the answering agent calls with the run's final answer. */
export const finalAnswerTool = 'final_answer';

/** How a turn's `final_answer` calls were answered, and the accepted answer if there is one. */
export interface AnswerCheck {
  /** Results for the turn's `final_answer` calls, by call position; `ran: false` for those not accepted. */
  results: { index: number; result: ToolResultBlock; ran: boolean }[];
  /** The validated answer, when the turn's only call gave one. */
  output?: Record<string, unknown>;
}
