import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { builtinTools } from '../../functions/core/tools/builtin/builtin.js';
import { toolResult } from '../../functions/core/model/messages.js';
import { calculator } from '../../functions/core/tools/builtin/calculator.js';
import { finishPlan } from '../../functions/core/tools/builtin/finish-plan.js';
import { ToolRegistry, defaultToolLimits, inputJsonSchema } from '../../functions/core/tools/registry.js';
import { MemoryWorkspace } from '../support/memory.js';

const registry = new ToolRegistry(builtinTools);
const ajv = new Ajv2020({ strict: false });

function ctx(workspace = new MemoryWorkspace()) {
  return { runId: 'run-1', workspace, limits: defaultToolLimits };
}

function call(name: string, input: unknown, id = 'toolu_1') {
  return { type: 'tool_use' as const, id, name, input };
}

describe('tool definitions', () => {
  it('give every tool a non-empty name, description and a valid JSON Schema of an object', () => {
    for (const tool of builtinTools) {
      expect(tool.name).toMatch(/^[a-z_]{1,64}$/);
      expect(tool.description.length).toBeGreaterThan(20);
      const schema = inputJsonSchema(tool);
      expect(ajv.validateSchema(schema), JSON.stringify(ajv.errors)).toBe(true);
      expect(schema.type).toBe('object');
    }
  });

  it('derive the schemas the model sees from their zod inputs', () => {
    const byName = Object.fromEntries(registry.specs().map((s) => [s.name, s.inputSchema]));
    expect(byName.calculator).toMatchObject({
      required: ['operation', 'a', 'b'],
      properties: { operation: { enum: ['add', 'subtract', 'multiply', 'divide'] } },
      additionalProperties: false,
    });
    expect(byName.read_file).toMatchObject({ required: ['path'] });
    expect(byName.write_file).toMatchObject({ required: ['path', 'content'] });
    expect(byName.list_files).not.toHaveProperty('required');
    expect(byName.edit_file).toMatchObject({ required: ['path', 'old_string', 'new_string'] });
  });

  it('accept exactly what the JSON Schema accepts, for generated inputs', async () => {
    for (const tool of builtinTools) {
      const validate = ajv.compile(inputJsonSchema(tool));
      await fc.assert(
        fc.property(fc.anything(), (input) => {
          expect(tool.input.safeParse(input).success).toBe(validate(input));
        }),
        { numRuns: 200 },
      );
    }
  });
});

describe('calculator', () => {
  const finite = fc.double({ noNaN: true, noDefaultInfinity: true });

  it('is exact for add, subtract, multiply and divide', async () => {
    const ops = { add: (a: number, b: number) => a + b, subtract: (a: number, b: number) => a - b, multiply: (a: number, b: number) => a * b, divide: (a: number, b: number) => a / b };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...(Object.keys(ops) as (keyof typeof ops)[])), finite, finite, async (operation, a, b) => {
        fc.pre(!(operation === 'divide' && b === 0));
        const expected = ops[operation](a, b);
        const result = await registry.execute(call('calculator', { operation, a, b }), ctx());
        if (Number.isFinite(expected)) expect(result).toEqual(toolResult('toolu_1', String(expected)));
        else expect(result.is_error).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses division by zero as a tool error', async () => {
    await fc.assert(
      fc.asyncProperty(finite, async (a) => {
        const result = await registry.execute(call('calculator', { operation: 'divide', a, b: 0 }), ctx());
        expect(result.is_error).toBe(true);
        expect(result.content).toContain('division by zero');
      }),
      { numRuns: 100 },
    );
  });

  it('names the wrong field when the input is invalid', async () => {
    const result = await registry.execute(call('calculator', { operation: 'power', a: 2, b: '3' }), ctx());
    expect(result.is_error).toBe(true);
    expect(result.content).toMatch(/^Invalid input for calculator: operation: .*; b: /);
  });

  it('answers 2 + 3 with 5', async () => {
    expect(await calculator.run({ operation: 'add', a: 2, b: 3 }, ctx())).toBe('5');
  });
});

