/**
 * The docs hold together and hold to the code: the files they name exist, their links reach a
 * heading, the tests they cite exist under the names they give, the layout names the folders and
 * files where they are, the invariants are numbered once each with the tests that hold them, and
 * every place the code cites the docs names a heading, invariant or habit that is there. The
 * README stays a ten-minute read and the architecture page a map.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';

const docs = ['README.md', ...readdirSync('docs').filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
const read = (file: string) => readFileSync(file, 'utf8');

/** A markdown text with its fenced code blocks blanked out (its length kept, so offsets hold). */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, (block) => block.replace(/[^\n]/g, ' '));
}

/** The part of a markdown text under a heading, up to the next heading of its level or above. */
function sectionOf(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`No section "${heading}".`);
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const rest = text.slice(start + heading.length + 2);
  const end = prose(rest).search(new RegExp(`^#{1,${level}} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

/** A heading's text as a citation names it: without inline code marks or a leading number. */
const plain = (heading: string) => heading.replace(/`/g, '').replace(/^\d+\. /, '').trim();

/** The headings of a markdown file, as written. */
function headings(file: string): string[] {
  return [...prose(read(file)).matchAll(/^#{1,6} +(.+?)\s*$/gm)].map((m) => m[1] ?? '');
}

/** GitHub's anchors of a file's headings (a repeated one gets -1, -2, …). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const heading of headings(file)) {
    const base = heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n ? `${base}-${n}` : base);
  }
  return result;
}

/** Whitespace, curly apostrophes and escaped quotes as one writes them in prose. */
const normal = (text: string) => text.replace(/\\'/g, "'").replace(/[‘’]/g, "'").replace(/\s+/g, ' ');

/** Whether a repository path exists; a `*` in its last part matches any characters. */
function pathExists(path: string): boolean {
  const clean = path.replace(/\/$/, '');
  if (!clean.includes('*')) return existsSync(clean);
  const dir = posix.dirname(clean);
  const pattern = new RegExp(`^${posix.basename(clean).split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return existsSync(dir) && readdirSync(dir).some((name) => pattern.test(name));
}

/** The invariants of docs/ARCHITECTURE.md: number, title and the text under each. */
function invariants(): { n: number; title: string; body: string }[] {
  const section = sectionOf(read('docs/ARCHITECTURE.md'), '## Invariants');
  return [...section.matchAll(/^### (\d+)\. (.+)\n([\s\S]*?)(?=^### |(?![\s\S]))/gm)].map((m) => ({ n: Number(m[1]), title: m[2] ?? '', body: m[3] ?? '' }));
}

/** The numbered habits of docs/code-habits.md. */
function habits(): number[] {
  return [...read('docs/code-habits.md').matchAll(/^(\d+)\. \*\*/gm)].map((m) => Number(m[1]));
}

/** Every source file whose comments may cite the docs. */
function sources(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = `${dir}/${name}`;
      if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : walk(path);
      return /\.(ts|tsx|mjs|cjs|js)$/.test(name) ? [path] : [];
    });
  const roots = readdirSync('.').filter((name) => /\.(ts|mjs|cjs|js)$/.test(name) && statSync(name).isFile());
  return [...['functions', 'lib', 'local', 'bin', 'console', 'test'].flatMap(walk), ...roots].filter((file) => file !== 'test/unit/docs.test.ts');
}

/** A file's comments, each run of comment lines joined into one line of text. */
function comments(file: string): string {
  const runs: string[] = [];
  let current: string[] = [];
  for (const line of read(file).split('\n')) {
    const whole = /^\s*(?:\/\*\*?|\*\/?|\/\/)\s?(.*)$/.exec(line);
    const trailing = whole ? undefined : /\s\/\/\s(.*)$/.exec(line);
    const text = whole?.[1] ?? trailing?.[1];
    if (text !== undefined) current.push(text);
    if (text === undefined || trailing) {
      if (current.length) runs.push(current.join(' '));
      current = [];
    }
  }
  if (current.length) runs.push(current.join(' '));
  return runs.map((run) => run.replace(/\s+/g, ' ')).join('\n');
}

/** What a citation in `text` names that the docs do not hold, one line each. */
function unresolved(text: string, where: string): string[] {
  const problems: string[] = [];
  const known = new Set(invariants().map((i) => i.n));
  const habitNumbers = new Set(habits());
  const hasHeading = (file: string, heading: string) => headings(file).some((h) => plain(h) === heading);
  for (const m of text.matchAll(/\bdocs\/([\w.-]+\.md)/g)) {
    if (!existsSync(`docs/${m[1]}`)) problems.push(`${where}: docs/${m[1]} does not exist`);
  }
  for (const m of text.matchAll(/\bdocs\/([\w.-]+\.md),? "([^"]+)"/g)) {
    if (existsSync(`docs/${m[1]}`) && !hasHeading(`docs/${m[1]}`, m[2] ?? '')) problems.push(`${where}: docs/${m[1]} has no heading "${m[2]}"`);
  }
  for (const m of text.matchAll(/"([^"]+)",? (?:in )?docs\/([\w.-]+\.md)/g)) {
    problems.push(`${where}: cite a heading after its file, as docs/${m[2]}, "${m[1]}"`);
  }
  for (const m of text.matchAll(/\bdocs\/([\w.-]+\.md),? section (\d+)/g)) {
    if (!headings(`docs/${m[1]}`).some((h) => h.startsWith(`${m[2]}. `))) problems.push(`${where}: docs/${m[1]} has no section ${m[2]}`);
  }
  for (const m of text.matchAll(/\bREADME(?:\.md)?,? "([^"]+)"/g)) {
    if (!hasHeading('README.md', m[1] ?? '')) problems.push(`${where}: README.md has no heading "${m[1]}"`);
  }
  for (const m of text.matchAll(/\binvariants? (\d+(?:(?:, | and )\d+)*)/g)) {
    for (const n of (m[1] ?? '').split(/, | and /).map(Number)) {
      if (!known.has(n)) problems.push(`${where}: there is no invariant ${n} in docs/ARCHITECTURE.md`);
    }
  }
  for (const m of text.matchAll(/\bhabit (\d+)/g)) {
    if (!habitNumbers.has(Number(m[1]))) problems.push(`${where}: there is no habit ${m[1]} in docs/code-habits.md`);
  }
  for (const m of text.matchAll(/\b(habit|invariant)s? [\d, and]+,? (?:in )?(docs\/[\w.-]+\.md)/g)) {
    const home = m[1] === 'habit' ? 'docs/code-habits.md' : 'docs/ARCHITECTURE.md';
    if (m[2] !== home) problems.push(`${where}: ${m[1]}s are in ${home}, not ${m[2]}`);
  }
  return problems;
}

describe('the docs', () => {
  it('keep the README a ten-minute read and the architecture page a map', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(300);
    expect(read('docs/ARCHITECTURE.md').split('\n').length).toBeLessThanOrEqual(500);
  });

  it('name only files and folders that exist', () => {
    const missing = docs.flatMap((file) =>
      [...prose(read(file)).matchAll(/`((?:functions|lib|local|bin|console|test|docs|\.ci)\/[^`\s<>{}$…:#]*)`/g)]
        .map((m) => m[1] ?? '')
        .filter((path) => !pathExists(path))
        .map((path) => `${file}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('link only to files and headings that exist', () => {
    const broken = docs.flatMap((file) =>
      [...prose(read(file)).matchAll(/\]\(([^)\s]+)\)/g)]
        .map((m) => m[1] ?? '')
        .filter((target) => !/^[a-z]+:/i.test(target))
        .filter((target) => {
          const [path = '', anchor] = target.split('#');
          const resolved = path ? posix.normalize(posix.join(posix.dirname(file), path)) : file;
          if (!existsSync(resolved)) return true;
          return anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(anchor);
        })
        .map((target) => `${file}: ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('cite tests by the names they have', () => {
    const citation = /`(test\/[^`]+\.test\.ts)`((?:\s*›\s*(?:"[^"]*"(?:,\s*"[^"]*")*|[A-Za-z][^›"`;\n(]*?))*)/g;
    const missing = docs.flatMap((file) =>
      [...prose(read(file)).matchAll(citation)].flatMap((m) => {
        const test = m[1] ?? '';
        if (!pathExists(test)) return [`${file}: ${test} does not exist`];
        if (test.includes('*')) return [];
        const source = normal(read(test));
        return [...(m[2] ?? '').matchAll(/"([^"]*)"/g)]
          .map((name) => normal(name[1] ?? '').trim())
          .filter((name) => !source.includes(name))
          .map((name) => `${file}: ${test} has no test "${name}"`);
      }),
    );
    expect(missing).toEqual([]);
  });

  it('number the invariants once each, in order, each with the tests that hold it or what none holds', () => {
    const all = invariants();
    expect(all.map((i) => i.n)).toEqual(all.map((_, index) => index + 1));
    expect(all.filter((i) => !/`test\/|\*\*No test\*\*|Not held/.test(i.body)).map((i) => `${i.n}. ${i.title}`)).toEqual([]);
  });

  it('lay out the folders and files where they are, and every folder of the code', () => {
    const block = /```\n([\s\S]*?)```/.exec(sectionOf(read('docs/ARCHITECTURE.md'), '## The layout'))?.[1] ?? '';
    const named = new Set<string>();
    const missing: string[] = [];
    const stack: { indent: number; path: string }[] = [];
    let current = '.';
    for (const line of block.split('\n')) {
      const lead = /^( *)([a-z][\w-]*)\/(?=\s|$)/.exec(line);
      if (lead) {
        const indent = lead[1]?.length ?? 0;
        while (stack.length && (stack.at(-1)?.indent ?? 0) >= indent) stack.pop();
        current = posix.join(stack.at(-1)?.path ?? '.', lead[2] ?? '');
        stack.push({ indent, path: current });
        named.add(current);
        if (!existsSync(current)) missing.push(`${current}/`);
      }
      const rest = lead ? line.slice(lead[0].length) : line;
      // A folder or file is in the line's folder, one of its folders, or (a sibling) its parent's.
      const places = (name: string) => {
        const parent = posix.dirname(current);
        const below = existsSync(current) && statSync(current).isDirectory() ? readdirSync(current).map((sub) => posix.join(current, sub)) : [];
        return [current, parent, ...below].map((dir) => posix.join(dir, name));
      };
      for (const m of rest.matchAll(/(?<![\w/.-])([a-z][\w-]*)\/(?![\w*])/g)) {
        const found = places(m[1] ?? '').find((path) => existsSync(path));
        if (found) named.add(found);
        else missing.push(`${current}: ${m[1]}/`);
      }
      for (const m of rest.matchAll(/(?<![\w/.-])([\w-]+\.(?:ts|tsx|mjs|cjs))(?![\w])/g)) {
        if (!places(m[1] ?? '').some((path) => existsSync(path))) missing.push(`${current}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
    const folders = (dir: string) => readdirSync(dir).filter((name) => statSync(`${dir}/${name}`).isDirectory()).map((name) => `${dir}/${name}`);
    const unnamed = [...folders('functions'), ...folders('functions/core'), ...folders('functions/adapters'), ...folders('local'), ...folders('console')].filter((dir) => !named.has(dir));
    expect(unnamed).toEqual([]);
  });

  it('cite invariants that exist', () => {
    expect(docs.flatMap((file) => unresolved(normal(prose(read(file))), file).filter((p) => p.includes('invariant')))).toEqual([]);
  });
});

describe('the code’s citations of the docs', () => {
  it('name a doc, heading, invariant or habit that exists', () => {
    expect(sources().flatMap((file) => unresolved(comments(file), file))).toEqual([]);
  });

  it('would name a heading that is not there', () => {
    expect(unresolved('See docs/ARCHITECTURE.md, "The loop" and invariant 99, habit 40 (habit 13, docs/ARCHITECTURE.md).', 'example')).toEqual([
      'example: docs/ARCHITECTURE.md has no heading "The loop"',
      'example: there is no invariant 99 in docs/ARCHITECTURE.md',
      'example: there is no habit 40 in docs/code-habits.md',
      'example: habits are in docs/code-habits.md, not docs/ARCHITECTURE.md',
    ]);
  });
});
