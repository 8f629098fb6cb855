/**
 * What a goal asks of the workspace, for the offline model: files to write (with the content the
 * goal gives), to read, to edit, and whether to list them. "Write hello.txt containing Hello",
 * "Save the answer to answer.md", "Read notes.md", "In notes.md replace "draft" with "final"",
 * "List the files".
 */

export interface FileIntents {
  /** Files to write, in the order named, with the content the goal gives (if it gives one). */
  writes: { path: string; content?: string }[];
  reads: string[];
  edits: { path: string; oldString: string; newString: string }[];
  list: boolean;
}

/** A path as goals name them: with an extension (`answer.md`, `src/app.ts`), or quoted. */
const pathPattern = /`([^`\s]+)`|"([^"\s]+\.[a-z0-9]{1,8})"|\b((?:[\w-]+\/)*[\w-]*[a-z_][\w-]*\.[a-z][a-z0-9]{0,7})\b/gi;

const verbs: [kind: 'write' | 'read' | 'edit', pattern: RegExp][] = [
  ['write', /\b(?:write|writes|save|saves|store|create|creates|put|make|generate|produce|record)\b/gi],
  ['read', /\b(?:read|reads|open|show|print|display|cat|summari[sz]e|look at)\b/gi],
  ['edit', /\b(?:edit|change|replace|update|fix|rename)\b/gi],
];

/** Words that look like file names but are not ones: `e.g.`, `i.e.`, `Node.js`. */
const notPaths = new Set(['e.g', 'i.e', 'node.js', 'next.js', 'vue.js']);

/** The file work a goal asks for. */
export function fileIntents(goal: string): FileIntents {
  const text = goal.replace(/\[\[[^\]]*\]\]|\[script:[^\]]*\]/g, ' ');
  const verbAt: { at: number; kind: 'write' | 'read' | 'edit' }[] = [];
  for (const [kind, pattern] of verbs) for (const m of text.matchAll(pattern)) verbAt.push({ at: m.index, kind });
  verbAt.sort((a, b) => a.at - b.at);

  const intents: FileIntents = { writes: [], reads: [], edits: [], list: /\b(?:list|which|what) (?:the |all |my )?files\b|\blist_files\b|\blist (?:the )?(?:workspace|folder)\b/i.test(text) };
  const quoted = [...text.matchAll(/"([^"]*)"|“([^”]*)”|'([^']{2,})'/g)].map((m) => ({ at: m.index, value: m[1] ?? m[2] ?? m[3] ?? '' }));
  for (const m of text.matchAll(pathPattern)) {
    const path = (m[1] ?? m[2] ?? m[3] ?? '').replace(/[.,;:]+$/, '');
    if (!path || notPaths.has(path.toLowerCase()) || /^\d/.test(path)) continue;
    const before = verbAt.filter((v) => v.at < m.index).at(-1);
    const kind = before?.kind ?? verbAt.find((v) => v.at > m.index)?.kind;
    if (kind === 'write' && !intents.writes.some((w) => w.path === path)) {
      const content = contentFor(text, m.index + m[0].length);
      intents.writes.push({ path, ...(content !== undefined ? { content } : {}) });
    } else if (kind === 'read' && !intents.reads.includes(path)) {
      intents.reads.push(path);
    } else if (kind === 'edit') {
      const [oldString, newString] = quoted.filter((q) => q.value !== path).map((q) => q.value);
      if (oldString !== undefined && newString !== undefined) intents.edits.push({ path, oldString, newString });
    }
  }
  return intents;
}

/** The content a goal gives a file it names, after the path: `containing "…"`, `with the text …`, `saying …`. */
function contentFor(text: string, from: number): string | undefined {
  const rest = text.slice(from);
  const said = /^\s*(?:,\s*)?(?:containing|that says|saying|with the (?:text|content|words|line)|with|that contains)\s*:?\s*(?:"([^"]*)"|“([^”]*)”|'([^']*)'|([^.!?\n]+))/i.exec(rest);
  if (!said) return undefined;
  const value = said[1] ?? said[2] ?? said[3] ?? said[4]?.trim();
  // "with a README" names another thing, not the content.
  if (said[4] !== undefined && /^(?:a|an|the|some|its|my)\b/i.test(said[4].trim())) return undefined;
  return value ? `${value}\n` : undefined;
}
