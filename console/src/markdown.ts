/**
 * Markdown to HTML for the console: micromark with its safe defaults (raw HTML in the source is
 * escaped, `javascript:` and other dangerous link protocols are dropped), handed to the DOM only
 * through the console's one Trusted Types policy (docs/console.md, "How it is built"). Tool
 * output is never rendered this way: it is shown as text.
 */
import { micromark } from 'micromark';
import { markdownPolicy } from '../csp.js';

interface TrustedTypePolicy {
  createHTML(input: string): unknown;
}
interface TrustedTypesWindow {
  trustedTypes?: { createPolicy(name: string, rules: { createHTML(input: string): string }): TrustedTypePolicy };
}

// The policy passes on only what `renderMarkdown` made: micromark's output, never a caller's string.
let policy: TrustedTypePolicy | undefined;
let rendering = false;
function trusted(html: string): unknown {
  const tt = (globalThis as TrustedTypesWindow).trustedTypes;
  if (!tt) return html;
  policy ??= tt.createPolicy(markdownPolicy, {
    createHTML(input) {
      if (!rendering) throw new TypeError('Only rendered Markdown may become HTML.');
      return input;
    },
  });
  return policy.createHTML(html);
}

/** `{ __html }` for Preact's dangerouslySetInnerHTML: the Markdown rendered safely. */
export function renderMarkdown(source: string): { __html: string } {
  const html = micromark(source, { allowDangerousHtml: false, allowDangerousProtocol: false });
  rendering = true;
  try {
    // A TrustedHTML where the browser has Trusted Types; Preact assigns it to innerHTML as it is.
    return { __html: trusted(html) as string };
  } finally {
    rendering = false;
  }
}
