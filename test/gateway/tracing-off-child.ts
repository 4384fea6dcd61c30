// Run by tracing-modules.test.ts in a fresh `node --import tsx` process: records every module
// URL the process resolves (an ESM resolve hook, which sees tsx's resolutions too) and every
// CommonJS module it loads (`require.cache`), starts a gateway with tracing off and sends it a
// request, then does the same with tracing on as the control, and prints what was loaded as JSON.
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const HOOKS = `let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  port.postMessage(r.url);
  return r;
}`;
const { port1, port2 } = new MessageChannel();
const urls: string[] = [];
port1.on('message', (u: string) => urls.push(u));
port1.unref();
register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, { data: { port: port2 }, transferList: [port2] });

/** Waits until the hook thread has reported every resolution made so far (a marker import comes last). */
async function settled(tag: string): Promise<string[]> {
  const marker = `data:text/javascript,export default ${JSON.stringify(tag)}`;
  await import(marker);
  while (!urls.includes(marker)) await new Promise((r) => setTimeout(r, 5));
  return [...urls];
}

const OTEL = /[\\/]node_modules[\\/]@opentelemetry[\\/]/;
const loadedOtel = (seen: string[]): string[] => [...seen, ...Object.keys(createRequire(import.meta.url).cache)].filter((u) => OTEL.test(u));

async function run(tracing: Record<string, unknown>): Promise<void> {
  const { hello, startStack } = await import('./harness.ts');
  const stack = await startStack([{}], { tracing });
  const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, stream: true }, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  await res.text();
  await stack.close();
}

await run({ enabled: false });
const off = loadedOtel(await settled('off'));
// The closed discard port: nothing listens, and no span is exported before the close anyway.
await run({ enabled: true, endpoint: 'http://127.0.0.1:9/v1/traces', sample_ratio: 0 });
const on = loadedOtel(await settled('on'));
process.stdout.write(`${JSON.stringify({ off, on })}\n`);
process.exit(0);
