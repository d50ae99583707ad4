// Entry point of `npm run detect`: wires the process's I/O to the command.
import { runCli } from './cli.js';
import { processIo } from './io.js';

process.exitCode = await runCli(process.argv.slice(2), processIo());
