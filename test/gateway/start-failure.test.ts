// A gateway that cannot bind its port exits non-zero at once, having closed what it opened (store,
// request-log writer thread, upstream pools); `switchyard demo` then stops its emulators and exits
// with the gateway's status. Each run is a spawned CLI process against a port this test holds.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const cli = join(root, 'bin', 'switchyard.mjs');

function hold(port = 0): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer().listen(port, '127.0.0.1', () => resolve(s));
  });
}
const portOf = (s: Server): number => (s.address() as { port: number }).port;

/** Runs the CLI to its exit; a run still alive after `ms` is killed and reported as 'hung'. */
function runToExit(args: string[], env: Record<string, string>, ms = 30_000): Promise<{ code: number | 'hung'; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: 'hung', out });
    }, ms);
    child.once('exit', (code) => {
      clearTimeout(guard);
      resolve({ code: code ?? 1, out });
    });
  });
}

describe('a gateway that cannot start exits', () => {
  let held: Server;
  let dir: string;
  beforeAll(async () => {
    held = await hold();
    dir = mkdtempSync(join(tmpdir(), 'switchyard-start-failure-'));
  });
  afterAll(() => new Promise<void>((r) => held.close(() => r())));

  it('switchyard gateway on a port in use: one line naming it, exit 1 (request log open, so its writer thread is closed too)', async () => {
    const port = portOf(held);
    const r = await runToExit(['gateway', '--config', join(root, 'gateway', 'example'), '--port', String(port), '--admin-port', 'off'], { SWITCHYARD_REQUEST_LOG: join(dir, 'gw.duckdb') });
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(`cannot listen on 127.0.0.1:${port}`);
  });

  it('an admin port in use: exit 1 as well', async () => {
    const free = await hold();
    const publicPort = portOf(free);
    await new Promise<void>((r) => free.close(() => r()));
    const r = await runToExit(['gateway', '--config', join(root, 'gateway', 'example'), '--port', String(publicPort), '--admin-port', String(portOf(held))], { SWITCHYARD_REQUEST_LOG: join(dir, 'gw-admin.duckdb') });
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(`admin listener: gateway: cannot listen on 127.0.0.1:${portOf(held)}`);
  });

  it('switchyard demo whose gateway cannot bind: stops the emulators and exits 1', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'switchyard-demo-fail-'));
    cpSync(join(root, 'gateway', 'example'), copy, { recursive: true });
    const ports: Server[] = await Promise.all([hold(), hold(), hold()]);
    const moved = ports.map(portOf);
    await Promise.all(ports.map((s) => new Promise<void>((r) => s.close(() => r()))));
    for (const f of ['models.yaml', 'emulators.yaml']) writeFileSync(join(copy, f), readFileSync(join(copy, f), 'utf8').replace(/\b810([123])\b/g, (_, i: string) => String(moved[Number(i) - 1])));
    const r = await runToExit(['demo', '--config', copy, '--port', String(portOf(held)), '--admin-port', 'off'], { SWITCHYARD_REQUEST_LOG: join(dir, 'demo.duckdb') });
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain('cannot listen on');
    // The emulators are closed: their ports can be bound again.
    for (const p of moved) await new Promise<void>((resolve, reject) => createServer().once('error', reject).listen(p, '127.0.0.1', function (this: Server) { this.close(() => resolve()); }));
  });
});