describe('file tools', () => {
  const safeSegment = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/);
  const safePath = fc.array(safeSegment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));

  it('read_file returns exactly the bytes written', async () => {
    await fc.assert(
      fc.asyncProperty(safePath, fc.string({ unit: 'grapheme', maxLength: 500 }), async (path, content) => {
        const workspace = new MemoryWorkspace();
        const written = await registry.execute(call('write_file', { path, content }), ctx(workspace));
        expect(written.is_error).toBeUndefined();
        const read = await registry.execute(call('read_file', { path }), ctx(workspace));
        expect(read).toEqual(toolResult('toolu_1', content));
      }),
      { numRuns: 200 },
    );
  });

  it('read_file of a missing file is a descriptive error', async () => {
    await fc.assert(
      fc.asyncProperty(safePath, async (path) => {
        const read = await registry.execute(call('read_file', { path }), ctx());
        expect(read.is_error).toBe(true);
        expect(read.content).toContain(`no file at "${path}"`);
      }),
      { numRuns: 100 },
    );
  });

  it('read_file refuses bytes that are not UTF-8 text', async () => {
    const workspace = new MemoryWorkspace();
    await workspace.write('blob.bin', new Uint8Array([0xff, 0xfe, 0x00]));
    const read = await registry.execute(call('read_file', { path: 'blob.bin' }), ctx(workspace));
    expect(read).toEqual(toolResult('toolu_1', 'read_file failed: "blob.bin" is not UTF-8 text, so it cannot be shown.', true));
  });

  it('write_file refuses content over the file size cap', async () => {
    const workspace = new MemoryWorkspace();
    const result = await registry.execute(call('write_file', { path: 'big.txt', content: 'x'.repeat(101) }), {
      ...ctx(workspace),
      limits: { ...defaultToolLimits, maxFileBytes: 100 },
    });
    expect(result.is_error).toBe(true);
    expect(result.content).toContain('over the 100-byte file limit');
    expect(workspace.files.size).toBe(0);
  });

  it('edit_file replaces exactly one occurrence', async () => {
    const workspace = new MemoryWorkspace();
    await workspace.write('a.txt', new TextEncoder().encode('one two three'));
    const ok = await registry.execute(call('edit_file', { path: 'a.txt', old_string: 'two', new_string: '2' }), ctx(workspace));
    expect(ok).toEqual(toolResult('toolu_1', 'Edited a.txt: replaced 1 occurrence.'));
    expect(new TextDecoder().decode(await workspace.read('a.txt'))).toBe('one 2 three');
  });

  it('edit_file refuses a missing or repeated old_string and leaves the file unchanged', async () => {
    const workspace = new MemoryWorkspace();
    await workspace.write('a.txt', new TextEncoder().encode('x x'));
    const repeated = await registry.execute(call('edit_file', { path: 'a.txt', old_string: 'x', new_string: 'y' }), ctx(workspace));
    expect(repeated.is_error).toBe(true);
    expect(repeated.content).toContain('appears 2 times');
    const missing = await registry.execute(call('edit_file', { path: 'a.txt', old_string: 'z', new_string: 'y' }), ctx(workspace));
    expect(missing.is_error).toBe(true);
    expect(missing.content).toContain('was not found');
    expect(new TextDecoder().decode(await workspace.read('a.txt'))).toBe('x x');
  });

  it('list_files lists paths with sizes under a folder', async () => {
    const workspace = new MemoryWorkspace();
    await workspace.write('src/a.ts', new Uint8Array(3));
    await workspace.write('src/b.ts', new Uint8Array(4));
    await workspace.write('README.md', new Uint8Array(1));
    expect(await registry.execute(call('list_files', { path: 'src' }), ctx(workspace))).toEqual(
      toolResult('toolu_1', 'src/a.ts (3 bytes)\nsrc/b.ts (4 bytes)'),
    );
    expect((await registry.execute(call('list_files', {}), ctx(workspace))).content.split('\n')).toHaveLength(3);
  });
});

describe('ToolRegistry.execute', () => {
  it('never throws for any tool name and input: it answers with a tool_result', async () => {
    const names = fc.oneof(fc.constantFrom(...registry.names), fc.string());
    await fc.assert(
      fc.asyncProperty(names, fc.anything(), async (name, input) => {
        const result = await registry.execute(call(name, input), ctx());
        expect(result.type).toBe('tool_result');
        expect(result.tool_use_id).toBe('toolu_1');
        expect(typeof result.content).toBe('string');
      }),
      { numRuns: 500 },
    );
  });

  it('answers an unknown tool with the list of tools', async () => {
    expect(await registry.execute(call('rm_rf', {}), ctx())).toEqual(
      toolResult('toolu_1', 'Unknown tool "rm_rf". Available tools: calculator, read_file, write_file, list_files, edit_file.', true),
    );
  });
});

