/**
 * One worker thread of a multi-worker gateway: a whole gateway (own core, breakers, pools,
 * request-log file) on the shared port; worker 0 also runs the admin listener. Posts
 * `{ready: true}` once listening; `{reload: config}` swaps the configuration (an invalid one is
 * logged and ignored); `{drain: graceMs}` drains and ends the thread; `stop` closes at once.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { GatewayConfig } from '../config/load.ts';
import { startGateway } from '../gateway.ts';

const { config, seed, worker } = workerData as { config: GatewayConfig; seed: number; worker: number };
try {
  const gw = await startGateway({ config, seed, worker, sharedPort: true, adminPort: worker === 0 ? config.settings.server.admin_port : null });
  parentPort!.on('message', (m: 'stop' | { reload: GatewayConfig } | { drain: number }) => {
    if (m === 'stop') void gw.close().then(() => parentPort!.close());
    else if ('drain' in m) void gw.drain(m.drain).then(() => parentPort!.close());
    else {
      try {
        gw.reload(m.reload);
      } catch {
        // The old configuration stays. The main thread validated the files; a rejection by the
        // core is not reported back from a worker (known gap: logged only with --workers 1).
      }
    }
  });
  parentPort!.postMessage({ ready: true });
} catch (e) {
  parentPort!.postMessage({ error: (e as Error).message });
}
