// Worker-thread entry of the results thread when the simulator runs through tsx: registers tsx
// (Node 20 ignores `--import` loaders for a worker's own entry file), then loads the TypeScript.
import { register } from 'tsx/esm/api';

register();
await import('./results-thread.ts');
