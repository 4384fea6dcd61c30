// Findings of a new-user review, on real loopback servers: a port in use is refused (not
// silently shared via SO_REUSEPORT) except between worker threads of one gateway; max_tokens /
// max_completion_tokens are validated (range, and the model's largest context_length); a reload
// reports exactly the listener settings that changed; `trace export` explains a missing log and
// merges the per-worker logs of a `--workers N` gateway.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { assertPortFree, restartOnly, startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { exportRequestLog, resolveRequestLogs, workerLogSiblings } from '../../gateway/request-log/export-trace.ts';
import { readTrace } from '../../traces/arrow-trace.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { hello, KEYS, stackConfig, startStack, runCli, type Stack } from './harness.ts';
import { freePort } from '../free-port.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'bin/switchyard.mjs');
const silent = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'switchyard-review-'));

let stack: Stack | null = null;
const extra: Array<{ close(): Promise<void> }> = [];
let child: ChildProcess | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
  for (const x of extra.splice(0)) await x.close();
});
afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

/** A port that was free a moment ago. */

describe('a port in use is refused', () => {
  it('a second gateway on the same port rejects, naming the port', async () => {
    stack = await startStack([{}]);
    const port = stack.gw.port;
    const config = stackConfig([{}], stack.emus);
    await expect(startGateway({ config, host: '127.0.0.1', port, logger: silent })).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+ \(in use.*SWITCHYARD_PORT/);
    // Nor can worker threads of another gateway join it (they share only among themselves).
    await expect(startGateway({ config, host: '127.0.0.1', port, logger: silent, sharedPort: true })).rejects.toThrow(`127.0.0.1:${port}`);
    await expect(assertPortFree('127.0.0.1', port)).rejects.toThrow(`cannot listen on 127.0.0.1:${port} (in use)`);
    // The first one still serves.
    expect((await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 2 })).status).toBe(200);
  });

  it('worker threads of one gateway share the port; the pre-check still sees it taken', async () => {
    const emu = await startEmulator({});
    extra.push(emu);
    const config = stackConfig([{}], [emu]);
    const port = await freePort();
    await assertPortFree('127.0.0.1', port); // free: passes
    const a = await startGateway({ config, host: '127.0.0.1', port, logger: silent, sharedPort: true });
    extra.push(a);
    const b = await startGateway({ config, host: '127.0.0.1', port, logger: silent, sharedPort: true, worker: 1 });
    extra.push(b);
    expect(b.port).toBe(port);
    await expect(assertPortFree('127.0.0.1', port)).rejects.toThrow(`127.0.0.1:${port} (in use)`);
    await expect(startGateway({ config, host: '127.0.0.1', port, logger: silent })).rejects.toThrow(`127.0.0.1:${port}`);
  });

  it('the CLI with --workers 2 refuses a port another process holds', async () => {
    stack = await startStack([{}]);
    const port = stack.gw.port;
    const d = mkdtempSync(join(dir, 'workers-'));
    writeFileSync(join(d, 'models.yaml'), `models:\n  - id: m\n    router: fixed\n    route:\n      - base_url: ${stack.emus[0]!.baseUrl}\n`);
    writeFileSync(join(d, 'gateway.yaml'), 'auth:\n  mode: none\n');
    const r = await runCli(['gateway', '--config', d, '--host', '127.0.0.1', '--port', String(port), '--admin-port', 'off', '--workers', '2']);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain(`cannot listen on 127.0.0.1:${port} (in use)`);
    expect(r.out).toContain('--port N or server.port in gateway.yaml (gateway/example reads SWITCHYARD_PORT)');
  }, 30_000);

  it('the CLI with --workers 2 refuses a stateful model and names the way to scale out (processes sharing state through Redis)', async () => {
    const d = mkdtempSync(join(dir, 'workers-stateful-'));
    writeFileSync(join(d, 'models.yaml'), `models:\n  - id: m\n    router: least_latency\n    route:\n      - base_url: http://127.0.0.1:9\n`);
    writeFileSync(join(d, 'gateway.yaml'), 'auth:\n  mode: none\n');
    const r = await runCli(['gateway', '--config', d, '--host', '127.0.0.1', '--port', '0', '--admin-port', 'off', '--workers', '2']);
    expect(r.code).toBe(1);
    expect(r.out).toContain('refusing 2 workers: routing state would be split per worker');
    expect(r.out).toContain('state: {backend: redis');
  }, 30_000);

  it('a second emulator on the same port rejects, naming the port', async () => {
    const a = await startEmulator({});
    extra.push(a);
    await expect(startEmulator({ port: a.port })).rejects.toThrow(`emulator: cannot listen on 127.0.0.1:${a.port}`);
    expect((await fetch(`${a.baseUrl}/models`)).status).toBeLessThan(500);
  });
});

