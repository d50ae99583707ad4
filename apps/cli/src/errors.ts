// The CLI's coded errors. Every failure the user can cause maps to one code, and every code to an
// exit status: 2 for a command line we cannot act on, 1 for input data we cannot detect on.

/** Exit status of a usage error (bad flags or arguments). */
export const EXIT_USAGE = 2;
/** Exit status of a data error (unreadable file, malformed CSV, series the engine rejects). */
export const EXIT_DATA = 1;

export const CLI_ERRORS = {
  UnknownFlag: { exitCode: EXIT_USAGE },
  MissingFlagValue: { exitCode: EXIT_USAGE },
  BadFlagValue: { exitCode: EXIT_USAGE },
  RepeatedFlag: { exitCode: EXIT_USAGE },
  FlagNotForMode: { exitCode: EXIT_USAGE },
  MissingFile: { exitCode: EXIT_USAGE },
  ExtraArgument: { exitCode: EXIT_USAGE },
  FileUnreadable: { exitCode: EXIT_DATA },
  EmptyFile: { exitCode: EXIT_DATA },
  MissingHeader: { exitCode: EXIT_DATA },
  FieldCount: { exitCode: EXIT_DATA },
  UnterminatedQuote: { exitCode: EXIT_DATA },
  BadValue: { exitCode: EXIT_DATA },
  BadTimestamp: { exitCode: EXIT_DATA },
  UnsortedTimestamps: { exitCode: EXIT_DATA },
  DuplicateTimestamp: { exitCode: EXIT_DATA },
  TooFewPoints: { exitCode: EXIT_DATA },
  TooManyPoints: { exitCode: EXIT_DATA },
  InvalidSeries: { exitCode: EXIT_DATA },
  /** --server: the service could not be reached, or answered other than the API does. */
  ServerUnreachable: { exitCode: EXIT_DATA },
  /** --server: the service refused the job (its error code and message follow). */
  JobRefused: { exitCode: EXIT_DATA },
  /** --server: the job failed or was cancelled on the service. */
  JobFailed: { exitCode: EXIT_DATA },
} as const;

export type CliErrorCode = keyof typeof CLI_ERRORS;

/** The one error type the CLI reports as a message; anything else is an internal error. */
export class CliError extends Error {
  readonly code: CliErrorCode;
  readonly exitCode: number;
  constructor(code: CliErrorCode, message: string) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.exitCode = CLI_ERRORS[code].exitCode;
  }
}

export function isUsageError(err: unknown): err is CliError {
  return err instanceof CliError && err.exitCode === EXIT_USAGE;
}
