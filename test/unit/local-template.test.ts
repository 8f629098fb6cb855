import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheKey, localTemplate, type TemplateInputs } from '../../local/template.js';

const external = { mcpServers: [], lambdaTools: [] };

describe('the local template cache', () => {
  it('keys inputs by their data: the same data, the same key; any change, another', () => {
    const inputs: TemplateInputs = { external, stackProps: { agents: [{ name: 'a', description: 'd', instructions: 'i', tools: [] }] } };
    expect(cacheKey(inputs)).toBe(cacheKey(structuredClone(inputs)));
    expect(cacheKey(inputs)).not.toBe(cacheKey({ external, stackProps: { agents: [] } }));
    expect(cacheKey(inputs)).not.toBe(cacheKey({ external: { mcpServers: [{ name: 'docs', url: 'http://x' }], lambdaTools: [] } } as TemplateInputs));
  });

  it('keeps no key for inputs JSON would not keep whole: a function, a class instance', () => {
    class Duration {
      constructor(readonly seconds: number) {}
    }
    expect(cacheKey({ external, stackProps: { agents: [], x: () => 1 } as never })).toBeUndefined();
    expect(cacheKey({ external, stackProps: { x: new Duration(3) } as never })).toBeUndefined();
  });

  it('answers a kept template without synthesizing it again', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'stepwise-template-test-'));
    const inputs: TemplateInputs = { external };
    const kept = { Resources: { Kept: { Type: 'Test::Kept' } } };
    writeFileSync(join(folder, `${cacheKey(inputs)}.json`), JSON.stringify(kept));
    await expect(localTemplate(inputs, folder)).resolves.toEqual(kept);
    expect(readdirSync(folder)).toHaveLength(1);
  });
});
