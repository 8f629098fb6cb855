/**
 * Every shell block the docs mark `sh runs` (README.md and docs/*.md), run as a reader pastes it:
 * beside one `npm run dev` on a clean data folder with no model key (the offline model, writing
 * each turn at once) and the example agents docs/agents.md runs beside, each block on its own in
 * `bash -e -o pipefail` with PORT set, in the order the docs give them. The blocks use `curl -fsS` and `jq -e` where what they show could break, so a
 * route that answers an error or an answer that changed fails its block; a block that fails names
 * its file, its first line and what it printed.
 */
import { type ExecFileException, execFile, execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDevServer } from '../support/dev-server.js';

const run = promisify(execFile);

/** A block marked to run: where it is, and what it says. */
interface Block {
  file: string;
  line: number;
  first: string;
  script: string;
}

/** The blocks marked ```` ```sh runs ```` in the README and the guides, in reading order. */
function markedBlocks(): Block[] {
  const files = ['README.md', ...readdirSync('docs').filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
  return files.flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    return [...text.matchAll(/^```sh runs\n([\s\S]*?)^```$/gm)].map((match) => {
      const script = match[1] ?? '';
      return {
        file,
        line: text.slice(0, match.index).split('\n').length,
        first: (script.split('\n')[0] ?? '').trim(),
        script,
      };
    });
  });
}

/** The agents the server is started with, as docs/agents.md tells its reader to start it (the other guides' blocks do not mind them). */
const exampleAgents = '@local/examples/agents.json';

/** This environment as a newcomer's: no model key or model choice, no agents of its own, no endpoint or token of the CLI's. */
function newcomer(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'STEPWISE_PROVIDER', 'STEPWISE_SCRIPT', 'STEPWISE_MODEL', 'STEPWISE_AGENTS', 'STEPWISE_WORKFLOWS', 'STEPWISE_ENDPOINT', 'STEPWISE_STREAM_ENDPOINT', 'STEPWISE_TOKEN', 'PORT']) {
    delete env[name];
  }
  return env;
}

/** The last lines of a block's output: enough to see why it failed. */
const tail = (text: string | undefined) => (text ?? '').split('\n').slice(-40).join('\n');

/** Runs a block as a reader would; says how it failed, naming it, or nothing when it passed. */
async function failureOf(block: Block): Promise<string | undefined> {
  try {
    await run('bash', ['-e', '-o', 'pipefail', '-c', block.script], { env: { ...newcomer(), PORT: port }, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
    return undefined;
  } catch (error) {
    const failed = error as ExecFileException & { stdout?: string; stderr?: string };
    const how = failed.killed ? 'was stopped after 60 s' : `exited ${String(failed.code)}`;
    return `${block.file}: the block that begins "${block.first}" ${how}:\n${tail(failed.stdout)}\n${tail(failed.stderr)}`;
  }
}

const blocks = markedBlocks();
let port = '';
let stop: () => void = () => undefined;
let served: Promise<unknown> = Promise.resolve();

beforeAll(async () => {
  for (const tool of ['curl', 'jq']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error(`The docs' examples need curl and jq, and ${tool} is not on the PATH (Debian: apt-get install curl jq).`);
    }
  }
  const url = await new Promise<string>((resolve, reject) => {
    served = withDevServer(
      { ...newcomer(), STEPWISE_OFFLINE_CHARS_PER_SECOND: '0', STEPWISE_AGENTS: exampleAgents },
      /listening on (http:\/\/\S+)/,
      (ready) => {
        resolve(ready);
        return new Promise<void>((done) => (stop = done));
      },
      { model: 'as given' },
    );
    served.catch(reject);
  });
  port = new URL(url).port;
}, 120_000);

afterAll(async () => {
  stop();
  await served;
});

describe('the shell blocks the docs mark `sh runs`, against npm run dev', () => {
  it('finds the README quick start among them', () => {
    expect(blocks.filter((block) => block.file === 'README.md').map((block) => block.first)).toContain(
      'npm run stepwise -- run "What is 1234 times 5678? Save the answer to answer.md." --mode single --follow',
    );
  });

  it('starts the server as docs/agents.md tells its reader to, for its examples', () => {
    expect(readFileSync('docs/agents.md', 'utf8')).toContain(`run beside \`STEPWISE_AGENTS=${exampleAgents} npm run dev\``);
  });

  for (const block of blocks) {
    it(`${block.file}:${block.line} ${block.first.slice(0, 90)}`, async () => {
      expect(await failureOf(block)).toBeUndefined();
    }, 90_000);
  }
});
