// Worker-thread entry of the sweep runner: registers tsx (Node 20 ignores `--import` loaders
// for a worker's own entry file), then loads the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./cell-worker.ts');
