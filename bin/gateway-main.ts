/**
 * Entry of the gateway bundle (`bin/bundle.mjs`): `switchyard gateway …` with only the gateway's
 * code, run as `bin/cli.ts` would run it (same help, errors and exit codes).
 */
import { runCommand, runProgram } from './command.ts';
import { gatewayCommand } from '../gateway/gateway-command.ts';

await runProgram(() => runCommand(gatewayCommand, process.argv.slice(3)), null);
