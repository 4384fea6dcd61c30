/**
 * Preload (`node --import bench/peer-gateway-loopback.mjs …`) for the Portkey gateway process of
 * the gateway benchmark (see bench/peer-gateway.ts).
 *
 * Portkey's node build calls `serve({ fetch, port })` from `@hono/node-server` without a
 * hostname, so it would listen on every interface, and its hono app is not exported for a
 * launcher of ours to serve. So this preload makes every TCP `listen` in the process bind
 * 127.0.0.1 (whatever host was asked for; Portkey has one listener, the HTTP server) and prints
 * `PEER_GATEWAY_LISTENING http://127.0.0.1:<port>` on stdout once it listens, so a launcher that
 * asked for port 0 learns the port. (A module-resolution hook swapping `@hono/node-server` would
 * be more targeted, but on Node 20 hooks run in an extra loader thread that stays alive and
 * adds ~15 MB to the RSS the benchmark reports for Portkey.)
 */
import net from 'node:net';

const LOOPBACK = '127.0.0.1';
const listen = net.Server.prototype.listen;

/**
 * `net.Server.prototype.listen` with the host forced to 127.0.0.1 for TCP listens (port number or
 * `{ port }` options); pipe / fd / handle listens pass through unchanged.
 * @param {...unknown} args as for `server.listen`
 * @returns {net.Server} the server
 */
function listenOnLoopback(...args) {
  const [first, second] = args;
  let tcp = false;
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    tcp = true;
    // listen(port[, host][, backlog][, cb]): replace the host, or insert one before backlog / cb.
    if (second === undefined || second === null || typeof second === 'string') args[1] = LOOPBACK;
    else args.splice(1, 0, LOOPBACK);
  } else if (first !== null && typeof first === 'object' && !('path' in first) && !('fd' in first) && !('handle' in first) && !('_handle' in first)) {
    tcp = true;
    args[0] = { ...first, host: LOOPBACK };
  }
  if (tcp) {
    this.once('listening', () => {
      const a = this.address();
      if (a !== null && typeof a === 'object') process.stdout.write(`PEER_GATEWAY_LISTENING http://${a.address}:${a.port}\n`);
    });
  }
  return listen.apply(this, args);
}

net.Server.prototype.listen = listenOnLoopback;