describe('max_tokens / max_completion_tokens', () => {
  it('must be an integer from 1 to 2^31-1: 400 invalid_request_error naming the field and the range', async () => {
    stack = await startStack([{}]);
    for (const bad of [100_000_000_000, 1e308, 2 ** 31, -1, 0, 'abc', 2.5, true, [3]]) {
      const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: bad });
      expect(res.status, String(bad)).toBe(400);
      const body = (await res.json()) as { error: { message: string; type: string; param: string } };
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'max_tokens' });
      expect(body.error.message).toContain('integer from 1 to 2147483647');
    }
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_completion_tokens: 0 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('max_completion_tokens');
    // The official client sees a BadRequestError with the param.
    const err = await stack
      .client()
      .chat.completions.create({ model: 'demo', messages: hello, max_tokens: -1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('max_tokens');
    // Valid values and null pass.
    for (const ok of [1, 2, null]) expect((await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: ok })).status, String(ok)).toBe(200);
    expect((await stack.client().completions.create({ model: 'demo', prompt: 'hi', max_tokens: 2 })).choices.length).toBe(1);
  });

  it('above the largest context_length of a model whose every route declares one: 400 context_length_exceeded', async () => {
    const [e1, e2] = await Promise.all([startEmulator({ mode: 'echo' }), startEmulator({ mode: 'echo' })]);
    extra.push(e1!, e2!);
    const config = buildGatewayConfig({
      models: {
        models: [
          { id: 'ctx', route: [{ base_url: e1!.baseUrl, context_length: 4096 }, { base_url: e2!.baseUrl, context_length: 8192 }] },
          { id: 'open', route: [{ base_url: e1!.baseUrl, context_length: 4096 }, { base_url: e2!.baseUrl }] },
        ],
      },
      gateway: { auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user) }] } },
    });
    const gw: RunningGateway = await startGateway({ config, host: '127.0.0.1', port: 0, logger: silent });
    extra.push(gw);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.user, maxRetries: 0, timeout: 10_000 });
    const err = await client.chat.completions.create({ model: 'ctx', messages: hello, max_tokens: 8193 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e).toMatchObject({ code: 'context_length_exceeded', param: 'max_tokens' });
    expect(e.message).toMatch(/'max_tokens' is 8193.*8192/);
    const err2 = await client.chat.completions.create({ model: 'ctx', messages: hello, max_completion_tokens: 9000 }).catch((x: unknown) => x);
    expect(err2).toMatchObject({ code: 'context_length_exceeded', param: 'max_completion_tokens' });
    // Prompt estimate plus max_tokens within the largest window: routed (to the 8,192-token route).
    expect((await client.chat.completions.create({ model: 'ctx', messages: hello, max_tokens: 8000 })).choices.length).toBe(1);
    // max_tokens alone fits, but not with the prompt: the core's context-window floor refuses it.
    const err3 = await client.chat.completions.create({ model: 'ctx', messages: hello, max_tokens: 8192 }).catch((x: unknown) => x);
    expect(err3).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    // A route without context_length: the gateway does not guess.
    expect((await client.chat.completions.create({ model: 'open', messages: hello, max_tokens: 100_000 })).choices.length).toBe(1);
  }, 30_000);
});

