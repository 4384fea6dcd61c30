/**
 * One worker thread of a multi-worker gateway: a whole gateway (own core, breakers, pools,
 * request-log file) on the shared port; worker 0 also runs the admin listener. Posts
 * `{ready: true, adminUrl}` once listening (after importing the configuration's strategy
 * modules in this thread); `{reload: config}` swaps the configuration (an
 * invalid one is ignored and recorded for `/status/config`); `{reloadRejected: problems}` records
 * a reload the main thread refused (files that did not load, a worker-scope refusal); `{drain: graceMs}` drains and ends the thread; `stop`
 * closes at once.
 *
 * Every worker holds one MessagePort to each other worker (`peers`): on `/metrics` and
 * `/health/deep` (the admin listener of worker 0, or an admin key on the shared public port,
 * whichever worker takes the connection) it sends `{ask: id}` on every port and merges the
 * answers `{answer: id, snapshot}` with its own (server/worker-aggregate.ts). A worker that has
 * not answered within `PEER_TIMEOUT_MS` is reported as missing, never dropped silently.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { GatewayConfig } from '../config/load.ts';
import { startGateway, type RunningGateway } from '../gateway.ts';
import { loadStrategyModules } from '../config/strategy-modules.ts';
import type { PeerAnswer, WorkerSnapshot } from './worker-aggregate.ts';

/** How long worker 0 waits for another worker's snapshot, ms. */
const PEER_TIMEOUT_MS = 2000;

const { config, seed, worker, peers } = workerData as {
  config: GatewayConfig;
  seed: number;
  worker: number;
  /** A port to every other worker, with its index. */
  peers: Array<{ worker: number; port: MessagePort }>;
};

/** Asks every peer for its snapshot; one answer per peer, in the order given. */
function askPeers(list: ReadonlyArray<{ worker: number; port: MessagePort }>): () => Promise<PeerAnswer[]> {
  let nextId = 0;
  return () =>
    Promise.all(
      list.map(
        ({ worker: peer, port }) =>
          new Promise<PeerAnswer>((resolve) => {
            const id = nextId++;
            const timer = setTimeout(() => {
              port.off('message', onAnswer);
              resolve({ worker: peer, error: `worker ${peer} did not answer within ${PEER_TIMEOUT_MS} ms` });
            }, PEER_TIMEOUT_MS);
            const onAnswer = (m: { answer?: number; snapshot?: WorkerSnapshot; error?: string }): void => {
              if (m.answer !== id) return;
              clearTimeout(timer);
              port.off('message', onAnswer);
              resolve(m.snapshot ?? { worker: peer, error: m.error ?? 'no snapshot' });
            };
            port.on('message', onAnswer);
            port.postMessage({ ask: id });
          }),
      ),
    );
}

/** Answers a peer's snapshot requests on `port`. */
function answerPeer(port: MessagePort, gw: RunningGateway): void {
  port.on('message', (m: { ask?: number }) => {
    if (m.ask === undefined) return;
    gw.snapshot().then(
      (snapshot) => port.postMessage({ answer: m.ask, snapshot }),
      (e: unknown) => port.postMessage({ answer: m.ask, error: (e as Error).message }),
    );
  });
}

try {
  // The configuration carries only its strategy modules' records: import them in this thread too.
  await loadStrategyModules((config.strategies ?? []).map((s) => s.path));
  const gw = await startGateway({
    config,
    seed,
    worker,
    sharedPort: true,
    adminPort: worker === 0 ? config.settings.server.admin_port : null,
    ...(peers.length > 0 && { peers: askPeers(peers) }),
  });
  for (const p of peers) answerPeer(p.port, gw);
  const closePorts = (): void => {
    for (const p of peers) p.port.close();
  };
  parentPort!.on('message', (m: 'stop' | { reload: GatewayConfig } | { reloadRejected: string[] } | { drain: number }) => {
    if (m === 'stop') void gw.close().then(() => (closePorts(), parentPort!.close()));
    else if ('drain' in m) void gw.drain(m.drain).then(() => (closePorts(), parentPort!.close()));
    else if ('reloadRejected' in m) gw.reloadRejected(m.reloadRejected);
    else {
      const next = m.reload;
      void loadStrategyModules((next.strategies ?? []).map((s) => s.path)).then(() => {
        try {
          gw.reload(next);
        } catch {
          // The old configuration stays, and the rejection is recorded for /status/config. The main
          // thread validated the files; a rejection by the core is not logged from a worker.
        }
      });
    }
  });
  parentPort!.postMessage({ ready: true, adminUrl: gw.adminUrl });
} catch (e) {
  parentPort!.postMessage({ error: (e as Error).message });
}
