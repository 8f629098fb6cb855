/**
 * The console in a real headless Chromium against the local stack, the model scripted: starting a
 * run, picking an agent of the deployment's own, a finished multi-agent run, hostile tool output,
 * callers who must not see each other's runs, keyboard use and a phone's width.
 */
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { versionOf } from '../../functions/core/definitions/definition.js';
import { say, use } from '../support/agents.js';
import { screenshot, useBrowser } from '../support/browser.js';
import { useLocalStack } from '../support/local-stack.js';

/** An agent of the deployment's own (docs/agents.md), offered beside the built-ins. */
const proofreader = {
  name: 'proofreader',
  description: 'Reads the files of the workspace and corrects their spelling.',
  instructions: 'You proofread files: fix spelling, keep the meaning.',
  tools: ['read_file', 'edit_file', 'list_files'],
};

/** An agent that hands proofreading to the proofreader: its runs have child runs. */
const chiefEditor = {
  name: 'chief-editor',
  description: 'Has the proofreader check the notes, then signs them off.',
  instructions: 'You hand proofreading to the proofreader agent and sign off what it returns.',
  tools: ['agent:proofreader'],
};

const local = useLocalStack({ STEPWISE_AGENTS: JSON.stringify([proofreader, chiefEditor]) });
const browser = useBrowser();

/** Signs the page's tab in as a caller of the local issuer, through the console's own form. */
async function actAs(page: Page, sub: string, options: { tenant?: string; reviewer?: boolean } = {}): Promise<void> {
  await page.goto(`${local.stack.url}/console/sign-in`);
  await page.getByLabel('Caller (subject)').fill(sub);
  if (options.tenant) await page.getByLabel('Tenant (optional)').fill(options.tenant);
  if (options.reviewer) await page.getByRole('checkbox', { name: /^Reviewer/ }).check();
  await page.getByRole('button', { name: 'Act as this caller' }).click();
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  await page.getByText(`Signed in as ${sub}`).waitFor();
}

/** Starts a run of an agent or workflow (by its name in the Agent list) through the form and waits for its page. */
async function startFromForm(page: Page, goal: string, agent = 'assistant'): Promise<string> {
  await page.getByLabel('Goal', { exact: true }).fill(goal);
  await page.getByLabel('Agent', { exact: true }).selectOption({ label: agent });
  await page.getByRole('button', { name: 'Start' }).click();
  await page.waitForURL(/\/console\/runs\/[\w-]+$/);
  return decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) ?? '');
}

