/**
 * Binding the gateway's listeners: uWS `listen` with or without SO_REUSEPORT, the check that a
 * port is free before worker threads share it, and host formatting for URLs.
 */
import { createServer } from 'node:net';
import uWS from '@trufflesuite/uws-js-unofficial';
import type { TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';

/** `host` as it goes in a URL: an IPv6 address in brackets. */
export function bracket(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Binds `app` on host:port. `exclusive` passes uWS `LIBUS_LISTEN_EXCLUSIVE_PORT` (no
 * SO_REUSEPORT), so a port another socket listens on is refused instead of silently shared;
 * false keeps uWS's default SO_REUSEPORT (worker threads sharing one port).
 * @throws Error naming host:port when it cannot be bound.
 */
export function listen(app: TemplatedApp, host: string, port: number, exclusive: boolean): Promise<{ port: number; socket: us_listen_socket }> {
  return new Promise((resolve, reject) => {
    const done = (ls: us_listen_socket | false): void => {
      if (!ls) reject(new Error(`gateway: cannot listen on ${host}:${port} (in use, or not an address of this machine)`));
      else resolve({ port: uWS.us_socket_local_port(ls), socket: ls });
    };
    // The typings lack the (host, port, options, cb) overload; the native binding has it.
    if (exclusive) (app.listen as unknown as (h: string, p: number, o: number, cb: typeof done) => TemplatedApp)(host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, done);
    else app.listen(host, port, done);
  });
}

/** uWS `ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT` (the typings declare it as an ambient enum). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/**
 * Checks that nothing listens on host:port by binding a node `net` server there (no
 * SO_REUSEPORT, so a uWS listener sharing its port still conflicts) and closing it. The
 * multi-worker CLI calls it before its threads bind the port with SO_REUSEPORT, so a second
 * process is refused. Port 0 always passes.
 * @throws Error `gateway: cannot listen on host:port (…)` naming the cause (EADDRINUSE: in use).
 */
export function assertPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(`gateway: cannot listen on ${host}:${port} (${e.code === 'EADDRINUSE' ? 'in use' : e.code === 'EADDRNOTAVAIL' ? 'not an address of this machine' : e.message})`)),
    );
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve()));
  });
}
