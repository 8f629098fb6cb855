/**
 * The README's quick start as a newcomer meets it: `npm run dev` on a clean data folder with no
 * API key says the offline model answers, and the quick start's command, pasted as it is, gets a
 * real answer: to the README's goal, and to an arithmetic goal with other numbers, which no script
 * holds. A run that fails reads as one line naming the run and its error.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { withDevServer } from '../support/dev-server.js';

const run = promisify(execFile);

/** The shell block the README's "first answer" section tells a newcomer to paste. */
function quickStart(): string {
  const readme = readFileSync('README.md', 'utf8');
  const heading = /^#+ The first answer, offline$/m.exec(readme);
  if (!heading) throw new Error('The README has no section "The first answer, offline".');
  const section = readme.slice(heading.index);
  const block = /```sh runs\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('The README has no quick start block marked `sh runs`.');
  return block;
}

/** This environment without a model key or a model choice: a newcomer's. */
function newcomer(): NodeJS.ProcessEnv {
  const { ANTHROPIC_API_KEY: _key, ANTHROPIC_BASE_URL: _url, STEPWISE_PROVIDER: _provider, STEPWISE_SCRIPT: _script, STEPWISE_MODEL: _model, ...env } = process.env;
  return env;
}

const pick = () => 1_000 + Math.floor(Math.random() * 90_000);

describe("the README's quick start, with no key on a clean data folder", () => {
  it('says the offline model answers, and answers the quick start and a goal it has not seen', async () => {
    const block = quickStart();
    expect(block).toContain('What is 1234 times 5678?');
    const [a, b] = [pick(), pick()];
    const { stdout } = await withDevServer(
      newcomer(),
      /listening on (http:\/\/\S+)/,
      async (url) => {
        const env = { ...newcomer(), PORT: new URL(url).port };
        for (const [command, answer] of [
          [block, '1234 × 5678 = 7,006,652. I saved it to answer.md.'],
          [block.replace('1234 times 5678', `${a} times ${b}`), `${a} × ${b} = ${(a * b).toLocaleString('en-US')}. I saved it to answer.md.`],
        ] as const) {
          const { stdout: printed } = await run('bash', ['-e', '-c', command], { env, timeout: 60_000 });
          expect(printed).toContain('→ single: calculator');
          expect(printed).toContain(`\n${answer}\n`);
          expect(printed).toContain('files: answer.md');
        }
      },
      { model: 'as given' },
    );
    expect(stdout).toMatch(/^Stepwise is listening on http:\/\/\S+ \(model: the offline stand-in, as no ANTHROPIC_API_KEY is set\)$/m);
  }, 120_000);

  it('prints one line for a run that fails, naming it and its error, with no stack trace and no execution events', async () => {
    let runId = '';
    const { stdout, stderr } = await withDevServer(
      { ...newcomer(), STEPWISE_OFFLINE_CHARS_PER_SECOND: '0' },
      /listening on (http:\/\/\S+)/,
      async (url) => {
        const res = await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: '[script:nope] Go.', mode: 'single' }) });
        runId = ((await res.json()) as { runId: string }).runId;
        for (let i = 0; i < 200; i++) {
          const { status } = (await (await fetch(`${url}/runs/${runId}`)).json()) as { status: string };
          if (status !== 'running') break;
          await new Promise((r) => setTimeout(r, 50));
        }
        // The line is written as the run's event goes out.
        await new Promise((r) => setTimeout(r, 200));
      },
      { model: 'as given' },
    );
    expect(stdout.split('\n').filter((line) => line.includes(runId))).toEqual([
      expect.stringMatching(new RegExp(`^run ${runId} failed \\(single\\): ModelRequestInvalid: .*\\[script:nope\\]: there is no such script \\(the scripts: .*calculator.*\\)\\.$`)),
    ]);
    expect(`${stdout}${stderr}`).not.toContain('Execution Status Change');
    expect(`${stdout}${stderr}`).not.toMatch(/"stack"|\n\s+at /);
  }, 60_000);
});