describe('finish_plan', () => {
  const planner = new ToolRegistry([finishPlan]);
  const saved: unknown[] = [];
  const planCtx = { ...ctx(), plans: { savePlan: async (_runId: string, plan: unknown) => void saved.push(plan) } };
  const stepOf = (i: number, size = 10) => ({ description: `Step ${i} ${'d'.repeat(size)}`, action: 'create_file' });

  it('refuses a plan over 100 steps or 32 KiB of JSON with a tool error naming the limit, and stores nothing', async () => {
    saved.length = 0;
    const tooMany = await planner.execute(call('finish_plan', { goal: 'g', steps: Array.from({ length: 101 }, (_, i) => stepOf(i)) }), planCtx);
    expect(tooMany).toEqual(toolResult('toolu_1', 'Invalid input for finish_plan: steps: must have at most 100 steps; merge small steps', true));
    const tooBig = await planner.execute(call('finish_plan', { goal: 'g', steps: Array.from({ length: 40 }, (_, i) => stepOf(i, 1000)) }), planCtx);
    expect(tooBig.is_error).toBe(true);
    expect(tooBig.content).toMatch(/^Invalid input for finish_plan: \(input\): the plan is \d+ bytes of JSON, over the 32768-byte limit; shorten/);
    expect(saved).toEqual([]);
  });

  it('stores a plan of 100 steps that fits in 32 KiB', async () => {
    saved.length = 0;
    const plan = { goal: 'g', steps: Array.from({ length: 100 }, (_, i) => stepOf(i, 200)) };
    expect(await planner.execute(call('finish_plan', plan), planCtx)).toEqual(toolResult('toolu_1', 'Plan accepted: 100 steps. The Coder will carry it out.'));
    expect(saved).toEqual([plan]);
    expect(inputJsonSchema(finishPlan)).toMatchObject({ properties: { steps: { maxItems: 100 } } });
  });
});

describe('file tools at their limits', () => {
  const limited = (workspace: MemoryWorkspace, maxFileBytes: number, maxListEntries = 1000) => ({ ...ctx(workspace), limits: { maxFileBytes, maxListEntries } });

  it('read_file shows a file of exactly the size limit and refuses a larger one', async () => {
    const workspace = new MemoryWorkspace();
    await workspace.write('a.txt', new TextEncoder().encode('x'.repeat(100)));
    expect([
      await registry.execute(call('read_file', { path: 'a.txt' }), limited(workspace, 100)),
      await registry.execute(call('read_file', { path: 'a.txt' }), limited(workspace, 99)),
    ]).toEqual([
      toolResult('toolu_1', 'x'.repeat(100)),
      toolResult('toolu_1', 'read_file failed: "a.txt" is 100 bytes, over the 99-byte limit.', true),
    ]);
  });

  it('write_file writes content of exactly the size limit', async () => {
    const workspace = new MemoryWorkspace();
    expect(await registry.execute(call('write_file', { path: 'a.txt', content: 'x'.repeat(100) }), limited(workspace, 100))).toEqual(
      toolResult('toolu_1', 'Wrote 100 bytes to a.txt.'),
    );
  });

  it('list_files says when there is nothing to list, and when it lists only the first files', async () => {
    const workspace = new MemoryWorkspace();
    const empty = [
      await registry.execute(call('list_files', {}), ctx(workspace)),
      await registry.execute(call('list_files', { path: 'src' }), ctx(workspace)),
    ];
    await workspace.write('a.txt', new Uint8Array(1));
    await workspace.write('b.txt', new Uint8Array(2));
    expect([...empty, await registry.execute(call('list_files', {}), limited(workspace, 100, 1))]).toEqual([
      toolResult('toolu_1', 'The workspace is empty.'),
      toolResult('toolu_1', 'No files under "src".'),
      toolResult('toolu_1', 'a.txt (1 bytes)\n… more files not shown (limit 1); list a subfolder.'),
    ]);
  });

  it('edit_file refuses an empty old_string', async () => {
    const workspace = new MemoryWorkspace();
    await workspace.write('a.txt', new TextEncoder().encode('abc'));
    expect(await registry.execute(call('edit_file', { path: 'a.txt', old_string: '', new_string: 'x' }), ctx(workspace))).toEqual(
      toolResult('toolu_1', 'edit_file failed: old_string is empty; give the exact text to replace.', true),
    );
  });
});

describe('ToolRegistry', () => {
  it('refuses to register two tools of one name', () => {
    expect(() => new ToolRegistry([calculator, calculator])).toThrow(new Error('Tool "calculator" is registered twice.'));
  });

  it('says when an agent has no tools at all, and names a field of the input that is wrong', async () => {
    expect([
      await new ToolRegistry([]).execute(call('calculator', {}), ctx()),
      await registry.execute(call('calculator', { operation: 'add', a: 1 }), ctx()),
      await registry.execute(call('calculator', 'add'), ctx()),
    ]).toEqual([
      toolResult('toolu_1', 'Unknown tool "calculator". Available tools: none.', true),
      toolResult('toolu_1', 'Invalid input for calculator: b: Invalid input: expected number, received undefined', true),
      toolResult('toolu_1', 'Invalid input for calculator: (input): Invalid input: expected object, received string', true),
    ]);
  });
});
