/**
 * Completing a prefix of JSON text to a known value. A tool call's input streams as pieces of the
 * model's own JSON text (spacing and escapes as the model wrote them); once the call is stored,
 * only the parsed input is known. The stream ends the call's arguments with the text that makes
 * "what streamed + the rest" parse to exactly the stored input (docs/events.md, "How the
 * stream is derived").
 */
import { isDeepStrictEqual } from 'node:util';

/** The prefix cannot be the start of any JSON text whose value is the one asked for. */
class Mismatch extends Error {}

/**
 * The text that, appended to `prefix`, gives JSON text whose value is `value`: `''` when the
 * prefix is already all of it, `undefined` when no text can (the prefix says something else).
 */
export function completeJson(prefix: string, value: unknown): string | undefined {
  let rest: string;
  try {
    rest = new PrefixWalk(prefix).complete(value);
  } catch (error) {
    if (error instanceof Mismatch) return undefined;
    throw error;
  }
  // The walk is checked, not trusted: what it proposes must parse to the value.
  try {
    return isDeepStrictEqual(JSON.parse(prefix + rest), value) ? rest : undefined;
  } catch {
    return undefined;
  }
}

/** Walks the prefix against the value; where the prefix ends, the rest of the value is written out. */
class PrefixWalk {
  private i = 0;

  constructor(private readonly text: string) {}

  complete(value: unknown): string {
    const rest = this.value(value);
    if (rest !== null) return rest;
    this.space();
    if (!this.atEnd()) throw new Mismatch();
    return '';
  }

  private atEnd(): boolean {
    return this.i >= this.text.length;
  }

  private space(): void {
    while (!this.atEnd() && ' \t\n\r'.includes(this.text[this.i] as string)) this.i++;
  }

  /** `null` when the value ends inside the prefix; else the text that completes it (the prefix ended in it). */
  private value(value: unknown): string | null {
    this.space();
    if (this.atEnd()) return JSON.stringify(value);
    if (value === null || typeof value === 'boolean') return this.literal(JSON.stringify(value));
    if (typeof value === 'number') return this.number(value);
    if (typeof value === 'string') return this.string(value);
    if (Array.isArray(value)) return this.array(value);
    if (typeof value === 'object') return this.object(value as Record<string, unknown>);
    throw new Mismatch();
  }

  private literal(word: string): string | null {
    const seen = this.text.slice(this.i, this.i + word.length);
    if (!word.startsWith(seen)) throw new Mismatch();
    this.i += seen.length;
    return seen.length < word.length ? word.slice(seen.length) : null;
  }

  private number(value: number): string | null {
    const start = this.i;
    while (!this.atEnd() && /[-+0-9.eE]/.test(this.text[this.i] as string)) this.i++;
    const token = this.text.slice(start, this.i);
    const canonical = JSON.stringify(value);
    if (this.atEnd()) {
      // The number may go on: complete it the canonical way, or end it here if it is whole.
      if (canonical.startsWith(token)) return canonical.slice(token.length);
      if (isNumber(token) && Number(token) === value) return '';
      throw new Mismatch();
    }
    if (!isNumber(token) || Number(token) !== value) throw new Mismatch();
    return null;
  }

