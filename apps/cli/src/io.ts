// The process's own I/O for the CLI: files, standard input and output.
import { readFile } from 'node:fs/promises';
import type { CliIo } from './cli.js';
import { CliError } from './errors.js';

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'it is a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
};

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function processIo(): CliIo {
  // A closed pipe (`detect ... | head`) is the reader's choice, not an error worth a message.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  return {
    readInput: async (file) => {
      if (file === '-') return readStdin();
      try {
        return await readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? '';
        const reason = READ_ERRORS[code] ?? (err instanceof Error ? err.message : String(err));
        throw new CliError('FileUnreadable', `cannot read ${file}: ${reason}`);
      }
    },
    writeOut: (chunk) =>
      new Promise<void>((resolve) => {
        if (process.stdout.write(chunk)) resolve();
        else process.stdout.once('drain', () => resolve());
      }),
    writeErr: (text) => {
      process.stderr.write(text);
    },
    job: {
      fetch,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      progressInPlace: process.stderr.isTTY,
    },
  };
}
