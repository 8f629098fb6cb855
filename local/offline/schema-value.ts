/**
 * A value that validates against a JSON Schema, built from the schema itself: how the offline
 * model answers a `final_answer` tool (structured output) or fills an external tool's input.
 * Minimal (required properties only, the fewest items), except where the run has something to
 * say: a number it computed goes to numeric fields, its answer text to text fields.
 */
import { isRecord } from './request.js';

/** What the run found out, to put into the fields that take it. */
export interface Hints {
  /** A computed result, for numeric fields (and answer-like ones of any type). */
  number?: number;
  /** The run's answer in words, for text fields. */
  text?: string;
}

/** Property names that ask for the answer itself. */
const answerNames = /^(?:answer|result|value|output|product|sum|total|difference|quotient|response|text|summary|query|goal|input|content|message|explanation)$/i;

/** A value `schema` accepts (as far as its keywords go: `pattern` is not generated). */
export function valueFor(schema: unknown, hints: Hints = {}, root: unknown = schema, name = ''): unknown {
  if (schema === true || schema === undefined) return hints.text ?? null;
  if (!isRecord(schema)) return null;
  const resolved = resolveRef(schema, root);
  if (resolved !== schema) return valueFor(resolved, hints, root, name);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum.find((v) => v === hints.number || v === hints.text) ?? schema.enum[0];
  if (Array.isArray(schema.allOf)) return valueFor(mergeAll([schema, ...schema.allOf]), hints, root, name);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length) return valueFor({ ...withoutKey(schema, key), ...asRecord(options[0]) }, hints, root, name);
  }
  switch (typeOf(schema, hints)) {
    case 'object':
      return objectFor(schema, hints, root);
    case 'array': {
      const count = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: count }, () => valueFor(schema.items ?? {}, hints, root, name));
    }
    case 'integer':
    case 'number':
      return numberFor(schema, typeOf(schema, hints) === 'integer', hints);
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return stringFor(schema, hints, name);
  }
}

function objectFor(schema: Record<string, unknown>, hints: Hints, root: unknown): Record<string, unknown> {
  const properties = asRecord(schema.properties);
  const required = Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === 'string') : [];
  const names = [...new Set([...required, ...Object.keys(properties).filter((k) => answerNames.test(k))])];
  return Object.fromEntries(names.map((key) => [key, valueFor(properties[key] ?? {}, hints, root, key)]));
}

function numberFor(schema: Record<string, unknown>, integer: boolean, hints: Hints): number {
  const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + (integer ? 1 : 0.5) : undefined;
  const max = typeof schema.maximum === 'number' ? schema.maximum : typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - (integer ? 1 : 0.5) : undefined;
  let value = hints.number ?? min ?? 0;
  if (integer) value = Math.round(value);
  if (min !== undefined && value < min) value = integer ? Math.ceil(min) : min;
  if (max !== undefined && value > max) value = integer ? Math.floor(max) : max;
  const step = typeof schema.multipleOf === 'number' && schema.multipleOf > 0 ? schema.multipleOf : undefined;
  return step ? Math.round(value / step) * step : value;
}

function stringFor(schema: Record<string, unknown>, hints: Hints, name: string): string {
  const formats: Record<string, string> = {
    'date-time': new Date(0).toISOString(),
    date: '1970-01-01',
    time: '00:00:00Z',
    email: 'offline@example.com',
    uri: 'https://example.com/',
    uuid: '00000000-0000-4000-8000-000000000000',
  };
  const format = typeof schema.format === 'string' ? formats[schema.format] : undefined;
  let value = format ?? (answerNames.test(name) || !name ? hints.text : undefined) ?? hints.text ?? 'offline';
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  if (value.length < minLength) value = value.padEnd(minLength, '.');
  return Array.from(value).slice(0, maxLength).join('');
}

/** The schema's type: its `type`, the first of a list (a numeric one when there is a number to give), or what its keywords imply. */
function typeOf(schema: Record<string, unknown>, hints: Hints): string {
  const { type } = schema;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const types = type.filter((t): t is string => typeof t === 'string');
    const numeric = types.find((t) => t === 'integer' || t === 'number');
    return (hints.number !== undefined && numeric) || types.find((t) => t !== 'null') || types[0] || 'null';
  }
  if (isRecord(schema.properties) || Array.isArray(schema.required)) return 'object';
  if ('items' in schema) return 'array';
  return 'string';
}

/** A local `$ref` (`#/$defs/x`, `#/definitions/x`) resolved against the root; the schema itself otherwise. */
function resolveRef(schema: Record<string, unknown>, root: unknown): Record<string, unknown> {
  if (typeof schema.$ref !== 'string' || !schema.$ref.startsWith('#')) return schema;
  let target: unknown = root;
  for (const part of schema.$ref.slice(1).split('/').filter(Boolean)) target = isRecord(target) ? target[decodeURIComponent(part.replaceAll('~1', '/').replaceAll('~0', '~'))] : undefined;
  return isRecord(target) ? { ...withoutKey(schema, '$ref'), ...target } : withoutKey(schema, '$ref');
}

/** Schemas of an `allOf` as one: their properties and required lists together. */
function mergeAll(schemas: unknown[]): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const schema of schemas.map(asRecord)) {
    Object.assign(merged, withoutKey(schema, 'allOf'));
    Object.assign(properties, asRecord(schema.properties));
    if (Array.isArray(schema.required)) required.push(...schema.required.filter((k): k is string => typeof k === 'string'));
  }
  return { ...merged, ...(Object.keys(properties).length ? { properties } : {}), ...(required.length ? { required } : {}) };
}

function asRecord(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function withoutKey(schema: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _dropped, ...rest } = schema;
  return rest;
}
