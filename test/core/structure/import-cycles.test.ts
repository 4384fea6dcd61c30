// core/ has no import cycle: every file's relative imports (type-only ones included, since a
// type cycle is still a design cycle) form a DAG. A small scan of import/export-from statements.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const CORE = resolve(import.meta.dirname, '../../../core');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** Relative imports of a file, resolved to absolute paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'/gm)) out.push(resolve(dirname(file), m[1]!));
  for (const m of text.matchAll(/^\s*import\s+'(\.[^']+)'/gm)) out.push(resolve(dirname(file), m[1]!));
  return out;
}

/** The first cycle found, as a list of files relative to core/, or null. */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, 'active' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): string[] | null => {
    state.set(f, 'active');
    stack.push(f);
    for (const g of graph.get(f) ?? []) {
      const s = state.get(g);
      if (s === 'active') return [...stack.slice(stack.indexOf(g)), g];
      if (s === undefined) {
        const c = visit(g);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(f, 'done');
    return null;
  };
  for (const f of [...graph.keys()].sort()) {
    if (state.has(f)) continue;
    const c = visit(f);
    if (c) return c;
  }
  return null;
}

describe('core/ imports', () => {
  it('form no cycle', () => {
    const graph = new Map(files(CORE).map((f) => [f, importsOf(f)]));
    const cycle = findCycle(graph);
    expect(cycle?.map((f) => relative(CORE, f)) ?? null).toBeNull();
  });

  it('the scan finds a planted cycle', () => {
    expect(findCycle(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual(['a', 'b', 'c', 'a']);
    expect(findCycle(new Map([['a', ['b']], ['b', []]]))).toBeNull();
  });
});