describe('the console', () => {
  it('starts a run from the form and shows its answer', async () => {
    const { page, problems } = await browser.open();
    const tag = local.book.add('form', { turn: say('The answer is **42**.') });
    await page.goto(`${local.stack.url}/console/`);
    const runId = await startFromForm(page, `${tag} What is the answer?`);

    const answer = page.getByRole('region', { name: 'Answer', exact: true });
    await answer.getByText('The answer is 42.').waitFor();
    expect(await answer.locator('strong').textContent()).toBe('42');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`${tag} What is the answer?`);
    expect(await page.locator('dl.facts').getByText('Succeeded').count()).toBe(1);
    expect(((await local.get(`/runs/${runId}`)).body as { mode: string }).mode).toBe('single');

    // The runs list links to it, with its status.
    await page.getByRole('link', { name: 'Runs' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: `${tag} What is the answer?` }) });
    await row.getByText('Succeeded').waitFor();
    expect(problems).toEqual([]);
  });

  it("offers the deployment's agents and workflows, the assistant first, and runs the one picked, showing it and its version", async () => {
    const { page, problems } = await browser.open();
    await page.goto(`${local.stack.url}/console/`);
    const picker = page.getByLabel('Agent', { exact: true });
    // The list comes from GET /agents: the built-in Architect and Coder work only inside plan-and-build.
    await picker.locator('option', { hasText: 'proofreader' }).waitFor({ state: 'attached' });
    expect(await picker.locator('optgroup').evaluateAll((groups) => groups.map((g) => [g.getAttribute('label'), [...g.querySelectorAll('option')].map((o) => o.textContent)]))).toEqual([
      ['Agents', ['assistant', 'proofreader', 'chief-editor']],
      ['Workflows', ['plan-and-build']],
    ]);
    expect(await picker.inputValue()).toBe('agent:assistant');
    await picker.selectOption({ label: 'proofreader' });
    await page.getByText(proofreader.description).waitFor();
    await screenshot(page, 'console-agent-picker');

    const tag = local.book.add('picked', { turn: use(['toolu_ls', 'list_files', {}]) }, { turn: say('Nothing to proofread yet.') });
    const runId = await startFromForm(page, `${tag} Proofread the notes.`, 'proofreader');
    await page.getByRole('region', { name: 'Answer', exact: true }).getByText('Nothing to proofread yet.').waitFor();
    const agent = page.locator('dl.facts > div').filter({ has: page.getByRole('term').getByText('Agent', { exact: true }) });
    expect(await agent.getByRole('definition').textContent()).toBe(`proofreader version ${versionOf(proofreader)}`);
    await screenshot(page, 'console-agent-run');
    expect(((await local.get(`/runs/${runId}`)).body as { agent?: unknown }).agent).toEqual({ name: 'proofreader', version: versionOf(proofreader) });
    // The model was offered the proofreader's tools only.
    const [first] = local.book.requests.get('picked') ?? [];
    expect((first?.tools as { name: string }[] | undefined)?.map((tool) => tool.name).sort()).toEqual(['edit_file', 'list_files', 'read_file']);
    expect(problems).toEqual([]);
  });

  it('shows the child runs an agent started as a tree, each linked, and the child its parent', async () => {
    const { page, problems } = await browser.open();
    const child = local.book.add('tree-child', { turn: use(['toolu_ls', 'list_files', {}]) }, { turn: say('No spelling mistakes.') });
    const parent = local.book.add(
      'tree-parent',
      { turn: use(['toolu_proof', 'agent_proofreader', { goal: `${child} Proofread the notes.` }]) },
      { turn: say('Signed off: the proofreader found no mistakes.') },
    );
    await page.goto(`${local.stack.url}/console/`);
    const runId = await startFromForm(page, `${parent} Check and sign off the notes.`, 'chief-editor');
    await page.getByRole('region', { name: 'Answer', exact: true }).getByText('Signed off').waitFor();

    const family = page.getByRole('region', { name: 'Runs of this run’s agents' });
    const tree = family.getByRole('list', { name: 'Child runs' });
    const childId = String(Object.values(((await local.get(`/runs/${runId}`)).body as { children: Record<string, { runId: string }> }).children)[0]?.runId);
    const item = tree.getByRole('listitem').filter({ has: page.getByRole('link', { name: childId }) });
    await item.getByText('Succeeded').waitFor();
    expect(await item.locator('.agent').textContent()).toBe('proofreader');
    await screenshot(page, 'console-child-runs', { fullPage: true });

    await item.getByRole('link', { name: childId }).click();
    await page.waitForURL(new RegExp(`/console/runs/${childId}$`));
    await page.getByRole('region', { name: 'Answer', exact: true }).getByText('No spelling mistakes.').waitFor();
    await page.getByRole('region', { name: 'Runs of this run’s agents' }).getByRole('link', { name: runId }).click();
    await page.waitForURL(new RegExp(`/console/runs/${runId}$`));
    expect(problems).toEqual([]);
  });

  it("sets each budget field's label right above its own input, at a desktop's width and a phone's", async () => {
    for (const width of [1280, 380]) {
      const { page } = await browser.open();
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${local.stack.url}/console/`);
      for (const name of ['Most US dollars', 'Most tokens']) {
        const label = await page.getByText(name, { exact: true }).boundingBox();
        const input = await page.getByLabel(name, { exact: true }).boundingBox();
        if (!label || !input) throw new Error(`${name} is not shown`);
        const gap = input.y - (label.y + label.height);
        expect({ width, name, leftAligned: Math.abs(label.x - input.x) < 1, gap: gap >= 0 && gap < 12 }).toEqual({ width, name, leftAligned: true, gap: true });
      }
    }
  });

  it('shows a finished multi-agent run: the plan, the phases, each tool call and the files', async () => {
    const { page, problems } = await browser.open();
    const plan = {
      goal: 'A greeting module with a README',
      steps: [
        { description: 'Write the greet function', action: 'create_file', parameters: { path: 'src/greet.ts' } },
        { description: 'Document it', action: 'create_file', parameters: { path: 'README.md' } },
      ],
    };
    const readme = '# greet\n\nSay hello with `greet(name)`.\n';
    const tag = local.book.add(
      'multi',
      { turn: use(['toolu_ls', 'list_files', {}]) },
      { turn: use(['toolu_plan', 'finish_plan', plan]) },
      { turn: { content: [{ type: 'text', text: 'Writing the function first.' }, { type: 'tool_use', id: 'toolu_w1', name: 'write_file', input: { path: 'src/greet.ts', content: 'export const greet = (n: string) => `Hello, ${n}!`;\n' } }] } },
      { turn: use(['toolu_w2', 'write_file', { path: 'README.md', content: readme }]) },
      { turn: use(['toolu_bad', 'read_file', { path: 'missing.txt' }]) },
      { turn: say('Wrote src/greet.ts and README.md.') },
    );
    const started = await local.post('/runs', { goal: `${tag} Build a greeting module.`, mode: 'multi' });
    const runId = String(started.body.runId);
    expect((await local.waitFor(runId)).status).toBe('succeeded');

    await page.goto(`${local.stack.url}/console/runs/${runId}`);
    const planRegion = page.getByRole('region', { name: 'Plan', exact: true });
    await planRegion.getByText('Write the greet function').waitFor();
    expect(await planRegion.getByRole('listitem').count()).toBe(2);
    const phases = page.getByRole('navigation', { name: 'Phases' });
    // The stream brings the run's end after the plan: wait for it rather than read the phase mid-way.
    await phases.locator('[aria-current="step"]', { hasText: 'Complete' }).waitFor();
    expect(await phases.locator('li.done').count()).toBe(2);

    const transcript = page.getByRole('region', { name: 'Transcript', exact: true });
    await transcript.getByRole('heading', { name: 'Architect · planning' }).waitFor();
    await transcript.getByRole('heading', { name: 'Coder · executing' }).waitFor();
    expect(await transcript.getByText('Writing the function first.').count()).toBe(1);
    const write = page.locator('#call-toolu_w1');
    expect(await write.locator('.tool').textContent()).toBe('Tool call write_file');
    expect(await write.locator('.state').textContent()).toBe('Done');
    expect(await write.locator('.output pre').textContent()).toMatch(/^Wrote \d+ bytes to src\/greet.ts\.$/);
    await write.getByText('Input').click();
    expect(JSON.parse((await write.locator('.call-input pre').textContent()) ?? '')).toEqual({
      path: 'src/greet.ts',
      content: 'export const greet = (n: string) => `Hello, ${n}!`;\n',
    });
    // A tool error is marked as one, in words.
    const failed = page.locator('#call-toolu_bad');
    expect(await failed.locator('.state').textContent()).toBe('Error');
    expect(await failed.locator('.output .label').textContent()).toBe('Error result');
    expect(await page.locator('#call-toolu_plan .state').textContent()).toBe('Plan accepted');

    const files = page.getByRole('region', { name: 'Files', exact: true });
    await files.getByRole('button', { name: 'src/greet.ts' }).waitFor();
    await files.getByRole('button', { name: 'README.md' }).click();
    // Markdown is rendered in the preview; the download is the file's bytes.
    await files.getByRole('heading', { name: 'greet', level: 1 }).waitFor();
    expect(await files.locator('.file-markdown code').textContent()).toBe('greet(name)');
    const [download] = await Promise.all([page.waitForEvent('download'), files.getByRole('button', { name: 'Download' }).click()]);
    expect(download.suggestedFilename()).toBe('README.md');
    expect(readFileSync(await download.path(), 'utf8')).toBe(readme);
    expect(problems).toEqual([]);
  });

  it('shows tool output and files as text: the <script> in them never runs and never becomes an element', async () => {
    const { page, problems } = await browser.open();
    const html = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold?</b>';
    const tag = local.book.add(
      'hostile',
      { turn: use(['toolu_h1', 'write_file', { path: 'page.html', content: html }], ['toolu_h2', 'write_file', { path: 'notes.md', content: `# Notes\n\n${html}\n` }]) },
      { turn: use(['toolu_h3', 'read_file', { path: 'page.html' }]) },
      { turn: say(`Here it is: ${html}`) },
    );
    const runId = String((await local.post('/runs', { goal: `${tag} Echo some HTML.`, mode: 'single' })).body.runId);
    await local.waitFor(runId);

    await page.goto(`${local.stack.url}/console/runs/${runId}`);
    const output = page.locator('#call-toolu_h3 .output pre');
    await output.waitFor();
    expect(await output.textContent()).toBe(html);
    const transcript = page.locator('.transcript');
    expect(await transcript.locator('script, img, b').count()).toBe(0);
    // The model's own text is Markdown with raw HTML escaped: shown, not parsed.
    expect(await transcript.getByText(`Here it is: ${html}`).count()).toBe(1);

    const files = page.getByRole('region', { name: 'Files', exact: true });
    await files.getByRole('button', { name: 'page.html' }).click();
    expect(await files.locator('pre.file-text').textContent()).toBe(html);
    await files.getByRole('button', { name: 'notes.md' }).click();
    await files.getByRole('heading', { name: 'Notes', exact: true }).waitFor();
    expect(await files.locator('.file-markdown').textContent()).toContain(html);
    expect(await files.locator('.file-markdown script, .file-markdown img, .file-markdown b').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it('shows a caller none of another caller’s runs, and their run as not found', async () => {
    const alice = await browser.open();
    const bob = await browser.open();
    const tag = local.book.add('alice', { turn: say('Alice’s answer.') });
    await actAs(alice.page, 'alice');
    const runId = await startFromForm(alice.page, `${tag} Alice’s private goal`);
    await alice.page.getByText('Alice’s answer.').first().waitFor();

    await actAs(bob.page, 'bob');
    await bob.page.getByText('No runs yet. Start one above.').waitFor();
    expect(await bob.page.getByText('Alice’s private goal').count()).toBe(0);
    await bob.page.goto(`${local.stack.url}/console/runs/${runId}`);
    await bob.page.getByRole('heading', { name: 'Run not found' }).waitFor();
    expect(await bob.page.getByText('Alice’s').count()).toBe(0);

    // Alice still sees it in her list.
    await alice.page.getByRole('link', { name: 'Runs' }).click();
    await alice.page.getByRole('link', { name: `${tag} Alice’s private goal` }).waitFor();
    expect([...alice.problems, ...bob.problems]).toEqual([]);
  });

  it('is used with the keyboard alone, on a phone’s width', async () => {
    const { page, problems } = await browser.open({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const tag = local.book.add('keys', { turn: say('Typed and started.') });
    await page.goto(`${local.stack.url}/console/`);
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    const focused = () => page.evaluate('document.activeElement && (document.activeElement.id || document.activeElement.textContent)');
    for (let i = 0; i < 20 && (await focused()) !== 'goal'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('goal');
    await page.keyboard.type(`${tag} Start me from the keyboard.`);
    for (let i = 0; i < 20 && (await focused()) !== 'Start'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('Start');
    await page.keyboard.press('Enter');
    await page.getByText('Typed and started.').first().waitFor();
    // Nothing is wider than the screen.
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
    await page.getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('link', { name: `${tag} Start me from the keyboard.` }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
    expect(problems).toEqual([]);
  });
});
