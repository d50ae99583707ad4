import { describe, expect, it } from 'vitest';
import { STREAM_DEFAULTS } from '@adp/detection';
import { FLAGS, parseArgs, usage, type DetectCommand } from '../src/args.js';
import { CLI_ERRORS, CliError, EXIT_DATA, EXIT_USAGE } from '../src/errors.js';

function detect(argv: string[]): DetectCommand {
  const command = parseArgs(argv);
  if (command.kind !== 'detect') throw new Error('expected a detect command');
  return command;
}

function failure(argv: string[]): CliError {
  try {
    parseArgs(argv);
  } catch (err) {
    if (err instanceof CliError) return err;
    throw err;
  }
  throw new Error(`parseArgs(${argv.join(' ')}) did not fail`);
}

describe('parseArgs', () => {
  it('applies the defaults', () => {
    expect(detect(['data.csv'])).toEqual({
      kind: 'detect',
      file: 'data.csv',
      mode: 'entire',
      period: undefined,
      sensitivity: 95,
      maxAnomalyRatio: 0.25,
      granularity: 'none',
      customInterval: 1,
      imputeMode: 'auto',
      imputeFixedValue: undefined,
      windowPoints: 'follow',
      minHistory: undefined,
      memoryPoints: STREAM_DEFAULTS.memoryPoints,
      threshold: undefined,
      stableTrendWindow: undefined,
      strict: false,
      server: undefined,
      key: undefined,
    });
  });

  it('reads --server and --key (entire mode: a detection job on the service)', () => {
    expect(detect(['big.csv', '--server', 'http://localhost:8080/', '--key', 'svc_test_abc'])).toMatchObject({
      mode: 'entire',
      server: 'http://localhost:8080',
      key: 'svc_test_abc',
    });
  });

  it('stream mode defaults to the streaming worker\'s following window and memory; --window suggested keeps the suggested one', () => {
    expect(STREAM_DEFAULTS).toMatchObject({ windowPoints: 720, memoryPoints: 8640 });
    expect(detect(['x.csv', '--mode', 'stream'])).toMatchObject({ windowPoints: 'follow', memoryPoints: 8640 });
    expect(detect(['x.csv', '--mode', 'stream', '--window', 'follow']).windowPoints).toBe('follow');
    expect(detect(['x.csv', '--mode', 'stream', '--window', 'suggested']).windowPoints).toBe('suggested');
    expect(detect(['x.csv', '--mode', 'stream', '--window=97']).windowPoints).toBe(97);
  });

  it('reads --strict, a flag without a value, in every mode', () => {
    expect(detect(['x.csv', '--strict']).strict).toBe(true);
    expect(detect(['--strict', 'x.csv', '--mode', 'stream']).strict).toBe(true);
    // It takes no value: the next argument stays the file.
    expect(detect(['--strict', 'x.csv']).file).toBe('x.csv');
  });

  it('reads every flag, in both --flag value and --flag=value forms', () => {
    const c = detect([
      '--mode', 'stream', 'x.csv', '--period=24', '--sensitivity', '80.5', '--max-anomaly-ratio=0.1',
      '--granularity', 'minutely', '--custom-interval', '5', '--window', '97', '--min-history=30',
      '--impute-mode', 'fixed', '--impute-fixed-value', '-2.5', '--memory', '4032',
    ]);
    expect(c).toMatchObject({
      file: 'x.csv', mode: 'stream', period: 24, sensitivity: 80.5, maxAnomalyRatio: 0.1,
      granularity: 'minutely', customInterval: 5, windowPoints: 97, minHistory: 30, memoryPoints: 4032,
      imputeMode: 'fixed', imputeFixedValue: -2.5,
    });
    expect(detect(['x.csv', '--mode', 'changepoint', '--threshold', '0.5', '--stable-trend-window', '10']))
      .toMatchObject({ mode: 'changepoint', threshold: 0.5, stableTrendWindow: 10 });
  });

  it('accepts period 0 (non-seasonal), `-` for standard input and `--` before the file', () => {
    expect(detect(['-', '--period', '0'])).toMatchObject({ file: '-', period: 0 });
    expect(detect(['--', '--odd-name.csv']).file).toBe('--odd-name.csv');
  });

  it('returns help for --help and -h, even among other arguments', () => {
    expect(parseArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseArgs(['x.csv', '-h'])).toEqual({ kind: 'help' });
  });

  it.each([
    [['x.csv', '--strict=yes'], 'BadFlagValue', /--strict takes no value/],
    [['x.csv', '--strict', '--strict'], 'RepeatedFlag', /--strict is given more than once/],
    [['x.csv', '--mode', 'batch'], 'BadFlagValue', /--mode: "batch" is not valid; expected one of entire, last, changepoint, stream/],
    [['x.csv', '--period', '-1'], 'BadFlagValue', /--period.*an integer >= 0/],
    [['x.csv', '--period', '2.5'], 'BadFlagValue', /--period/],
    [['x.csv', '--period', '12abc'], 'BadFlagValue', /--period/],
    [['x.csv', '--sensitivity', '100'], 'BadFlagValue', /--sensitivity.*<= 99/],
    [['x.csv', '--sensitivity', 'high'], 'BadFlagValue', /--sensitivity/],
    [['x.csv', '--sensitivity', 'NaN'], 'BadFlagValue', /--sensitivity/],
    [['x.csv', '--max-anomaly-ratio', '0.5'], 'BadFlagValue', /--max-anomaly-ratio.*> 0 and < 0.5/],
    [['x.csv', '--max-anomaly-ratio', '0'], 'BadFlagValue', /--max-anomaly-ratio/],
    [['x.csv', '--granularity', 'fortnightly'], 'BadFlagValue', /--granularity/],
    [['x.csv', '--custom-interval', '0'], 'BadFlagValue', /--custom-interval/],
    [['x.csv', '--mode', 'stream', '--window', '5'], 'BadFlagValue', /--window.*>= 12/],
    [['x.csv', '--mode', 'stream', '--window', ''], 'BadFlagValue', /--window/],
    [['x.csv', '--mode', 'stream', '--window', 'suggest'], 'BadFlagValue', /--window.*follow or suggested/],
    [['x.csv', '--mode', 'changepoint', '--threshold', '1'], 'BadFlagValue', /--threshold/],
    [['x.csv', '--frobnicate'], 'UnknownFlag', /unknown option --frobnicate/],
    [['x.csv', '-x'], 'UnknownFlag', /unknown option -x/],
    [['x.csv', '--period'], 'MissingFlagValue', /--period needs a value/],
    [['x.csv', '--period', '--sensitivity', '50'], 'MissingFlagValue', /--period needs a value/],
    [['x.csv', '--period', '3', '--period=4'], 'RepeatedFlag', /--period is given more than once/],
    [['x.csv', '--window', '100'], 'FlagNotForMode', /--window applies only to --mode stream, not entire/],
    [['x.csv', '--mode', 'stream', '--memory', '-1'], 'BadFlagValue', /--memory/],
    [['x.csv', '--mode', 'stream', '--memory', '1.5'], 'BadFlagValue', /--memory/],
    [['x.csv', '--mode', 'last', '--memory', '100'], 'FlagNotForMode', /--memory applies only to --mode stream, not last/],
    [['x.csv', '--mode', 'last', '--threshold', '0.3'], 'FlagNotForMode', /--threshold applies only to --mode changepoint/],
    [['x.csv', '--impute-mode', 'fixed'], 'MissingFlagValue', /--impute-fixed-value/],
    [['x.csv', '--impute-fixed-value', '3'], 'FlagNotForMode', /--impute-mode fixed/],
    [['x.csv', '--server', 'localhost:8080', '--key', 'k'], 'BadFlagValue', /--server.*an http:\/\/ or https:\/\/ URL/],
    [['x.csv', '--server', 'http://localhost:8080'], 'MissingFlagValue', /--server URL and --key KEY go together/],
    [['x.csv', '--key', 'k'], 'MissingFlagValue', /--server URL and --key KEY go together/],
    [['x.csv', '--server', 'http://h', '--key', 'with space'], 'BadFlagValue', /--key/],
    [['x.csv', '--mode', 'stream', '--server', 'http://h', '--key', 'k'], 'FlagNotForMode', /--server applies only to --mode entire, not stream/],
    [[], 'MissingFile', /missing the CSV file/],
    [['--mode', 'last'], 'MissingFile', /missing the CSV file/],
    [['a.csv', 'b.csv'], 'ExtraArgument', /expected one CSV file, got 2/],
  ] as const)('%j fails with %s', (argv, code, message) => {
    const err = failure([...argv]);
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
    expect(err.exitCode).toBe(EXIT_USAGE);
  });

  it('documents every flag in --help', () => {
    const text = usage();
    for (const f of FLAGS) expect(text).toContain(f.flag);
    expect(text).toContain('--help');
  });
});

describe('error registry', () => {
  it('gives every code the usage or the data exit status', () => {
    for (const { exitCode } of Object.values(CLI_ERRORS)) expect([EXIT_USAGE, EXIT_DATA]).toContain(exitCode);
    expect(EXIT_USAGE).not.toBe(EXIT_DATA);
    expect(new Set(Object.keys(CLI_ERRORS)).size).toBe(Object.keys(CLI_ERRORS).length);
  });
});
