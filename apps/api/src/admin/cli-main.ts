// Entry point of `npm run admin`: wires the process's environment and output to the command.
import { runAdminCli } from './cli.js';

process.exitCode = await runAdminCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  fetch: globalThis.fetch,
});
