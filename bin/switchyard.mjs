#!/usr/bin/env node
// Entry shim: registers tsx so the TypeScript sources run as they are (no build step), then
// hands over to the command dispatcher.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
