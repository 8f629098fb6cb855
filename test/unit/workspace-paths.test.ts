import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FileTooLarge, PathRejected } from '../../functions/core/workspace/types.js';
import { checkPath, pathBudget } from '../../functions/core/workspace/paths.js';

describe('checkPath', () => {
  it.each([
    ['../x', /contains "\.\."/],
    ['/etc/passwd', /is absolute/],
    ['a/../../b', /contains "\.\."/],
    ['a\\b', /backslash/],
    ['a\0b', /NUL or control/],
    ['x'.repeat(2000), /longer than 1024 bytes/],
    ['', /empty/],
    ['C:/Windows', /is absolute/],
    ['~/secrets', /is absolute/],
    ['a/\u0085b', /control/],
  ])('refuses %j', (path, reason) => {
    expect(() => checkPath(path)).toThrow(PathRejected);
    expect(() => checkPath(path)).toThrow(reason);
  });

  it.each([
    ['a.txt', 'a.txt'],
    ['./src//index.ts', 'src/index.ts'],
    ['dir/', 'dir'],
    ['%2e%2e/x', '%2e%2e/x'],
    ['ü/日本.md', 'ü/日本.md'],
    ['...', '...'],
  ])('accepts %j as %j', (path, normal) => {
    expect(checkPath(path)).toBe(normal);
  });

  it('allows the root only where asked', () => {
    expect(checkPath('', { allowRoot: true })).toBe('');
    expect(checkPath('./', { allowRoot: true })).toBe('');
  });

  it('never accepts a path that could leave the workspace', () => {
    const segment = fc.oneof(fc.constantFrom('..', '.', '', '/', '\\', 'a', '\0', '%2e'), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }).map((s) => s.join('/')), (path) => {
        let normal: string;
        try {
          normal = checkPath(path);
        } catch (error) {
          expect(error).toBeInstanceOf(PathRejected);
          return;
        }
        expect(normal.split('/')).not.toContain('..');
        expect(normal.startsWith('/')).toBe(false);
        expect(normal).not.toMatch(/[\\\0]/);
        expect(Buffer.byteLength(normal)).toBeLessThanOrEqual(1024);
        expect(normal).not.toBe('');
      }),
      { numRuns: 1000 },
    );
  });
});

describe('checkPath at its limits', () => {
  it('accepts a path of exactly 1,024 bytes, counting UTF-8 bytes, and a colon that is not a drive', () => {
    const path = `${'ü'.repeat(500)}${'x'.repeat(24)}`;
    expect([checkPath(path), checkPath('notes/a:b.md'), checkPath('', { allowRoot: true })]).toEqual([path, 'notes/a:b.md', '']);
    expect(() => checkPath(`${path}x`)).toThrow(new PathRejected('The path is longer than 1024 bytes; use a shorter path.'));
  });

  it('refuses a path that is not a string', () => {
    expect(() => checkPath(42 as unknown as string)).toThrow(new PathRejected('The path must be a string.'));
  });
});

describe('checkPath room', () => {
  it('refuses a normalized path over the room a store leaves, naming both sizes, and takes one that fits exactly', () => {
    expect(checkPath('./abc', { maxBytes: 3 })).toBe('abc');
    expect(() => checkPath('./abcd', { maxBytes: 3 })).toThrow(
      new PathRejected(
        "The path is 4 bytes; this workspace takes paths of at most 3 bytes (the storage key, with the run's prefix, is limited to 1024 bytes). Use a shorter path.",
      ),
    );
  });

  it('leaves 1024 bytes of path when no room is given', () => {
    expect(checkPath('x'.repeat(1024))).toBe('x'.repeat(1024));
  });
});

describe('pathBudget', () => {
  it('is what the 1024-byte key leaves after the prefix, counted in UTF-8 bytes', () => {
    expect([pathBudget(''), pathBudget('runs/ü/')]).toEqual([1024, 1016]);
  });
});

describe('FileTooLarge', () => {
  it('names the path, the size and the limit', () => {
    expect(new FileTooLarge('a.txt', 100, 99).message).toBe('"a.txt" is 100 bytes, over the 99-byte limit.');
  });
});