describe('reload: what needs a restart', () => {
  it('restartOnly reports listener changes and nothing for an unchanged configuration', async () => {
    stack = await startStack([{}]);
    const base = stackConfig([{}], stack.emus);
    expect(restartOnly(base, stackConfig([{}], stack.emus))).toEqual([]);
    const moved = stackConfig([{}], stack.emus, { server: { port: 9999, host: '0.0.0.0', admin_port: 9998, workers: 2 } });
    expect(restartOnly(base, moved).sort()).toEqual(['server.admin_port', 'server.host', 'server.port', 'server.workers']);
    // In-process reload returns the same list.
    expect(stack.gw.reload(stackConfig([{}], stack.emus, { server: { port: 9999 } }))).toEqual(['server.port']);
    // The process still listens where it started: the same file again still needs a restart,
    // and the start configuration again needs none.
    expect(stack.gw.reload(stackConfig([{}], stack.emus, { server: { port: 9999 } }))).toEqual(['server.port']);
    expect(stack.gw.reload(stackConfig([{}], stack.emus))).toEqual([]);
  });

  it('SIGHUP: an unchanged file needs no restart (no seed configured); a changed server.port is reported', async () => {
    const emu = await startEmulator({ faults: { latency_scale: 0.05 } });
    extra.push(emu);
    const d = mkdtempSync(join(dir, 'hup-'));
    writeFileSync(join(d, 'models.yaml'), `models:\n  - id: m\n    router: fixed\n    route:\n      - base_url: ${emu.baseUrl}\n`);
    const yaml = (port: number) => `server:\n  host: 127.0.0.1\n  port: ${port}\n  drain_grace_ms: 1000\nauth:\n  mode: none\n`;
    writeFileSync(join(d, 'gateway.yaml'), yaml(0));
    // CLI overrides (admin port, host) must be applied the same way on every load.
    child = spawn(process.execPath, [cli, 'gateway', '--config', d, '--admin-port', '0', '--host', '127.0.0.1'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (x: Buffer) => (out += x.toString()));
    child.stderr!.on('data', (x: Buffer) => (out += x.toString()));
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    const waitFor = async (re: RegExp, from = 0, ms = 20_000): Promise<RegExpExecArray> => {
      const until = Date.now() + ms;
      for (;;) {
        const m = re.exec(out.slice(from));
        if (m) return m;
        if (Date.now() > until) throw new Error(`timed out waiting for ${re}: ${out}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    await waitFor(/switchyard gateway on http/);

    let mark = out.length;
    child.kill('SIGHUP');
    await waitFor(/configuration reloaded[^\n]*/, mark);
    const first = out.slice(mark);
    expect(first).toContain('"needsRestart":[]');
    expect(first).not.toMatch(/take effect only after a restart/);

    mark = out.length;
    writeFileSync(join(d, 'gateway.yaml'), yaml(await freePort()));
    child.kill('SIGHUP');
    await waitFor(/take effect only after a restart[^\n]*/, mark);
    expect(out.slice(mark)).toMatch(/"needsRestart":\["server\.port"\]/);
    expect(out.slice(mark)).toMatch(/"settings":\["server\.port"\][^\n]*take effect only after a restart/);

    // The same changed file again: the process still runs on its start port, so still reported.
    mark = out.length;
    child.kill('SIGHUP');
    await waitFor(/take effect only after a restart[^\n]*/, mark);
    expect(out.slice(mark)).toMatch(/"needsRestart":\["server\.port"\]/);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 40_000);
});

describe('trace export of a --workers gateway', () => {
  it('the configured path merges the .worker-<i> logs; a missing log is named clearly', async () => {
    const emu = await startEmulator({ faults: { latency_scale: 0.05 } });
    extra.push(emu);
    const logPath = join(dir, 'split.duckdb');
    const config = stackConfig([{}], [emu], { server: { workers: 2 }, request_log: { path: logPath, flush_interval_ms: 50 } });
    const gws: RunningGateway[] = [];
    for (const worker of [0, 1]) gws.push(await startGateway({ config, host: '127.0.0.1', port: 0, logger: silent, sharedPort: true, worker }));
    for (const [i, gw] of gws.entries()) {
      for (let k = 0; k <= i; k++) {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'demo', messages: hello, max_tokens: 2 }),
        });
        expect(res.status).toBe(200);
      }
    }
    for (const gw of gws) await gw.close();
    const w0 = join(dir, 'split.worker-0.duckdb');
    const w1 = join(dir, 'split.worker-1.duckdb');
    expect(existsSync(logPath)).toBe(false);
    expect(workerLogSiblings(logPath)).toEqual([w0, w1]);
    expect(resolveRequestLogs(logPath)).toEqual({ files: [w0, w1], workers: [w0, w1] });
    expect(() => resolveRequestLogs(join(dir, 'nothing.duckdb'))).toThrow('nothing.duckdb: no such request log');

    // The library names the worker files instead of DuckDB's "database does not exist".
    await expect(exportRequestLog({ from: logPath, to: join(dir, 'x.arrow') })).rejects.toThrow(`no such request log; a --workers gateway writes one per worker: ${w0}, ${w1}`);
    expect((await exportRequestLog({ from: [w0, w1], to: join(dir, 'both.arrow') })).rows).toBe(3);

    // The CLI: the configured path ⇒ both merged, with a note naming them.
    const to = join(dir, 'split.arrow');
    const r = await runCli(['trace', 'export', '--from', logPath, '--to', to]);
    expect(r.out).toContain(`merging the per-worker logs of a --workers gateway: ${w0}, ${w1}`);
    expect(r.out).toMatch(/wrote 3 request\(s\)/);
    expect(r.code).toBe(0);
    const trace = await readTrace(to);
    expect(trace.rows).toHaveLength(3);
    expect(trace.rows[0]!.arrivalMs).toBe(0);
    expect(trace.rows.map((x) => x.arrivalMs)).toEqual([...trace.rows.map((x) => x.arrivalMs)].sort((a, b) => a - b));

    // Several --from.
    expect((await runCli(['trace', 'export', '--from', w0, '--from', w1, '--to', join(dir, 'w01.arrow')])).out).toMatch(/wrote 3 request\(s\)/);

    // The configured path exists too (the same config once run with one worker): all three are
    // merged, and the note names every file.
    const single = await startGateway({ config: stackConfig([{}], [emu], { request_log: { path: logPath, flush_interval_ms: 50 } }), host: '127.0.0.1', port: 0, logger: silent });
    for (let k = 0; k < 2; k++) {
      const res = await fetch(`${single.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo', messages: hello, max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
    }
    await single.close();
    expect(resolveRequestLogs(logPath)).toEqual({ files: [logPath, w0, w1], workers: [w0, w1] });
    const all = await runCli(['trace', 'export', '--from', logPath, '--to', join(dir, 'all.arrow')]);
    expect(all.out).toContain(`${logPath} and the per-worker logs of a --workers gateway: ${w0}, ${w1}`);
    expect(all.out).toContain(`merging 3 request logs by arrival time: ${logPath}, ${w0}, ${w1}`);
    expect(all.out).toMatch(/wrote 5 request\(s\)/);
    // A file named twice is read once, and that is said.
    const twice = await runCli(['trace', 'export', '--from', logPath, '--from', w0, '--to', join(dir, 'twice.arrow')]);
    expect(twice.out).toContain(`${w0} is named twice (by --from ${w0}); it is read once`);
    expect(twice.out).toMatch(/wrote 5 request\(s\)/);

    // Nothing there: a clear message, exit 1.
    const none = await runCli(['trace', 'export', '--from', join(dir, 'nothing.duckdb')]);
    expect(none.code).toBe(1);
    expect(none.out).toContain('nothing.duckdb: no such request log (the file does not exist)');
    expect(none.out).not.toMatch(/database does not exist/i);
  }, 60_000);
});
