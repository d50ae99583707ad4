// The whole command behind an I/O seam: argv and an I/O object in, an exit status out. Tests drive
// it with in-memory I/O; main.ts passes the process's own.
import { parseArgs, usage } from './args.js';
import { parseSeriesCsv, type RepeatedTimestamp } from './csv.js';
import { detectRecords, type PointRecord } from './detect.js';
import { CliError, EXIT_DATA } from './errors.js';
import { runJob, type JobIo } from './job.js';

export interface CliIo {
  /** The file's text; `-` = standard input. Rejects with a CliError when it cannot be read. */
  readonly readInput: (file: string) => Promise<string>;
  /** Writes to standard output, resolving once the chunk may be followed by another. */
  readonly writeOut: (chunk: string) => Promise<void>;
  readonly writeErr: (text: string) => void;
  /** For --server: HTTP, a wait, and whether stderr is a terminal (the progress bar redraws in place). */
  readonly job?: Omit<JobIo, 'writeErr'>;
}

/** Lines per write: large enough to keep the write count low, small enough to bound buffering. */
const LINES_PER_CHUNK = 2000;

export async function writeJsonLines(records: readonly PointRecord[], io: CliIo): Promise<void> {
  for (let start = 0; start < records.length; start += LINES_PER_CHUNK) {
    let chunk = '';
    const end = Math.min(records.length, start + LINES_PER_CHUNK);
    for (let i = start; i < end; i++) chunk += `${JSON.stringify(records[i])}\n`;
    await io.writeOut(chunk);
  }
}

/** Warnings beyond this many are summed up in one line: a file can repeat thousands of rows. */
const MAX_REPEAT_WARNINGS = 10;

function warnRepeated(repeated: readonly RepeatedTimestamp[], io: CliIo): void {
  for (const { line, droppedLine } of repeated.slice(0, MAX_REPEAT_WARNINGS)) {
    io.writeErr(`detect: warning: line ${line}: repeated timestamp (same instant as line ${droppedLine}); kept line ${line}'s value, dropped line ${droppedLine} (--strict refuses)\n`);
  }
  if (repeated.length > MAX_REPEAT_WARNINGS) {
    io.writeErr(`detect: warning: ${repeated.length - MAX_REPEAT_WARNINGS} more repeated timestamp(s), each handled the same way\n`);
  }
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const command = parseArgs(argv);
    if (command.kind === 'help') {
      await io.writeOut(usage());
      return 0;
    }
    const text = await io.readInput(command.file);
    const series = parseSeriesCsv(text, { strict: command.strict });
    warnRepeated(series.repeated, io);
    const records =
      command.server === undefined
        ? detectRecords(series, command)
        : await runJob(series, command, {
            fetch: io.job?.fetch ?? fetch,
            sleep: io.job?.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
            progressInPlace: io.job?.progressInPlace ?? false,
            writeErr: io.writeErr,
          });
    await writeJsonLines(records, io);
    return 0;
  } catch (err) {
    if (err instanceof CliError) {
      io.writeErr(`detect: ${err.message}\n`);
      return err.exitCode;
    }
    // A bug, not bad input: say so in one line; the stack would only confuse a user.
    const message = err instanceof Error ? err.message : String(err);
    io.writeErr(`detect: internal error: ${message}\n`);
    return EXIT_DATA;
  }
}
