// The README works from a clone alone: no path outside the repository, every file it links or
// names exists, the commands it shows name files that exist, and its statement of which engine
// validation groups meet their target matches simulator/VALIDATION.md, and its list of endpoints
// has one curl line for every endpoint the gateway serves.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { endpointFamilies } from '../gateway/endpoints/families.ts';
import { UNSUPPORTED_ENDPOINTS } from '../gateway/server/unsupported-endpoints.ts';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
/** The README as one line per paragraph (sentences wrap across lines). */
const flat = readme.replace(/\s*\n\s*/g, ' ');

describe('README', () => {
  it('points at nothing outside the clone (no ../shared, no seed specs)', () => {
    expect(readme).not.toContain('../shared');
    expect(readme).not.toMatch(/\]\(\.\.\//); // no link out of the repository
    expect(readme).not.toMatch(/seeds\//);
  });

  it('every relative link and every repository path in backticks exists', () => {
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^(https?:|#|mailto:)/.test(l));
    const named = [...readme.matchAll(/`((?:core|gateway|simulator|traces|bench|experiments|notebooks-web|test|bin)\/[A-Za-z0-9_./-]*)`/g)].map((m) => m[1]!);
    // Paths inside commands too (`npx switchyard sim experiments/x.yaml`, `trace import … <file>`).
    const inCommands = [...readme.matchAll(/(?:^|\s)((?:experiments|traces|gateway|bench)\/[A-Za-z0-9_./-]+\.(?:yaml|jsonl|csv|ts|mjs))\b/gm)].map((m) => m[1]!);
    const paths = [...new Set([...links.map((l) => l.replace(/#.*$/, '')), ...named, ...inCommands])];
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !existsSync(join(root, p)))).toEqual([]);
  });

  it('"Every endpoint, one curl each" has a curl line for every endpoint family and GET endpoint, and names the 501s', () => {
    const section = /### Every endpoint, one curl each\n([\s\S]*?)\n### /.exec(readme)?.[1] ?? '';
    const curls = section.split('\n').filter((l) => l.startsWith('curl '));
    const has = (path: string) => curls.some((l) => l.includes(`$G${path}`));
    const paths = [...endpointFamilies().map((f) => f.path), '/v1/responses/resp_', '/v1/videos/video_sy', '/v1/models', '/v1/models/demo', '/health'];
    expect(paths.filter((p) => !has(p))).toEqual([]);
    for (const { name } of UNSUPPORTED_ENDPOINTS) expect(section).toContain(name);
  });

  it('the trace-import example reads the committed raw sample, which has its SOURCE note and licence', () => {
    const m = /npx switchyard trace import mooncake (\S+) /.exec(readme);
    expect(m).not.toBeNull();
    const sample = join(root, m![1]!);
    expect(existsSync(sample)).toBe(true);
    expect(existsSync(join(sample, '..', 'SOURCE.txt'))).toBe(true);
    expect(existsSync(join(sample, '..', 'LICENSE'))).toBe(true);
  });

  it('the npm scripts it names exist', () => {
    const scripts = Object.keys((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    const used = [...readme.matchAll(/npm run ([a-z:-]+)/g)].map((m) => m[1]!);
    expect(used.filter((s) => !scripts.includes(s))).toEqual([]);
  });

  it('describes the design in its own words', () => {
    expect(readme).toMatch(/^## Design$/m);
  });

  it('gives the RouteWise study its measured wall time, not a guess', () => {
    expect(flat).toMatch(/experiments\/routewise\.yaml` \([^)]*\d+–\d+ s of wall time measured/);
    expect(flat).not.toMatch(/~4 min/);
  });

  it('names exactly the VALIDATION groups that meet and miss their target', () => {
    const validation = readFileSync(join(root, 'simulator', 'VALIDATION.md'), 'utf8');
    const target = /Target: median \|error\| ≤ (\d+) % for TTFT and ≤ (\d+) % for TPOT/.exec(validation)!;
    const [ttftMax, tpotMax] = [Number(target[1]), Number(target[2])];
    expect(flat).toContain(`median |error| ≤ ${ttftMax} % for TTFT and ≤ ${tpotMax} % for TPOT`);
    // Summary rows: | group TP n | points | TTFT mean | median | p90 | bias | TPOT mean | median | p90 | bias | met/missed |
    const rows = [...validation.matchAll(/^\| (.+) TP (\d+) \| \d+ \| [\d.]+ \| ([\d.]+) \| [\d.]+ \| [-+\d.]+ \| [\d.]+ \| ([\d.]+) \| [\d.]+ \| [-+\d.]+ \| (met|missed) \|$/gm)].map((m) => ({
      family: m[1]!,
      tp: Number(m[2]),
      missed: [...(Number(m[3]) > ttftMax ? ['TTFT'] : []), ...(Number(m[4]) > tpotMax ? ['TPOT'] : [])],
      met: m[5] === 'met',
    }));
    expect(rows.length).toBeGreaterThan(5);
    for (const r of rows) expect(r.met).toBe(r.missed.length === 0);
    const list = (xs: number[]) => (xs.length === 1 ? `${xs[0]}` : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`);
    // Consecutive rows of one family (and, when missed, the same metrics) share one phrase.
    const phrases = (sel: typeof rows, withWhy: boolean) => {
      const groups: Array<{ key: string; family: string; why: string; tps: number[] }> = [];
      for (const r of sel) {
        const why = withWhy ? ` (${r.missed.join(' and ')})` : '';
        const last = groups.at(-1);
        if (last && last.family === r.family && last.why === why) last.tps.push(r.tp);
        else groups.push({ key: `${r.family}${why}`, family: r.family, why, tps: [r.tp] });
      }
      return groups.map((g) => `${g.family} TP ${list(g.tps)}${g.why}`).join(' and ');
    };
    expect(flat).toContain(`is met by ${phrases(rows.filter((r) => r.met), false)};`);
    expect(flat).toContain(`it is missed by ${phrases(rows.filter((r) => !r.met), true)};`);
  });
});
