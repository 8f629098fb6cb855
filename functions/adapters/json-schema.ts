/** Tool input schemas (JSON Schema) compiled with Ajv: at synth, and when a function loads. */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

const ajv = new Ajv2020({ allErrors: true, strict: false });

/**
 * A validator for a tool's input schema. A `$schema` naming another draft (draft-07 is what most
 * generators write) is dropped: Ajv 2020 would refuse the unknown meta-schema, and the keywords a
 * tool schema uses mean the same in both. Throws, naming the tool, when the schema is not valid.
 */
export function compileToolSchema(name: string, schema: Record<string, unknown>): ValidateFunction {
  const { $schema: _dialect, ...rest } = schema;
  try {
    return ajv.compile(rest);
  } catch (error) {
    throw new Error(`the inputSchema of tool "${name}" is not a valid JSON Schema (${error instanceof Error ? error.message : String(error)})`);
  }
}
