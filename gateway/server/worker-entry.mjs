// Worker-thread entry of `switchyard gateway --workers N`. A gateway started from its bundle
// (bin/bundle.mjs) names the bundled worker in SWITCHYARD_BUNDLED_WORKER, so the thread runs it
// without a TypeScript loader; otherwise tsx is registered in this thread (module hooks are per
// thread) and the TypeScript worker runs.
import { pathToFileURL } from 'node:url';

const bundled = process.env.SWITCHYARD_BUNDLED_WORKER;
if (bundled) {
  await import(pathToFileURL(bundled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./worker.ts');
}