  private string(value: string): string | null {
    if (this.text[this.i] !== '"') throw new Mismatch();
    this.i++;
    let k = 0;
    const restOf = (from: number) => JSON.stringify(value.slice(from)).slice(1);
    while (!this.atEnd()) {
      const ch = this.text[this.i] as string;
      if (ch === '"') {
        if (k !== value.length) throw new Mismatch();
        this.i++;
        return null;
      }
      if (k >= value.length) throw new Mismatch();
      if (ch !== '\\') {
        if (ch !== value[k]) throw new Mismatch();
        this.i++;
        k++;
        continue;
      }
      const code = value.charCodeAt(k);
      const escape = this.text.slice(this.i + 1, this.i + 6);
      if (escape === '') {
        // The prefix ends on the backslash: any character can follow as \uXXXX.
        this.i = this.text.length;
        return `u${hex4(code)}${restOf(k + 1)}`;
      }
      if (escape[0] === 'u') {
        const digits = escape.slice(1);
        if (!/^[0-9a-fA-F]*$/.test(digits)) throw new Mismatch();
        if (digits.length < 4) {
          if (!hex4(code).startsWith(digits.toLowerCase())) throw new Mismatch();
          this.i = this.text.length;
          return `${hex4(code).slice(digits.length)}${restOf(k + 1)}`;
        }
        if (Number.parseInt(digits, 16) !== code) throw new Mismatch();
        this.i += 6;
        k++;
        continue;
      }
      const decoded = simpleEscapes[escape[0] as string];
      if (decoded === undefined || decoded !== value[k]) throw new Mismatch();
      this.i += 2;
      k++;
    }
    return restOf(k);
  }

  private array(value: unknown[]): string | null {
    if (this.text[this.i] !== '[') throw new Mismatch();
    this.i++;
    const after = (from: number) => `${value.slice(from).map((v) => JSON.stringify(v)).join(',')}]`;
    this.space();
    if (this.atEnd()) return after(0);
    if (this.text[this.i] === ']') {
      if (value.length !== 0) throw new Mismatch();
      this.i++;
      return null;
    }
    for (let k = 0; ; k++) {
      if (k >= value.length) throw new Mismatch();
      const rest = this.value(value[k]);
      if (rest !== null) return rest + (k + 1 < value.length ? `,${after(k + 1)}` : ']');
      this.space();
      if (this.atEnd()) return k + 1 < value.length ? `,${after(k + 1)}` : ']';
      const ch = this.text[this.i];
      this.i++;
      if (ch === ']') {
        if (k + 1 !== value.length) throw new Mismatch();
        return null;
      }
      if (ch !== ',' || k + 1 >= value.length) throw new Mismatch();
      this.space();
      if (this.atEnd()) return after(k + 1);
    }
  }

  private object(value: Record<string, unknown>): string | null {
    if (this.text[this.i] !== '{') throw new Mismatch();
    this.i++;
    const keys = Object.keys(value);
    const member = (key: string) => `${JSON.stringify(key)}:${JSON.stringify(value[key])}`;
    const after = (from: number) => `${keys.slice(from).map(member).join(',')}}`;
    this.space();
    if (this.atEnd()) return after(0);
    if (this.text[this.i] === '}') {
      if (keys.length !== 0) throw new Mismatch();
      this.i++;
      return null;
    }
    for (let m = 0; ; m++) {
      const key = keys[m];
      if (key === undefined) throw new Mismatch();
      const more = (from: number) => (from < keys.length ? `,${after(from)}` : '}');
      const keyRest = this.string(key);
      if (keyRest !== null) return `${keyRest}:${JSON.stringify(value[key])}${more(m + 1)}`;
      this.space();
      if (this.atEnd()) return `:${JSON.stringify(value[key])}${more(m + 1)}`;
      if (this.text[this.i] !== ':') throw new Mismatch();
      this.i++;
      const rest = this.value(value[key]);
      if (rest !== null) return rest + more(m + 1);
      this.space();
      if (this.atEnd()) return more(m + 1);
      const ch = this.text[this.i];
      this.i++;
      if (ch === '}') {
        if (m + 1 !== keys.length) throw new Mismatch();
        return null;
      }
      if (ch !== ',' || m + 1 >= keys.length) throw new Mismatch();
      this.space();
      if (this.atEnd()) return after(m + 1);
      if (this.text[this.i] !== '"') throw new Mismatch();
    }
  }
}

const simpleEscapes: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

function hex4(code: number): string {
  return code.toString(16).padStart(4, '0');
}

function isNumber(token: string): boolean {
  return /^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$/.test(token);
}
