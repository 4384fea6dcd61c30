// `switchyard demo`: the example's emulator list loads and is checked; the demo starts the
// emulators and a gateway over them, serves a request end to end, and on SIGTERM drains the
// gateway and stops the emulators (exit 0). A gateway.yaml that still lists emulators is refused
// with the way out.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadEmulatorList } from '../bin/demo-command.ts';
import { ConfigError, loadGatewayConfig } from '../gateway/config/load.ts';
import { freePort } from './free-port.ts';

const repoRoot = join(import.meta.dirname, '..');

/** A copy of gateway/example with the emulators' ports 8101-8103 moved to free ones. */
async function exampleCopy(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-demo-'));
  cpSync(join(repoRoot, 'gateway', 'example'), dir, { recursive: true });
  const moved = new Map<string, string>();
  for (const p of ['8101', '8102', '8103']) moved.set(p, String(await freePort()));
  for (const f of ['models.yaml', 'emulators.yaml']) writeFileSync(join(dir, f), readFileSync(join(dir, f), 'utf8').replace(/\b810[123]\b/g, (p) => moved.get(p)!));
  return dir;
}

describe('the emulator list', () => {
  it("the example's: three engine emulators, the hosted one with a key from the environment", () => {
    const list = loadEmulatorList(join(repoRoot, 'gateway/example/emulators.yaml'), {});
    expect(list.map((e) => [e.port, e.mode, e.api_key ?? null])).toEqual([
      [8101, 'engine', null],
      [8102, 'engine', null],
      [8103, 'engine', 'demo-hosted-key'],
    ]);
    expect(loadEmulatorList(join(repoRoot, 'gateway/example/emulators.yaml'), { DEMO_HOSTED_API_KEY: 'k2' })[2]!.api_key).toBe('k2');
  });

  it('names the file and field of a problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-emulators-'));
    const f = join(dir, 'emulators.yaml');
    writeFileSync(f, 'emulators:\n  - port: 9001\n  - port: 9001\n');
    expect(() => loadEmulatorList(f, {})).toThrow(`${f}: emulators.1.port: port 9001 is already used by emulators.0`);
    writeFileSync(f, 'emulators:\n  - port: 9001\n    fault: {}\n');
    expect(() => loadEmulatorList(f, {})).toThrow(/emulators\.0: Unrecognized key: "fault"/);
    expect(() => loadEmulatorList(join(dir, 'none.yaml'), {})).toThrow(/no such emulator list; give one with --emulators/);
    writeFileSync(f, 'emulators:\n  - port: 9001\n    faults: { error_rate: 0.1\n');
    expect(() => loadEmulatorList(f, {})).toThrow(new RegExp(`${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: YAML syntax error: .+\n +\\d+ \\| `));
  });

  it('gateway.yaml no longer takes emulators: the problem says where they went', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-old-demo-'));
    writeFileSync(join(dir, 'models.yaml'), 'models:\n  - id: m\n    route:\n      - base_url: http://127.0.0.1:9001/v1\n');
    writeFileSync(join(dir, 'gateway.yaml'), 'auth:\n  mode: none\nemulators:\n  - port: 9001\n');
    try {
      loadGatewayConfig(dir, {});
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems[0]).toMatchObject({ message: expect.stringContaining("'emulators'"), fix: expect.stringContaining('emulators.yaml') });
    }
  });
});

describe('switchyard demo', () => {
  it('starts the emulators and the gateway, serves a chat completion, and stops both on SIGTERM', async () => {
    const dir = await exampleCopy();
    const port = await freePort();
    const child = spawn(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), 'demo', '--config', dir, '--port', String(port), '--admin-port', 'off', '--log-level', 'warn'], {
      cwd: dir,
      env: { ...process.env, SWITCHYARD_REQUEST_LOG: join(dir, 'requests.duckdb') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      const deadline = Date.now() + 45_000;
      while (!/switchyard gateway on http/.test(out)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`demo did not start:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(out.match(/^emulator \(engine/gm)).toHaveLength(3);
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-switchyard-demo', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 4 }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 90_000);
});
