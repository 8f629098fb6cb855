/**
 * Structured output (docs/http-api.md, "Structured output"): a run may ask for its final
 * answer as JSON matching a JSON Schema. The agent that answers the run (single, or the Coder) is
 * offered a `final_answer` tool whose input schema is the caller's schema, and the run succeeds
 * only once it calls it, alone, with input that validates. A tool is the provider-neutral way to
 * ask for JSON: the Anthropic API and Bedrock both take tools, and the answer arrives in the same
 * turn structure the loop already handles. An invalid answer goes back to the model as a tool
 * error naming each problem; a turn that ends without the tool gets a message asking for it.
 */
import * as z from 'zod';
import { describeErrors, validatorOf } from '../tools/json-schema.js';
import type { ToolSpec } from '../model/types.js';
import { type ToolUseBlock, toolResult } from '../model/messages.js';
import { type AnswerCheck, finalAnswerTool, outputLimits } from './types.js';

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;

/** What is wrong with a caller's schema, one line a problem; empty when it will do. */
export function schemaProblems(schema: Record<string, unknown>): string[] {
  const size = bytes(schema);
  if (size > outputLimits.schemaBytes) return [`must be at most ${outputLimits.schemaBytes} bytes of JSON, not ${size}`];
  // A tool's input is always a JSON object, for the Anthropic API and Bedrock alike, and the answer is the tool's input.
  if (schema.type !== 'object') return ['must describe an object: "type": "object" at the top (the answer is the input of a tool, which is an object)'];
  try {
    validatorOf(schema);
    return [];
  } catch (error) {
    return [`is not a JSON Schema this service can use: ${error instanceof Error ? error.message : String(error)}`];
  }
}

/** `output` of `POST /runs`: the JSON Schema the run's final answer must match. */
export const OutputRequest = z
  .object({
    schema: z
      .record(z.string(), z.unknown())
      .superRefine((schema, ctx) => {
        for (const message of schemaProblems(schema)) ctx.addIssue({ code: 'custom', message });
      })
      .meta({ description: `A JSON Schema (draft 2020-12) with "type": "object" at the top; at most ${outputLimits.schemaBytes} bytes of JSON.` }),
  })
  .strict()
  .meta({ id: 'OutputRequest', description: 'Ask for the final answer as JSON: the run succeeds only with an answer that validates, in `result.output`.' });

export type OutputRequest = z.infer<typeof OutputRequest>;

/** The `final_answer` tool for a run's schema (its `$schema` left out, as for the built-in tools). */
export function finalAnswerSpec(schema: Record<string, unknown>): ToolSpec {
  const { $schema: _ignored, ...inputSchema } = schema;
  return {
    name: finalAnswerTool,
    description:
      'Give the final answer of this run. Call it once, alone in its turn, when the work is done, with the answer as its input: ' +
      'it must match this tool\'s input schema. If it does not, you get the problems back and can call it again. ' +
      'The run ends when an answer is accepted; text you write in that turn is kept as a summary.',
    inputSchema,
  };
}

/** Appended to the system prompt of the agent that must answer with `final_answer`. */
export const finalAnswerSystemNote =
  '\n\nThis run needs its final answer as structured data: when the goal is done, call final_answer once, alone, ' +
  'with the answer as its input (it must match the tool\'s schema). Ending your turn without it does not finish the run.';

/** What the model is told after a turn that ended without `final_answer`. */
export const finalAnswerNudge =
  'This run is not finished: its final answer must be given by calling the final_answer tool, alone, with input ' +
  'that matches its schema. Call final_answer now.';

/**
 * Answers the `final_answer` calls of a turn: accepted only when it is the turn's only call and
 * its input validates and fits; otherwise a tool error the model can act on.
 */
export function checkAnswer(calls: readonly ToolUseBlock[], schema: Record<string, unknown>): AnswerCheck {
  const check: AnswerCheck = { results: [] };
  calls.forEach((call, index) => {
    if (call.name !== finalAnswerTool) return;
    const refuse = (message: string) => check.results.push({ index, result: toolResult(call.id, message, true), ran: false });
    if (calls.length > 1) {
      refuse('Not accepted: call final_answer alone, in a turn of its own, once the other tools have returned.');
      return;
    }
    const size = bytes(call.input ?? null);
    if (size > outputLimits.answerBytes) {
      refuse(`Not accepted: the answer is ${size} bytes of JSON; at most ${outputLimits.answerBytes} are kept. Give a shorter answer.`);
      return;
    }
    const validate = validatorOf(schema);
    if (!validate(call.input)) {
      refuse(`Not accepted: the answer does not match the schema. ${describeErrors(validate.errors ?? [], '(answer)')}. Fix these and call final_answer again.`);
      return;
    }
    check.results.push({ index, result: toolResult(call.id, 'Accepted: this is the final answer of the run.'), ran: true });
    check.output = call.input as Record<string, unknown>;
  });
  return check;
}
