import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completeJson } from '../../functions/core/stream/json-prefix.js';

/** JSON text of a value as a model may write it: compact, indented, or with characters escaped as \uXXXX. */
const written = fc.tuple(fc.jsonValue(), fc.constantFrom<(v: unknown) => string>(
  (v) => JSON.stringify(v),
  (v) => JSON.stringify(v, null, 1),
  (v) => JSON.stringify(v, null, '\t'),
  (v) => JSON.stringify(v).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
)).filter(([v]) => JSON.stringify(v) !== undefined)
  // As JSON carries it: a -0 anywhere in the value is written, and read back, as 0.
  .map(([v, write]) => ({ value: JSON.parse(JSON.stringify(v)) as unknown, write }))
  .map(({ value, write }) => ({ value, text: write(value) }));

describe('completeJson', () => {
  it('completes every prefix of JSON text to exactly the value it was written from', () => {
    fc.assert(
      fc.property(written, fc.nat(), ({ value, text }, at) => {
        const prefix = text.slice(0, at % (text.length + 1));
        const rest = completeJson(prefix, value);
        expect(rest).toBeDefined();
        expect(JSON.parse(prefix + rest)).toStrictEqual(value);
        if (prefix === text) expect(rest).toBe('');
      }),
      { numRuns: 500 },
    );
  });

  it('never proposes text that parses to anything but the value asked for', () => {
    fc.assert(
      fc.property(written, fc.jsonValue(), fc.nat(), ({ text }, other, at) => {
        const prefix = text.slice(0, at % (text.length + 1));
        const rest = completeJson(prefix, other);
        if (rest !== undefined) expect(JSON.parse(prefix + rest)).toStrictEqual(other);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a prefix that says something else', () => {
    expect(completeJson('{"path": "a', { path: 'b.md' })).toBeUndefined();
    expect(completeJson('{"content": "x", "pa', { path: 'a', content: 'x' })).toBeUndefined();
    expect(completeJson('[1, 2', [1])).toBeUndefined();
    expect(completeJson('{"path": "a.md"}x', { path: 'a.md' })).toBeUndefined();
  });

  it('completes mid-escape, mid-number and mid-literal', () => {
    expect(completeJson('{"t": "a\\', { t: 'a"b' })).toBe('u0022b"}');
    expect(completeJson('{"t": "\\u00', { t: 'é' })).toBe('e9"}');
    expect(completeJson('{"n": 12', { n: 123.5 })).toBe('3.5}');
    expect(completeJson('{"n": 12', { n: 12 })).toBe('}');
    expect(completeJson('[tr', [true, null])).toBe('ue,null]');
    expect(completeJson('', { a: 1 })).toBe('{"a":1}');
  });
});
