/**
 * Reviewing from the console in a real headless Chromium: approve, deny with a message, approve
 * with edited input (where the API takes it), and a reviewer's list of every waiting call of its
 * tenant. Takes the docs' screenshots (`STEPWISE_SCREENSHOTS=docs/images`).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { capabilitiesOf } from '../../console/src/capabilities.js';
import { type ApiDeps, createApi } from '../../functions/api/app.js';
import type { RunView } from '../../functions/api/schemas.js';
import { say, use } from '../support/agents.js';
import { screenshot, useBrowser } from '../support/browser.js';
import { useLocalStack } from '../support/local-stack.js';

// A model with a list price, so the pages show what runs cost.
const local = useLocalStack({ STEPWISE_MODEL: 'claude-sonnet-4-5' });
const browser = useBrowser();
const gateWrites = { approvals: { tools: ['write_file', 'edit_file'] } };
/** Whether the API says it takes edited input on a decision (the page offers the edit only then). */
const takesEditedInput = capabilitiesOf(
  (await (await createApi({} as ApiDeps).request('/openapi.json')).json()) as Parameters<typeof capabilitiesOf>[0],
).decisionInput;

/** Starts a run through the API (as `token`'s caller, or `local`) and waits until `count` calls wait. */
async function startWaiting(goal: string, options: { token?: string; count?: number; mode?: string } = {}): Promise<string> {
  const started = await local.request('POST', '/runs', { body: { goal, mode: options.mode ?? 'single', ...gateWrites }, ...(options.token ? { token: options.token } : {}) });
  expect(started.status).toBe(202);
  const runId = String(started.body.runId);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = (await local.request('GET', `/runs/${runId}`, options.token ? { token: options.token } : {})).body as unknown as RunView;
    if (run.waitingFor.length === (options.count ?? 1)) return runId;
    if (run.status !== 'running' || Date.now() > deadline) throw new Error(`Run ${runId} is ${run.status}, waiting for ${run.waitingFor.length}.`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until a run (seen as `token`'s caller) stops running; other runs may go on waiting. */
async function ended(runId: string, token: string): Promise<RunView> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = (await local.request('GET', `/runs/${runId}`, { token })).body as unknown as RunView;
    if (run.status !== 'running') return run;
    if (Date.now() > deadline) throw new Error(`Run ${runId} still runs.`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The review card of a call on the page. */
const card = (page: Page, tool: string) => page.getByRole('region', { name: `${tool} waits for approval`, exact: true });

async function fileText(runId: string, path: string): Promise<string> {
  return (await fetch(`${local.stack.url}/runs/${runId}/files/${path}`)).text();
}

describe('reviewing in the console', () => {
  it('approves a waiting call from the run page, and the run goes on', async () => {
    const { page, problems } = await browser.open({ viewport: { width: 1280, height: 1000 } });
    const input = { path: 'notes/plan.md', content: '# Release plan\n\n1. Freeze\n2. Tag\n3. Announce\n' };
    const plan = {
      goal: 'Write the release plan',
      steps: [{ description: 'Write notes/plan.md with the three release steps', action: 'create_file', parameters: { path: 'notes/plan.md' } }],
    };
    const tag = local.book.add(
      'approve',
      { turn: { content: [{ type: 'text', text: 'The workspace is empty; one file will do.' }, { type: 'tool_use', id: 'toolu_ls', name: 'list_files', input: {} }] } },
      { turn: use(['toolu_plan', 'finish_plan', plan]) },
      { turn: { content: [{ type: 'text', text: 'I will save the plan as **notes/plan.md**.' }, { type: 'tool_use', id: 'toolu_a', name: 'write_file', input }] } },
      { turn: say('Saved the plan.') },
    );
    const runId = await startWaiting(`Save the release plan as notes/plan.md\n${tag}`, { mode: 'multi' });
    await page.goto(`${local.stack.url}/console/runs/${runId}`);

    const review = card(page, 'write_file');
    await review.waitFor();
    // The whole input, and where in the conversation the call came from.
    expect(JSON.parse((await review.locator('pre.input').textContent()) ?? '')).toEqual(input);
    expect(await review.locator('.where').textContent()).toMatch(/^The Coder asked in message 1/);
    expect(await review.locator('.said').textContent()).toBe('I will save the plan as **notes/plan.md**.');
    expect(await page.locator('#call-toolu_a .state').textContent()).toBe('Waits for approval');
    expect(await page.getByRole('navigation', { name: 'Phases' }).locator('[aria-current="step"]').textContent()).toBe('Executing · Coder');
    await screenshot(page, 'console-run', { fullPage: true });

    await review.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByRole('region', { name: 'Answer', exact: true }).getByText('Saved the plan.').waitFor();
    expect(await page.locator('#call-toolu_a .state').textContent()).toBe('Done · approved by local');
    expect(await card(page, 'write_file').count()).toBe(0);
    expect(await fileText(runId, 'notes/plan.md')).toBe(input.content);
    // The timeline: each agent, then its model calls and its turns' tool calls, with durations and tokens.
    const timeline = page.getByRole('list', { name: 'Agents, model calls and tool calls' });
    await timeline.getByText('Model call', { exact: false }).nth(3).waitFor();
    expect((await timeline.locator('.timeline-label').allTextContents()).map((label) => label.replace(/^Model call \S+$/, 'Model call'))).toEqual([
      'Agent architect',
      'Model call',
      'Tool list_files',
      'Model call',
      'Tool finish_plan',
      'Agent coder',
      'Model call',
      'Tool write_file',
      'Model call',
    ]);
    expect(await timeline.locator('.agent .timeline-figures').first().textContent()).toMatch(/^\d+(\.\d)? m?s · [\d,]+ in \/ [\d,]+ out tokens$/);
    await page.getByRole('region', { name: 'Timeline', exact: true }).scrollIntoViewIfNeeded();
    await screenshot(page, 'console-timeline');
    expect(problems).toEqual([]);
  });

  it('cancels a run from its page', async () => {
    const { page, problems } = await browser.open();
    const tag = local.book.add('cancel', { turn: use(['toolu_x', 'write_file', { path: 'x.md', content: 'X' }]) });
    const runId = await startWaiting(`Write x.md, then wait\n${tag}`);
    await page.goto(`${local.stack.url}/console/runs/${runId}`);
    await card(page, 'write_file').waitFor();
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page.getByText('The run cancelled.').waitFor();
    expect(await page.locator('dl.facts').getByText('Cancelled', { exact: true }).count()).toBe(1);
    expect(await card(page, 'write_file').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Cancel', exact: true }).count()).toBe(0);
    expect(((await local.get(`/runs/${runId}`)).body as unknown as RunView).status).toBe('cancelled');
    expect(problems).toEqual([]);
  });

  it('denies a call with a message the model reads, and the run goes on', async () => {
    const { page, problems } = await browser.open();
    const tag = local.book.add(
      'deny',
      { turn: use(['toolu_d', 'write_file', { path: '.env', content: 'KEY=1' }]) },
      { turn: say('Understood: not writing secrets.') },
    );
    const runId = await startWaiting(`Store the API key for the staging deploy\n${tag}`);
    await page.goto(`${local.stack.url}/console/runs/${runId}`);
    const review = card(page, 'write_file');
    await review.getByLabel('Message to the model (optional)').fill('Never write secrets to the workspace.');
    await review.getByRole('button', { name: 'Deny', exact: true }).click();

    await page.getByText('Understood: not writing secrets.').first().waitFor();
    const state = await page.locator('#call-toolu_d .state').textContent();
    expect(state).toBe('Denied by local: Never write secrets to the workspace.');
    const result = local.book.requests.get('deny')?.[1]?.messages.at(-1)?.content as { tool_use_id: string; content: string; is_error?: boolean }[];
    expect(result[0]).toMatchObject({ tool_use_id: 'toolu_d', is_error: true });
    expect(result[0]?.content).toContain('Never write secrets to the workspace.');
    expect(await fileText(runId, '.env')).toMatch(/FileNotFound|No file/);
    expect(problems).toEqual([]);
  });

  it('approves a call with edited input, checked against the tool’s schema before it is sent', async () => {
    expect(takesEditedInput).toBe(true);
    const { page, problems } = await browser.open();
    const tag = local.book.add('edit', { turn: use(['toolu_e', 'write_file', { path: 'out.txt', content: 'draft' }]) }, { turn: say('Wrote it.') });
    const runId = await startWaiting(`Write the output\n${tag}`);
    await page.goto(`${local.stack.url}/console/runs/${runId}`);
    const review = card(page, 'write_file');
    await review.getByText('Edit the input, then approve').click();
    const editor = review.getByLabel('Edited input (JSON)');
    const approve = review.getByRole('button', { name: 'Approve with edits' });
    await editor.fill('{"path": "out.txt"}');
    await review.getByText(/^content: /).waitFor();
    expect(await approve.isDisabled()).toBe(true);
    await editor.fill('{"path": "out.txt", "content": "final"');
    await review.getByText(/^Not valid JSON/).waitFor();
    expect(await approve.isDisabled()).toBe(true);
    await editor.fill('{"path": "out.txt", "content": "final"}');
    await review.getByText('The input is valid for write_file.').waitFor();
    await approve.click();
    await page.getByRole('region', { name: 'Answer', exact: true }).getByText('Wrote it.').waitFor();
    expect(await fileText(runId, 'out.txt')).toBe('final');
    expect(problems).toEqual([]);
  });

  it('lists every waiting call of a reviewer’s tenant in one place, and decides there', async () => {
    const { page, problems } = await browser.open();
    const alice = String((await local.post('/_local/tokens', { sub: 'alice', tenant: 'acme' })).body.token);
    const carol = String((await local.post('/_local/tokens', { sub: 'carol', tenant: 'acme' })).body.token);
    const mallory = String((await local.post('/_local/tokens', { sub: 'mallory', tenant: 'other' })).body.token);
    const t1 = local.book.add('t1', { turn: use(['toolu_t1', 'write_file', { path: 'a.md', content: 'A' }]) }, { turn: say('A done.') });
    const t2 = local.book.add('t2', { turn: use(['toolu_t2', 'edit_file', { path: 'b.md', old_string: 'x', new_string: 'y' }]) }, { turn: say('B done.') });
    const t3 = local.book.add('t3', { turn: use(['toolu_t3', 'write_file', { path: 'c.md', content: 'C' }]) }, { turn: say('C done.') });
    const first = await startWaiting(`Summarize the incident report into a.md\n${t1}`, { token: alice });
    await startWaiting(`Fix the typo in the onboarding guide\n${t2}`, { token: carol });
    const other = await startWaiting(`Write c.md for the other tenant\n${t3}`, { token: mallory });

    // A reviewer of acme, through the console's own sign-in.
    await page.goto(`${local.stack.url}/console/sign-in`);
    await page.getByLabel('Caller (subject)').fill('rita');
    await page.getByLabel('Tenant (optional)').fill('acme');
    await page.getByRole('checkbox', { name: /^Reviewer/ }).check();
    await page.getByRole('button', { name: 'Act as this caller' }).click();
    await page.getByRole('link', { name: 'Review' }).click();
    await card(page, 'write_file').waitFor();
    await card(page, 'edit_file').waitFor();
    expect(await page.getByRole('region', { name: /waits for approval$/ }).count()).toBe(2);
    expect(await page.getByText('Write c.md for the other tenant').count()).toBe(0);
    await screenshot(page, 'console-review');

    await card(page, 'write_file').getByRole('button', { name: 'Approve', exact: true }).click();
    await card(page, 'write_file').waitFor({ state: 'detached' });
    const decided = await ended(first, alice);
    expect(decided.status).toBe('succeeded');
    expect(decided.decisions).toMatchObject([{ toolUseId: 'toolu_t1', decidedBy: 'stepwise-local#rita' }]);
    expect(((await local.request('GET', `/runs/${other}`, { token: mallory })).body as unknown as RunView).waitingFor).toHaveLength(1);

    // The runs list of the local caller, with a call waiting: the picture docs/console.md shows.
    const list = await browser.open();
    const draft = local.book.add('w', { turn: use(['toolu_w', 'write_file', { path: 'w.md', content: 'W' }]) }, { turn: say('W.') });
    await startWaiting(`Draft the release notes for version 1.4\n${draft}`);
    await list.page.goto(`${local.stack.url}/console/`);
    await list.page.getByText('1 call waits for approval').first().waitFor();
    await screenshot(list.page, 'console-runs');
    expect([...problems, ...list.problems]).toEqual([]);
  });
});
