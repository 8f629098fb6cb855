/**
 * What evals need of `POST /runs` (docs/evals.md): `files` seeded into the run's workspace before
 * it starts, validated with the body; `agentVersion` refused when the deployment's definition is
 * at another version, so runs compared are runs of one definition.
 */
import { describe, expect, it } from 'vitest';
import { AgentCatalog } from '../../functions/core/definitions/catalog.js';
import { builtinAgents, builtinWorkflows, versionOf } from '../../functions/core/definitions/definition.js';
import { createRun } from '../../functions/core/intake/create.js';
import { createRunBody, runRequestedDetail } from '../../functions/core/intake/request.js';
import { RecordingStarter } from '../support/api.js';
import { MemoryRunStore, MemoryWorkspace } from '../support/memory.js';

const caller = { principal: 'iss#alice', scopes: [] };
const issuesOf = (value: unknown, schema = createRunBody()) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('files on POST /runs', () => {
  it('are written to the run\'s workspace before its record exists and before it starts', async () => {
    const workspaces = new Map<string, MemoryWorkspace>();
    const runs = new MemoryRunStore();
    const seen: string[] = [];
    const deps = {
      runs,
      starter: new RecordingStarter(),
      newId: () => 'run-1',
      workspaceFor: (runId: string) => {
        const workspace = workspaces.get(runId) ?? new MemoryWorkspace();
        workspaces.set(runId, workspace);
        const write = workspace.write.bind(workspace);
        return {
          write: async (path: string, bytes: Uint8Array) => {
            seen.push(`${path} (record ${(await runs.get(runId)) ? 'exists' : 'absent'})`);
            await write(path, bytes);
          },
        };
      },
    };
    const body = createRunBody().parse({ goal: 'Read in.txt', mode: 'single', files: { 'in.txt': 'hello', './src//a.ts': 'x' } });
    await createRun(body, deps, { caller });
    expect(seen.sort()).toEqual(['./src//a.ts (record absent)', 'in.txt (record absent)']);
    const text = async (path: string) => new TextDecoder().decode(await workspaces.get('run-1')?.read(path));
    expect([await text('in.txt'), await text('src/a.ts')]).toEqual(['hello', 'x']);
    expect(deps.starter.started).toHaveLength(1);
  });

  it('are refused with each bad path named, over the count, or over the size', () => {
    expect(issuesOf({ goal: 'g', files: { '../up': 'x', '/abs': 'y', ok: 'z' } })).toEqual([
      'files.../up: "../up" contains "..": paths must stay inside the workspace.',
      'files./abs: "/abs" is absolute; give a path relative to the workspace root, such as "src/index.ts".',
    ]);
    expect(issuesOf({ goal: 'g', files: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, ''])) })).toEqual(['files: must be at most 100 files']);
    expect(issuesOf({ goal: 'g', files: { big: 'x'.repeat(1_000_001) } })).toEqual(['files: must be at most 1000000 bytes together, not 1000001']);
  });

  it('are not taken by a run-requested event (its intake has no workspace to write them to)', () => {
    expect(issuesOf({ goal: 'g', files: { a: 'b' } }, runRequestedDetail() as unknown as ReturnType<typeof createRunBody>)).toEqual([': Unrecognized key: "files"']);
  });
});

describe('agentVersion', () => {
  const assistant = versionOf(builtinAgents[0]!);
  const planAndBuild = versionOf(builtinWorkflows[0]!);

  it("starts a run at the deployment's version of its agent or workflow", () => {
    expect(issuesOf({ goal: 'g', mode: 'single', agentVersion: assistant })).toEqual([]);
    expect(issuesOf({ goal: 'g', agent: 'assistant', agentVersion: assistant })).toEqual([]);
    expect(issuesOf({ goal: 'g', agentVersion: planAndBuild })).toEqual([]);
  });

  it('refuses another version, saying which the deployment has, from the API and from events alike', () => {
    expect(issuesOf({ goal: 'g', mode: 'single', agentVersion: 'abc' })).toEqual([`agentVersion: this deployment's agent assistant is version ${assistant}, not abc`]);
    expect(issuesOf({ goal: 'g', agentVersion: assistant })).toEqual([`agentVersion: this deployment's workflow plan-and-build is version ${planAndBuild}, not ${assistant}`]);
    const detail = runRequestedDetail({ agents: AgentCatalog.from() }) as unknown as ReturnType<typeof createRunBody>;
    expect(issuesOf({ goal: 'g', mode: 'single', agentVersion: 'abc' }, detail)).toHaveLength(1);
  });
});
