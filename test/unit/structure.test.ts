import { createRequire } from 'node:module';
import { type IConfiguration, cruise } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

// The project's own rules, as `npx depcruise` reads them.
const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as IConfiguration;

/** The rules' violations among `paths`, one line each: `rule: from → to`. */
async function violationsIn(paths: string[]): Promise<string[]> {
  const result = await cruise(paths, { ruleSet: config, validate: true, ...config.options });
  if (typeof result.output === 'string') throw new Error(result.output);
  return result.output.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' → ')})` : ''}`);
}

describe('the import graph', () => {
  it('has no circle anywhere, keeps the core’s types at the bottom, and keeps the dev runtime out of the functions', async () => {
    expect(await violationsIn(['functions', 'lib', 'local', 'bin', 'console/src'])).toEqual([]);
  });

  it('would name a circle, even one made of type imports only', async () => {
    expect(await violationsIn(['test/fixtures/import-circle'])).toEqual([
      'no-circular: test/fixtures/import-circle/a.ts → test/fixtures/import-circle/b.ts (test/fixtures/import-circle/b.ts → test/fixtures/import-circle/a.ts)',
    ]);
  });
});
