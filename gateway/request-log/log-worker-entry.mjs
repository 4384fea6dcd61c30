// Worker-thread entry of the request log: registers tsx in this thread (module hooks are per
// thread), then runs the TypeScript writer.
import { register } from 'tsx/esm/api';

register();
await import('./log-worker.ts');
