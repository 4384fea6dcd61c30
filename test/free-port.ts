// A free TCP port on 127.0.0.1 for a server a test starts (asked of the OS, then released).
import { createServer } from 'node:net';

/** A port the OS reports free on 127.0.0.1 now; a race with another process is possible but rare. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
