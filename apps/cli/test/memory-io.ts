import type { CliIo } from '../src/cli.js';
import { CliError } from '../src/errors.js';

/** In-memory I/O for runCli: named files in, captured stdout and stderr out. */
export function memoryIo(files: Record<string, string>) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    readInput: async (file) => {
      const text = files[file];
      if (text === undefined) throw new CliError('FileUnreadable', `cannot read ${file}: no such file`);
      return text;
    },
    writeOut: async (chunk) => {
      stdout += chunk;
    },
    writeErr: (text) => {
      stderr += text;
    },
  };
  return {
    io,
    stdout: () => stdout,
    stderr: () => stderr,
    /** Standard output parsed as JSON lines. */
    lines: () =>
      stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
