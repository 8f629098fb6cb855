/**
 * JSON Schema checks (Ajv, draft 2020-12) for schemas that arrive at run time: a run's structured
 * output schema, and the input schemas of external tools when a reviewer edits a call's input.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * A fresh validator per schema: Ajv keeps every schema it compiled (and refuses a second one
 * with the same `$id`), so one shared instance would grow with every run a function serves.
 * `format` is an annotation, as JSON Schema 2020-12 has it by default, and unknown keywords are
 * allowed, as the specification allows them. A `$schema` naming another draft is dropped, as for
 * Lambda tools' schemas (`adapters/tools/lambda.ts`): the keywords these schemas use mean the
 * same in draft-07.
 */
function compile(schema: Record<string, unknown>): ValidateFunction {
  const { $schema: _dialect, ...rest } = schema;
  return new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false }).compile(rest);
}

const compiled = new Map<string, ValidateFunction>();

/** The validator of a schema, compiled once per warm function (a few schemas kept); throws when the schema is not valid. */
export function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = compile(schema);
    if (compiled.size >= 16) compiled.delete(compiled.keys().next().value ?? '');
    compiled.set(key, validate);
  }
  return validate;
}

/** Ajv's errors as one line a model can act on: `/path: problem; /path: problem`, `root` naming the value itself. */
export function describeErrors(errors: readonly ErrorObject[], root: string): string {
  return errors
    .slice(0, 20)
    .map((e) => {
      const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: unknown }).additionalProperty)})` : '';
      return `${e.instancePath || root}: ${e.message ?? e.keyword}${extra}`;
    })
    .join('; ');
}

/**
 * Ajv's errors as issues naming the field at fault, as the API reports a body's (`input.text`): a
 * missing or unexpected property is named itself, not the object that lacks or has it.
 */
export function errorIssues(errors: readonly ErrorObject[], root: string): { path: string; message: string }[] {
  return errors.slice(0, 20).map((e) => {
    const params = e.params as { missingProperty?: unknown; additionalProperty?: unknown };
    const field = e.keyword === 'required' ? params.missingProperty : e.keyword === 'additionalProperties' ? params.additionalProperty : undefined;
    const pointer = `${e.instancePath}${field === undefined ? '' : `/${String(field)}`}`;
    // JSON Pointer segments, unescaped (RFC 6901: ~1 is "/", ~0 is "~").
    const segments = pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    return { path: [root, ...segments].join('.'), message: e.message ?? e.keyword };
  });
}
