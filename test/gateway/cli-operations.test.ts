// The `switchyard gateway` process on loopback: SIGHUP with an invalid file keeps the old
// configuration (logged with the reason, and reported by /status/config), SIGHUP with a valid one swaps it; SIGTERM lets an
// in-flight request finish, flushes the request log and exits 0; `switchyard trace export`
// writes the log as a trace.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { readTrace } from '../../traces/arrow-trace.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { runCli } from './harness.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'bin/switchyard.mjs');
const KEY = 'sk-cli-test';
let child: ChildProcess | null = null;
let emu: RunningEmulator | null = null;
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await emu?.close();
});

function models(weight: number, emuUrl: string, router = 'fixed'): string {
  return `models:\n  - id: m\n    router: ${router}\n    route:\n      - base_url: ${emuUrl}\n        weight: ${weight}\n`;
}


describe('switchyard gateway signals', () => {
  it('SIGHUP: invalid keeps the old config, valid swaps; SIGTERM drains, flushes the log, exits 0; trace export', async () => {
    emu = await startEmulator({ faults: { latency_scale: 0.05 } });
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-cli-ops-'));
    const logPath = join(dir, 'requests.duckdb');
    writeFileSync(join(dir, 'models.yaml'), models(1, emu.baseUrl));
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `server:\n  port: 0\n  admin_port: 0\n  seed: 1\n  drain_grace_ms: 10000\nauth:\n  keys:\n    - id: t\n      sha256: ${hashKey(KEY)}\n      admin: true\nrequest_log:\n  path: ${logPath}\n  flush_interval_ms: 60000\n`,
    );
    child = spawn(process.execPath, [cli, 'gateway', '--config', dir], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    const waitFor = async (re: RegExp, ms = 20_000): Promise<RegExpExecArray> => {
      const until = Date.now() + ms;
      for (;;) {
        const m = re.exec(out);
        if (m) return m;
        if (Date.now() > until) throw new Error(`timed out waiting for ${re}: ${out}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    const m = await waitFor(/switchyard gateway on (http:\/\/[\d.:]+)\/v1 .*admin (http:\/\/[\d.:]+)\)/);
    const [url, admin] = [m[1]!, m[2]!];
    const routing = async () => ((await (await fetch(`${admin}/routing`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { models: Array<{ strategy: string; routes: Array<{ configured_weight: number }> }> }).models[0]!;
    const ask = (maxTokens = 2) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens }),
      });
    expect((await ask()).status).toBe(200);

    // Invalid: weight must be ≥ 0 ⇒ logged with the reason, old config serves on.
    writeFileSync(join(dir, 'models.yaml'), models(-3, emu.baseUrl));
    child.kill('SIGHUP');
    await waitFor(/reload rejected: configuration invalid[^\n]*/);
    expect(out).toMatch(/weight/);
    expect((await routing()).routes[0]!.configured_weight).toBe(1);
    expect((await ask()).status).toBe(200);
    const status = async () => (await (await fetch(`${admin}/status/config`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { last_load: { status: string; problems: string[] }; generation: { number: number; cause: string } };
    const rejected = await status();
    expect(rejected.last_load.status).toBe('rejected');
    expect(rejected.last_load.problems.join('\n')).toMatch(/models\.yaml:\d+: models\.0\.route\.0\.weight/);
    expect(rejected.generation).toMatchObject({ number: 1, cause: 'start' });

    // Valid: swapped.
    writeFileSync(join(dir, 'models.yaml'), models(4, emu.baseUrl, 'round_robin'));
    child.kill('SIGHUP');
    await waitFor(/configuration reloaded/);
    expect(await routing()).toMatchObject({ strategy: 'round_robin', routes: [{ configured_weight: 4 }] });
    expect(await status()).toMatchObject({ last_load: { status: 'ok', problems: [] }, generation: { number: 2, cause: 'reload' } });

    // SIGTERM with a request in flight: it finishes, the process exits 0.
    emu.setFaults({ first_token_stall_ms: 800 });
    const slow = ask();
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('The quick');
    expect(await exited).toBe(0);
    expect(out).toMatch(/"cut":0/);

    // Every request (3) is in the log; export it.
    const trace = join(dir, 'out.arrow');
    const exp = await runCli(['trace', 'export', '--from', logPath, '--to', trace, '--since', '1h']);
    expect(exp.out).toMatch(/wrote 3 request\(s\)/);
    expect(exp.code).toBe(0);
    expect((await readTrace(trace)).rows).toHaveLength(3);
  }, 60_000);
});
