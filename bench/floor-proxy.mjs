// @ts-check
/**
 * The floor of the gateway benchmark (`bench/gateway-overhead.ts`): a bare uWebSockets.js →
 * undici proxy on the same stack as Switchyard's gateway and nothing else — no auth, no JSON
 * parse, no routing, no metrics, no request log. It forwards `POST /v1/chat/completions` bodies
 * to one upstream over a keep-alive undici Pool and relays the answer (a whole body, or a stream
 * chunk by chunk). What it adds over the direct path is what any gateway on uWS + undici pays on
 * this machine, so Switchyard's own cost is its distance to this floor.
 *
 *   node bench/floor-proxy.mjs <upstream origin, e.g. http://127.0.0.1:8000>
 *   prints `floor proxy on http://127.0.0.1:<port>` once listening (port chosen by the OS)
 */
import uWS from '@trufflesuite/uws-js-unofficial';
import { Pool } from 'undici';

const upstream = process.argv[2];
if (!upstream) {
  process.stderr.write('usage: node bench/floor-proxy.mjs <upstream origin>\n');
  process.exit(2);
}
const pool = new Pool(upstream, { connections: 256, pipelining: 1 });

uWS
  .App()
  .post('/v1/chat/completions', (res) => {
    let gone = false;
    res.onAborted(() => (gone = true));
    /** @type {Buffer[]} */
    const parts = [];
    res.onData((chunk, last) => {
      parts.push(Buffer.from(chunk.slice(0)));
      if (!last) return;
      pool
        .request({ method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: Buffer.concat(parts) })
        .then(async (r) => {
          const type = String(r.headers['content-type'] ?? 'application/json');
          if (!type.includes('text/event-stream')) {
            const text = await r.body.text();
            if (!gone) res.cork(() => res.writeStatus(String(r.statusCode)).writeHeader('content-type', type).end(text));
            return;
          }
          let started = false;
          for await (const c of r.body) {
            if (gone) continue;
            res.cork(() => {
              if (!started) res.writeStatus(String(r.statusCode)).writeHeader('content-type', type);
              started = true;
              res.write(c);
            });
          }
          if (!gone) res.cork(() => res.end());
        })
        .catch(() => {
          if (!gone) res.cork(() => res.writeStatus('502').end());
        });
    });
  })
  .listen('127.0.0.1', 0, (token) => {
    if (!token) {
      process.stderr.write('floor proxy: listen failed\n');
      process.exit(1);
    }
    process.stdout.write(`floor proxy on http://127.0.0.1:${uWS.us_socket_local_port(token)} (upstream ${upstream})\n`);
  });
