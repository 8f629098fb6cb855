/**
 * A real headless Chromium for the console's browser tests, one per test file, driven by
 * playwright-core. The executable is `STEPWISE_CHROMIUM`, else the `chromium` on the PATH (`.ci/run`
 * installs Debian's when it is missing).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContextOptions, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

/** The Chromium executable the tests drive. */
export function chromiumPath(): string {
  if (process.env.STEPWISE_CHROMIUM) return process.env.STEPWISE_CHROMIUM;
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('No chromium on the PATH: install it (apt-get install chromium) or set STEPWISE_CHROMIUM to its path.');
  }
}

export interface WatchedPage {
  page: Page;
  /** Script errors, CSP and Trusted Types violations the page reported: a passing test expects none. */
  problems: string[];
}

export interface BrowserFixture {
  /** A page in a fresh context (its own sessionStorage: its own caller), 1280×800 unless told. */
  open(options?: BrowserContextOptions): Promise<WatchedPage>;
}

/** Launches Chromium before the file's tests and closes it after. */
export function useBrowser(): BrowserFixture {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath() });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  return {
    async open(options = {}) {
      if (!browser) throw new Error('The browser has not started.');
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
      const page = await context.newPage();
      // A condition that does not come fails its own wait, naming it, before the test's timeout.
      page.setDefaultTimeout(15_000);
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        const text = message.text();
        if (/Content Security Policy|Trusted Type|TrustedHTML/i.test(text)) problems.push(`console: ${text}`);
      });
      return { page, problems };
    },
  };
}

/**
 * Takes a screenshot. With `STEPWISE_SCREENSHOTS=docs/images` the pictures docs/console.md shows are
 * written there (and committed); otherwise into a temporary folder.
 */
let shots: string | undefined;
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<string> {
  shots ??= process.env.STEPWISE_SCREENSHOTS ? resolve(process.env.STEPWISE_SCREENSHOTS) : mkdtempSync(join(tmpdir(), 'stepwise-shots-'));
  mkdirSync(shots, { recursive: true });
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: options.fullPage ?? false });
  return path;
}
