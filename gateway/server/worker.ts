/**
 * One worker thread of a multi-worker gateway: a whole gateway (own core, breakers, pools) on
 * the shared port. Posts `{ready: true}` once listening; stops on the message `stop`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { GatewayConfig } from '../config/load.ts';
import { startGateway } from '../gateway.ts';

const { config, seed, worker } = workerData as { config: GatewayConfig; seed: number; worker: number };
try {
  const gw = await startGateway({ config, seed, worker });
  parentPort!.on('message', (m) => {
    if (m === 'stop') void gw.close().then(() => parentPort!.close());
  });
  parentPort!.postMessage({ ready: true });
} catch (e) {
  parentPort!.postMessage({ error: (e as Error).message });
}
