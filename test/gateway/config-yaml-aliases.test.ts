// A YAML alias whose anchor is missing, or an alias bomb, is a configuration problem reported
// with its file and line (as a syntax error is), not an exception out of the loader.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadGatewayConfig, type ConfigProblem } from '../../gateway/config/load.ts';

function problemsOf(models: string): ConfigProblem[] {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-yaml-alias-'));
  try {
    writeFileSync(join(dir, 'models.yaml'), models);
    loadGatewayConfig(dir, {});
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  throw new Error('expected a ConfigError');
}

describe('YAML aliases in models.yaml', () => {
  it('an alias to an anchor defined nowhere names the alias, its line and the fix', () => {
    const [p, ...rest] = problemsOf('models:\n  - id: demo\n    route: *routes\n');
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ line: 3, field: '(yaml)', fix: expect.stringContaining('&routes') });
    expect(p!.message).toContain('routes');
  });

  it('an alias used before its anchor is the same problem', () => {
    const [p] = problemsOf('models:\n  - id: a\n    route: *r\n  - id: b\n    route: &r\n      - base_url: http://127.0.0.1:1/v1\n');
    expect(p).toMatchObject({ line: 3, field: '(yaml)' });
  });

  it('an alias bomb is refused as a problem, not expanded', () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]', ...'bcdefghij'.split('').map((k, i) => `${k}: &${k} [${Array(10).fill(`*${'abcdefghij'[i]}`).join(', ')}]`), 'models: []'].join('\n');
    const problems = problemsOf(bomb);
    expect(problems.some((p) => p.field === '(yaml)' && /alias/i.test(p.message))).toBe(true);
  });
});
