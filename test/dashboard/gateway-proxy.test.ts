// The dashboard's forwarding of the console's calls to a gateway (`--gateway URL`): only the
// operator paths go through, with the caller's key and If-Match; the status, body and ETag come
// back as the gateway sent them; a change must be JSON (so a foreign page cannot send one
// without a preflight); dot segments are refused; an unreachable gateway is a 502 whose log line
// names no key; without --gateway the prefix says how to turn it on. Against a stand-in gateway
// on 127.0.0.1 that echoes what it got.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../bin/command.ts';
import { parseDashboardArgs } from '../../notebooks-web/dashboard-command.ts';
import { startDashboardServer, type DashboardServer } from '../../notebooks-web/server/dashboard-server.ts';
import { ResultsCatalog } from '../../notebooks-web/server/results-catalog.ts';

const root = mkdtempSync(join(tmpdir(), 'switchyard-dash-proxy-'));
let upstream: Server;
let withGateway: DashboardServer;
let without: DashboardServer;
let unreachable: DashboardServer;
const logs: string[] = [];
const seen: Array<{ method: string; url: string; auth: string | undefined; ifMatch: string | undefined; body: string }> = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, ifMatch: req.headers['if-match'] as string | undefined, body });
      const status = req.headers.authorization === 'Bearer sk-good' ? 200 : 401;
      res.writeHead(status, { 'content-type': 'application/json', etag: '"7"' });
      res.end(JSON.stringify(status === 200 ? { ok: true, url: req.url } : { error: { code: 'invalid_api_key', message: 'Incorrect or missing admin key.' } }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const gw = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const make = (gatewayUrl?: string) => startDashboardServer({ catalog: ResultsCatalog.create([root]), appDir: null, ...(gatewayUrl && { gatewayUrl }), logError: (m) => logs.push(m) });
  withGateway = await make(gw);
  without = await make();
  // Port 1: nothing listens there on a test machine.
  unreachable = await make('http://127.0.0.1:1');
});

afterAll(async () => {
  await Promise.all([withGateway.close(), without.close(), unreachable.close()]);
  await new Promise((r) => upstream.close(r));
  rmSync(root, { recursive: true, force: true });
});

function call(server: DashboardServer, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server.port, path, method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('dashboard → gateway forwarding', () => {
  it('forwards operator paths with the key and If-Match, and relays status, body and ETag', async () => {
    const r = await call(withGateway, 'GET', '/gateway/admin/recent-requests?model=demo&limit=5', { authorization: 'Bearer sk-good' });
    expect([r.status, r.body, r.headers.etag]).toEqual([200, { ok: true, url: '/admin/recent-requests?model=demo&limit=5' }, '"7"']);
    for (const p of ['/gateway/health/deep', '/gateway/routing', '/gateway/status/models', '/gateway/admin/routing/weights/org%2Fm/e1']) {
      expect((await call(withGateway, 'GET', p, { authorization: 'Bearer sk-good' })).status, p).toBe(200);
    }
    const put = await call(withGateway, 'PUT', '/gateway/admin/routing/weights/demo/e1', { authorization: 'Bearer sk-good', 'content-type': 'application/json', 'if-match': '"3"' }, '{"weight":0}');
    expect(put.status).toBe(200);
    expect(seen.at(-1)).toEqual({ method: 'PUT', url: '/admin/routing/weights/demo/e1', auth: 'Bearer sk-good', ifMatch: '"3"', body: '{"weight":0}' });
    // A wrong key: the gateway's 401 and message come back as they are.
    const bad = await call(withGateway, 'GET', '/gateway/admin/routing', { authorization: 'Bearer sk-bad' });
    expect([bad.status, bad.body.error.code]).toEqual([401, 'invalid_api_key']);
  });

  it('refuses other paths, dot segments, non-JSON changes and unknown methods; says how to turn it on', async () => {
    const n = seen.length;
    for (const p of ['/gateway/v1/chat/completions', '/gateway/metrics', '/gateway/admin/../v1/models', '/gateway/admin/%2e%2e/v1/models', '/gateway/', '/gateway']) {
      expect((await call(withGateway, 'GET', p, { authorization: 'Bearer sk-good' })).status, p).toBe(404);
    }
    expect((await call(withGateway, 'PUT', '/gateway/admin/routing/weights/demo/e1', { authorization: 'Bearer sk-good', 'content-type': 'text/plain' }, '{"weight":0}')).status).toBe(415);
    expect((await call(withGateway, 'OPTIONS', '/gateway/admin/routing')).status).toBe(405);
    expect(seen.length).toBe(n); // none of these reached the gateway
    const off = await call(without, 'GET', '/gateway/admin/routing');
    expect([off.status, off.body.error.code]).toEqual([404, 'no_gateway']);
    expect(off.body.error.message).toMatch(/--gateway URL/);
    // The results API stays read-only and reports the console.
    expect((await call(withGateway, 'PUT', '/api/health')).status).toBe(405);
    expect((await call(withGateway, 'GET', '/api/health')).body).toEqual({ ok: true, gateway: true });
    expect((await call(without, 'GET', '/api/health')).body).toEqual({ ok: true, gateway: false });
  });

  it('an unreachable gateway is a 502; the log line names the call, never the key', async () => {
    const r = await call(unreachable, 'GET', '/gateway/admin/routing', { authorization: 'Bearer sk-secret-key' });
    expect([r.status, r.body.error.code]).toEqual([502, 'gateway_unreachable']);
    expect(logs.some((l) => l.includes('GET /admin/routing'))).toBe(true);
    expect(logs.join('\n')).not.toContain('sk-secret-key');
  });

  it('--gateway takes an http(s) base URL', () => {
    expect(parseDashboardArgs(['--gateway', 'http://127.0.0.1:8081/'])).toMatchObject({ gateway: 'http://127.0.0.1:8081' });
    for (const bad of ['127.0.0.1:8081', 'ftp://x', 'http://h:1/?k=v', 'http://u:p@h:1']) expect(() => parseDashboardArgs(['--gateway', bad]), bad).toThrow(UsageError);
  });

  it('--gateway without a results/ folder serves the console over no results; a folder that exists is used', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchyard-dash-cwd-'));
    try {
      const args = parseDashboardArgs(['--gateway', 'http://127.0.0.1:8081'], cwd);
      expect(args.paths).toEqual([]);
      expect(ResultsCatalog.create(args.paths, cwd).entries()).toEqual([]);
      expect(parseDashboardArgs([], cwd).paths).toEqual(['results']); // the results view alone still asks for them
      mkdirSync(join(cwd, 'results'));
      expect(parseDashboardArgs(['--gateway', 'http://127.0.0.1:8081'], cwd).paths).toEqual(['results']);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
