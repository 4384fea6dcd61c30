// With tracing off, the gateway loads none of OpenTelemetry's SDK, exporter, resources or
// semantic conventions: a fresh process (tracing-off-child.ts) starts one, serves a request, and
// lists the modules it resolved and required. `@opentelemetry/api` alone is let through: prom-client
// (the metrics) requires it when it is imported (its process-CPU metric reads the active span for
// exemplars), whatever the tracing settings; the API without an SDK registered is a no-op.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('tracing off', () => {
  it('loads no module under node_modules/@opentelemetry but the API prom-client requires (and tracing on does, as the control)', async () => {
    const root = join(import.meta.dirname, '../..');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'tracing-off-child.ts')], { cwd: root, timeout: 50_000 });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { off: string[]; on: string[] };
    const beyondApi = (urls: string[]) => urls.filter((u) => !/[\\/]@opentelemetry[\\/]api[\\/]/.test(u));
    expect(beyondApi(result.off)).toEqual([]);
    const on = beyondApi(result.on).join('\n');
    for (const pkg of ['sdk-trace-base', 'exporter-trace-otlp-http', 'resources', 'semantic-conventions']) expect(on).toContain(`@opentelemetry/${pkg}/`);
  });
});
