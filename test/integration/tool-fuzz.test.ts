/**
 * Tool inputs as a confused or hostile model might send them, against the real S3 workspace:
 * every call answers with a tool result, nothing is thrown, and nothing is ever written outside
 * `workspaces/<runId>/` (checked on the emulator's whole bucket). Paths near the 1,024-byte key
 * limit are tried too: the emulator refuses longer keys as S3 does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { S3Workspace } from '../../functions/adapters/s3/workspace.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { builtinTools } from '../../functions/core/tools/builtin/builtin.js';
import { ToolRegistry, defaultToolLimits } from '../../functions/core/tools/registry.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();
const registry = new ToolRegistry(builtinTools);

/**
 * Paths near S3's 1,024-byte key limit, where the run's prefix decides whether the key fits: in
 * one- to four-byte characters, in segments a file system stand-in can keep (at most 200 bytes).
 */
const longPath = fc
  .tuple(fc.oneof(fc.integer({ min: 990, max: 1030 }), fc.integer({ min: 900, max: 1100 })), fc.constantFrom('a', 'é', '日', '😀'), fc.integer({ min: 1, max: 50 }))
  .map(([bytes, unit, perSegment]) => {
    const segment = unit.repeat(perSegment);
    let path = segment;
    while (Buffer.byteLength(path) < bytes) path += `/${segment}`;
    const chars = [...path];
    while (Buffer.byteLength(chars.join('')) > bytes) chars.pop();
    return chars.join('').replace(/\/$/, '');
  });

const hostilePath = fc.oneof(
  fc.constantFrom(
    '..', '../x', '../../etc/passwd', '/etc/passwd', '/', '//x', 'a/../../b', 'a/./../..', '..\\..\\x', 'C:\\x', 'c:/x', '~/x',
    '%2e%2e/x', '%2e%2e%2fx', '..%2fx', '．．/x', '..／x', '\u2215etc\u2215passwd', 'a\u0000b', '\u0000', '', ' ', '\n', 'a\u001bb',
    'x'.repeat(1025), 'é'.repeat(600), 'workspaces/other-run/x', '../fuzz-victim/stolen.txt',
  ),
  fc.array(fc.oneof(fc.constantFrom('..', '.', '', '%2e', '\\', '\u0000', 'a', 'ü', 'workspaces'), fc.string({ maxLength: 5 })), { maxLength: 6 }).map((s) => s.join('/')),
  fc.string({ maxLength: 40 }),
  longPath,
);

const inputFor: Record<string, fc.Arbitrary<unknown>> = {
  read_file: fc.oneof(fc.record({ path: hostilePath }), fc.anything()),
  write_file: fc.oneof(fc.record({ path: hostilePath, content: fc.string({ maxLength: 50 }) }), fc.anything()),
  list_files: fc.oneof(fc.record({ path: hostilePath }, { requiredKeys: [] }), fc.anything()),
  edit_file: fc.oneof(fc.record({ path: hostilePath, old_string: fc.string({ maxLength: 5 }), new_string: fc.string({ maxLength: 5 }) }), fc.anything()),
  calculator: fc.oneof(
    fc.record({ operation: fc.constantFrom('add', 'subtract', 'multiply', 'divide', 'pow', ''), a: fc.oneof(fc.double(), fc.string()), b: fc.oneof(fc.double(), fc.integer()) }),
    fc.anything(),
  ),
};

describe('tool inputs from a hostile model', () => {
  it.each(Object.keys(inputFor))('%s always answers with a result and writes only inside its run', async (name) => {
    const { s3 } = awsClients(readEnv(aws.env));
    const runId = `fuzz-${name.replace('_', '-')}`;
    const ctx = { runId, workspace: new S3Workspace(s3, aws.emulators.bucket, runId), limits: defaultToolLimits };
    // A file to read and edit, and another run's file that must stay out of reach.
    await ctx.workspace.write('notes.txt', new TextEncoder().encode('hello'));
    await new S3Workspace(s3, aws.emulators.bucket, 'fuzz-victim').write('secret.txt', new TextEncoder().encode('secret'));
    const before = new Set(await aws.allKeys());
    let n = 0;
    await fc.assert(
      fc.asyncProperty(inputFor[name] as fc.Arbitrary<unknown>, async (input) => {
        const result = await registry.execute({ type: 'tool_use', id: `toolu_${n++}`, name, input }, ctx);
        expect(result.type).toBe('tool_result');
        expect(typeof result.content).toBe('string');
        expect(result.content).not.toContain('secret');
        // The path rules decide before S3 is asked: a key S3 would refuse is never sent.
        expect(result.content).not.toContain('refused by the store');
      }),
      { numRuns: 1000 },
    );
    // Every key this run added lies under its own prefix; the others are exactly what was there.
    const after = await aws.allKeys();
    const added = after.filter((k) => !before.has(k));
    expect(added.filter((k) => !k.startsWith(`workspaces/${runId}/`))).toEqual([]);
    const others = (keys: Iterable<string>) => [...keys].filter((k) => !k.startsWith(`workspaces/${runId}/`)).sort();
    expect(others(after)).toEqual(others(before));
    expect(after.filter((k) => k.startsWith('workspaces/fuzz-victim/'))).toEqual(['workspaces/fuzz-victim/secret.txt']);
  }, 180_000);
});
