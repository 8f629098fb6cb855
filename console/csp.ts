/**
 * The console's Content-Security-Policy and security headers, one definition for the local server
 * and CloudFront (docs/console.md, "How it is built"). Scripts and styles come only from the
 * console's own origin, no inline script or style, no eval; the page talks only to its origin
 * (and, signed in with OIDC, to the identity provider's token endpoint); nothing may frame it.
 * Trusted Types: the only HTML the page builds from a string is Markdown rendered by micromark
 * (raw HTML escaped), through the one named policy; assigning any other string as HTML throws.
 */

/** The name of the console's one Trusted Types policy (`console/src/markdown.ts`). */
export const markdownPolicy = 'stepwise-markdown';

/** The CSP of the console's pages; `connect` adds origins the page may fetch from (the OIDC provider). */
export function consoleCsp(options: { connect?: readonly string[] } = {}): string {
  const connect = ["'self'", ...(options.connect ?? [])].join(' ');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    `trusted-types ${markdownPolicy}`,
    "require-trusted-types-for 'script'",
  ].join('; ');
}

/** The other headers every console response carries. */
export const consoleSecurityHeaders = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
} as const;
