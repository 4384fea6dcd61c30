// gateway/ and simulator/ do not import each other (static, type-only, re-export and dynamic
// imports alike): they meet only in bin/ (the CLI layer, e.g. `switchyard demo`) and in tests.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'node_modules' ? [] : sources(join(dir, e.name))) : /\.(ts|mts|mjs|js)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Relative module specifiers of a file (import/export … from, bare import, dynamic import()), resolved. */
function importsOf(file: string, text = readFileSync(file, 'utf8')): string[] {
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s+['"](\.[^'"]+)['"]/gm),
    ...text.matchAll(/^\s*import\s+['"](\.[^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specs.map((s) => resolve(dirname(file), s));
}

/** Imports from files under `from` that land under `to`, as `file -> target` relative to the root. */
function crossings(from: string, to: string): string[] {
  const target = join(ROOT, to) + sep;
  return sources(join(ROOT, from)).flatMap((f) => importsOf(f).filter((t) => t.startsWith(target)).map((t) => `${relative(ROOT, f)} -> ${relative(ROOT, t)}`));
}

describe('gateway/ and simulator/', () => {
  it('gateway/ imports nothing from simulator/', () => {
    expect(crossings('gateway', 'simulator')).toEqual([]);
  });

  it('simulator/ imports nothing from gateway/', () => {
    expect(crossings('simulator', 'gateway')).toEqual([]);
  });

  it('the scan sees every form of import', () => {
    const f = join(ROOT, 'gateway', 'x.ts');
    const text = `import { a } from '../simulator/a.ts';\nimport type { B } from "../simulator/b.ts";\nexport * from '../simulator/c.ts';\nimport '../simulator/d.ts';\nconst e = await import('../simulator/e.ts');\n`;
    expect(importsOf(f, text).map((t) => relative(ROOT, t))).toEqual(['simulator/a.ts', 'simulator/b.ts', 'simulator/c.ts', 'simulator/d.ts', 'simulator/e.ts']);
  });
});
