// Worker-thread entry of `switchyard gateway --workers N`: registers tsx in this thread (module
// hooks are per thread), then runs the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
