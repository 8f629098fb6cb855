/**
 * Arithmetic in a goal, for the offline model: "What is 1234 times 5678?", "add 3 and 4",
 * "(2 + 3) * 4", "15% of 80". The expression is found and parsed here; the offline model then
 * works it out with calculator calls, one operation a call, as a model told to use the
 * calculator would.
 */

export type Operation = 'add' | 'subtract' | 'multiply' | 'divide';

/** A parsed expression: a number, or an operation on two expressions. */
export type Expr = { kind: 'number'; value: number } | { kind: 'op'; op: Operation; left: Expr; right: Expr };

const number = String.raw`-?\d+(?:\.\d+)?`;

/** Phrasings with the operation first, rewritten as infix (`$1`, `$2`: the operands). */
const prefixForms: [RegExp, string][] = [
  [new RegExp(String.raw`\badd\s+(${number})\s+to\s+(${number})`, 'g'), '($2 + $1)'],
  [new RegExp(String.raw`\b(?:add|the sum of|sum of)\s+(${number})\s+(?:and|plus|with)\s+(${number})`, 'g'), '($1 + $2)'],
  [new RegExp(String.raw`\bsubtract\s+(${number})\s+from\s+(${number})`, 'g'), '($2 - $1)'],
  [new RegExp(String.raw`\bdifference (?:between|of)\s+(${number})\s+and\s+(${number})`, 'g'), '($1 - $2)'],
  [new RegExp(String.raw`\b(?:multiply|the product of|product of)\s+(${number})\s+(?:by|and|with|times)\s+(${number})`, 'g'), '($1 * $2)'],
  [new RegExp(String.raw`\b(?:divide)\s+(${number})\s+by\s+(${number})`, 'g'), '($1 / $2)'],
  [new RegExp(String.raw`\b(?:the quotient of|quotient of)\s+(${number})\s+(?:and|by)\s+(${number})`, 'g'), '($1 / $2)'],
  [new RegExp(String.raw`(${number})\s*(?:%|percent)\s+of\s+(${number})`, 'g'), '($1 * $2 / 100)'],
  [new RegExp(String.raw`\b(?:the square of|square of)\s+(${number})`, 'g'), '($1 * $1)'],
  [new RegExp(String.raw`(${number})\s+squared\b`, 'g'), '($1 * $1)'],
];

/** Operator words and signs, rewritten as the ASCII operators. */
const operatorWords: [RegExp, string][] = [
  [/\bmultiplied by\b|\btimes\b|×|·/g, ' * '],
  [/(?<=\d)\s*x\s*(?=-?\d)/g, ' * '],
  [/\bdivided by\b|\bover\b|÷/g, ' / '],
  [/\bplus\b/g, ' + '],
  [/\bminus\b|−/g, ' - '],
];

/** The arithmetic expression a goal asks for, with the most operations if it has several; none without an operation. */
export function findExpression(goal: string): Expr | undefined {
  let text = goal
    .toLowerCase()
    // Tags, dates and ids are not arithmetic: `[[run-1-2]]`, `2026-11-23`.
    .replace(/\[\[[^\]]*\]\]|\[script:[^\]]*\]|\d+(?:-\d+){2,}/g, ' ')
    .replace(/(\d),(?=\d{3}\b)/g, '$1');
  for (const [pattern, infix] of [...prefixForms, ...operatorWords]) text = text.replace(pattern, infix);
  // "17 divided by 4, plus 3": a comma before an operator goes on with the same expression.
  text = text.replace(/,(?=\s*[-+*/])/g, ' ');
  let best: { expr: Expr; ops: number } | undefined;
  for (const match of text.matchAll(/[-+*/().\d\s]+/g)) {
    const candidate = match[0].replace(/^[\s.]+|[\s.]+$/g, '');
    const expr = parse(candidate);
    const ops = expr ? countOps(expr) : 0;
    if (expr && ops > 0 && ops > (best?.ops ?? 0)) best = { expr, ops };
  }
  return best?.expr;
}

function countOps(expr: Expr): number {
  return expr.kind === 'number' ? 0 : 1 + countOps(expr.left) + countOps(expr.right);
}

type Token = { kind: 'number'; value: number } | { kind: 'sign'; sign: string };

function tokenize(text: string): Token[] | undefined {
  const tokens: Token[] = [];
  const pattern = /\s*(\d+(?:\.\d+)?|[-+*/()])/y;
  let at = 0;
  while (at < text.length) {
    pattern.lastIndex = at;
    const match = pattern.exec(text);
    if (!match?.[1]) return text.slice(at).trim() ? undefined : tokens;
    const piece = match[1];
    tokens.push(/\d/.test(piece) ? { kind: 'number', value: Number(piece) } : { kind: 'sign', sign: piece });
    at = pattern.lastIndex;
  }
  return tokens;
}

/** Parses `+ - * /` with the usual precedence, parentheses and unary minus; undefined if it is not one expression. */
function parse(text: string): Expr | undefined {
  const tokens = tokenize(text);
  if (!tokens?.length) return undefined;
  let at = 0;
  const peek = () => tokens[at];
  const sign = (s: string) => {
    const token = peek();
    if (token?.kind === 'sign' && token.sign === s) {
      at++;
      return true;
    }
    return false;
  };
  const primary = (): Expr | undefined => {
    if (sign('(')) {
      const inner = sum();
      return inner && sign(')') ? inner : undefined;
    }
    if (sign('-')) {
      const operand = primary();
      if (!operand) return undefined;
      return operand.kind === 'number' ? { kind: 'number', value: -operand.value } : { kind: 'op', op: 'subtract', left: { kind: 'number', value: 0 }, right: operand };
    }
    const token = peek();
    if (token?.kind !== 'number') return undefined;
    at++;
    return { kind: 'number', value: token.value };
  };
  const binary = (operand: () => Expr | undefined, ops: Record<string, Operation>) => (): Expr | undefined => {
    let left = operand();
    for (;;) {
      const token = peek();
      const op = token?.kind === 'sign' ? ops[token.sign] : undefined;
      if (!left || !op) return left;
      at++;
      const right = operand();
      if (!right) return undefined;
      left = { kind: 'op', op, left, right };
    }
  };
  const product = binary(primary, { '*': 'multiply', '/': 'divide' });
  const sum = binary(product, { '+': 'add', '-': 'subtract' });
  const expr = sum();
  return expr && at === tokens.length ? expr : undefined;
}

const symbols: Record<Operation, string> = { add: '+', subtract: '-', multiply: '×', divide: '÷' };
const precedence: Record<Operation, number> = { add: 1, subtract: 1, multiply: 2, divide: 2 };

/** An expression as a person writes it: `1234 × 5678`, `(2 + 3) × 4`. */
export function showExpr(expr: Expr): string {
  if (expr.kind === 'number') return String(expr.value);
  const side = (child: Expr, right: boolean) => {
    const text = showExpr(child);
    if (child.kind === 'number') return text;
    const lower = precedence[child.op] < precedence[expr.op] || (right && precedence[child.op] === precedence[expr.op]);
    return lower ? `(${text})` : text;
  };
  return `${side(expr.left, false)} ${symbols[expr.op]} ${side(expr.right, true)}`;
}

/** A result as a person reads it: `7,006,652`, `0.333333`. */
export function showNumber(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 6 });
}
