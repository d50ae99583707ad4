export { parseArgs, usage, MODES, DEFAULTS, type Command, type DetectCommand, type Mode } from './args.js';
export { parseSeriesCsv, readCsvRecords, parseValue, MIN_POINTS, type CsvSeries, type CsvRecord } from './csv.js';
export { detectRecords, defaultStreamWindow, MAX_BATCH_POINTS, type PointRecord } from './detect.js';
export { runCli, writeJsonLines, type CliIo } from './cli.js';
export { CliError, CLI_ERRORS, EXIT_DATA, EXIT_USAGE, type CliErrorCode } from './errors.js';
export { parseTimestamp, EPOCH_SECONDS_BELOW } from './timestamps.js';
