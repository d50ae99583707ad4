// Command-line parsing: argv in, a validated command out. No I/O here, so every rule is testable.
import { DEFAULT_MAX_ANOMALY_RATIO, DEFAULT_SENSITIVITY } from '@adp/domain';
import { GRANULARITIES, IMPUTE_MODES, STREAM_DEFAULTS, type Granularity, type ImputeMode } from '@adp/detection';
import { CliError } from './errors.js';

export const MODES = ['entire', 'last', 'changepoint', 'stream'] as const;
export type Mode = (typeof MODES)[number];

/** What to detect and how; every field is validated against the same ranges as the API. */
export interface DetectCommand {
  readonly kind: 'detect';
  /** Path of the CSV file; `-` reads standard input. */
  readonly file: string;
  readonly mode: Mode;
  /** undefined = detect the period; 0 = non-seasonal. */
  readonly period: number | undefined;
  readonly sensitivity: number;
  readonly maxAnomalyRatio: number;
  readonly granularity: Granularity;
  readonly customInterval: number;
  readonly imputeMode: ImputeMode;
  readonly imputeFixedValue: number | undefined;
  /**
   * stream only: `follow` (default, as the streaming worker): the worker's window,
   * `STREAM_DEFAULTS.windowPoints`, growing to 4 periods + 1 once a verdict finds a longer period;
   * a number: that fixed trailing window, the judged point included; `suggested`: the fixed
   * suggested window of the whole file's period.
   */
  readonly windowPoints: number | 'suggested' | 'follow';
  /** stream only: points of history needed before a point is judged; undefined = engine default. */
  readonly minHistory: number | undefined;
  /**
   * stream only: points a streaming client keeps, the judged one included; the range of those
   * before the window is the new-level alarm's past range (`StreamOptions.memoryPoints`).
   */
  readonly memoryPoints: number;
  /** changepoint only. */
  readonly threshold: number | undefined;
  /** changepoint only. */
  readonly stableTrendWindow: number | undefined;
  /** `--strict`: a repeated timestamp is an error instead of a warning (the later row kept). */
  readonly strict: boolean;
  /**
   * entire only: the service's base URL (`http://localhost:8080`). The file is then sent to the
   * service as a detection job (`POST /v1/jobs`), which takes files over 8,640 points, instead of
   * being judged here; progress goes to stderr, the results to stdout as without it.
   */
  readonly server: string | undefined;
  /** With --server: the API key sent as X-Service-Key. */
  readonly key: string | undefined;
}

export type Command = { readonly kind: 'help' } | DetectCommand;

export const DEFAULTS = {
  mode: 'entire',
  sensitivity: DEFAULT_SENSITIVITY,
  maxAnomalyRatio: DEFAULT_MAX_ANOMALY_RATIO,
  granularity: 'none',
  customInterval: 1,
  imputeMode: 'auto',
  // The streaming worker's defaults (WORKER_WINDOW_POINTS, which its window follows up from,
  // and WORKER_MEMORY_POINTS), so the CLI's stream mode judges as the worker does.
  windowPoints: 'follow',
  memoryPoints: STREAM_DEFAULTS.memoryPoints,
} as const satisfies Partial<DetectCommand>;

type FlagKey = Exclude<keyof DetectCommand, 'kind' | 'file' | 'strict'>;

/** The one option without a value. */
const STRICT_FLAG = '--strict';
const STRICT_HELP = 'refuse a repeated timestamp (data error naming its line) instead of keeping the later row with a warning';

interface FlagSpec {
  readonly flag: string;
  readonly key: FlagKey;
  readonly valueName: string;
  readonly help: string;
  /** Modes the flag makes sense in; absent = every mode. */
  readonly modes?: readonly Mode[];
  /** Returns the parsed value, or a phrase saying what was expected. */
  readonly parse: (raw: string) => { ok: true; value: string | number } | { ok: false; expected: string };
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;

function numberIn(min: number, max: number, opts: { minOpen?: boolean; maxOpen?: boolean; integer?: boolean }) {
  const lo = opts.minOpen ? `> ${min}` : `>= ${min}`;
  const hi = max === Infinity ? '' : opts.maxOpen ? ` and < ${max}` : ` and <= ${max}`;
  const expected = `${opts.integer ? 'an integer' : 'a number'} ${lo}${hi}`;
  return (raw: string) => {
    if (!(opts.integer ? INTEGER : DECIMAL).test(raw)) return { ok: false as const, expected };
    const value = Number(raw);
    const aboveMin = opts.minOpen ? value > min : value >= min;
    const belowMax = opts.maxOpen ? value < max : value <= max;
    if (!Number.isFinite(value) || !aboveMin || !belowMax) return { ok: false as const, expected };
    return { ok: true as const, value };
  };
}

function oneOf(choices: readonly string[]) {
  return (raw: string) =>
    choices.includes(raw)
      ? { ok: true as const, value: raw }
      : { ok: false as const, expected: `one of ${choices.join(', ')}` };
}

function httpUrl(raw: string) {
  const expected = 'an http:// or https:// URL, e.g. http://localhost:8080';
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? { ok: true as const, value: url.href.replace(/\/+$/, '') } : { ok: false as const, expected };
  } catch {
    return { ok: false as const, expected };
  }
}

function apiKey(raw: string) {
  return /^[\x21-\x7e]{1,512}$/.test(raw) ? { ok: true as const, value: raw } : { ok: false as const, expected: 'an API key (visible ASCII, no spaces)' };
}

function windowPoints() {
  const points = numberIn(12, Infinity, { integer: true });
  return (raw: string) => {
    if (raw === 'suggested' || raw === 'follow') return { ok: true as const, value: raw };
    const parsed = points(raw);
    return parsed.ok ? parsed : { ok: false as const, expected: `${parsed.expected}, follow or suggested` };
  };
}

export const FLAGS: readonly FlagSpec[] = [
  { flag: '--mode', key: 'mode', valueName: 'MODE', parse: oneOf(MODES),
    help: `entire (default): every point judged with the whole series; last: the last point only, judged from the points before it; changepoint: entire plus isChangePoint and confidenceScore; stream: every point judged from the trailing window before it` },
  { flag: '--period', key: 'period', valueName: 'N', parse: numberIn(0, Infinity, { integer: true }),
    help: 'seasonal period in points; 0 = non-seasonal; default: detected' },
  { flag: '--sensitivity', key: 'sensitivity', valueName: 'S', parse: numberIn(0, 99, {}),
    help: `0..99, higher = narrower margins = more anomalies (default ${DEFAULTS.sensitivity})` },
  { flag: '--max-anomaly-ratio', key: 'maxAnomalyRatio', valueName: 'R', parse: numberIn(0, 0.5, { minOpen: true, maxOpen: true }),
    help: `largest share of points flagged, in (0, 0.5) (default ${DEFAULTS.maxAnomalyRatio})` },
  { flag: '--granularity', key: 'granularity', valueName: 'G', parse: oneOf(GRANULARITIES),
    help: `${GRANULARITIES.join(', ')} (default ${DEFAULTS.granularity}); other than none, timestamps are aligned and gaps imputed` },
  { flag: '--custom-interval', key: 'customInterval', valueName: 'N', parse: numberIn(1, Infinity, { integer: true }),
    help: 'multiplies the granularity step, e.g. minutely + 5 = 5-minute data (default 1)' },
  { flag: '--impute-mode', key: 'imputeMode', valueName: 'M', parse: oneOf(IMPUTE_MODES),
    help: `how gaps are filled when granularity is not none: ${IMPUTE_MODES.join(', ')} (default ${DEFAULTS.imputeMode})` },
  { flag: '--impute-fixed-value', key: 'imputeFixedValue', valueName: 'V', parse: numberIn(-Infinity, Infinity, {}),
    help: 'the value gaps get with --impute-mode fixed' },
  { flag: '--window', key: 'windowPoints', valueName: 'N', modes: ['stream'], parse: windowPoints(),
    help: `stream: the trailing window each point is judged from: follow (default, as the streaming worker: ${STREAM_DEFAULTS.windowPoints} points, or period*4+1 once a longer period is found), a fixed N >= 12 (judged point included), or suggested (fixed: the suggested window of the whole file's period, period*4+1, at least ${STREAM_DEFAULTS.windowPoints})` },
  { flag: '--min-history', key: 'minHistory', valueName: 'N', modes: ['stream'], parse: numberIn(12, Infinity, { integer: true }),
    help: 'stream: points a window must hold, judged point included, before its point is judged, >= 12 (default 12); earlier points are reported as not anomalous' },
  { flag: '--memory', key: 'memoryPoints', valueName: 'N', modes: ['stream'], parse: numberIn(0, Infinity, { integer: true }),
    help: `stream: points of the past a point is judged with, itself included: a new level must also lie beyond the range of those before its window (default ${DEFAULTS.memoryPoints}, as the streaming worker; 0 or at most the window: none)` },
  { flag: '--server', key: 'server', valueName: 'URL', modes: ['entire'], parse: httpUrl,
    help: 'entire: send the file to the service at URL as a detection job (POST /v1/jobs: up to 1,000,000 points, judged as one series) with a progress bar on stderr, instead of judging it here; needs --key' },
  { flag: '--key', key: 'key', valueName: 'KEY', modes: ['entire'], parse: apiKey,
    help: 'with --server: the API key (sent as X-Service-Key)' },
  { flag: '--threshold', key: 'threshold', valueName: 'T', modes: ['changepoint'], parse: numberIn(0.01, 0.99, {}),
    help: 'changepoint: confidence a changepoint needs, 0.01..0.99 (default: the engine\'s)' },
  { flag: '--stable-trend-window', key: 'stableTrendWindow', valueName: 'N', modes: ['changepoint'], parse: numberIn(3, Infinity, { integer: true }),
    help: 'changepoint: points on each side that must show a stable trend, >= 3 (default: the engine\'s)' },
];

/**
 * Parses the arguments after the script name. `--flag value` and `--flag=value` both work; a
 * flag given twice, an unknown flag, a bad value or a flag that the mode ignores is an error,
 * because a silently ignored option gives results the user did not ask for.
 */
export function parseArgs(argv: readonly string[]): Command {
  const values = new Map<FlagKey, string | number>();
  const seen = new Set<string>();
  const positionals: string[] = [];
  let onlyPositionals = false;
  let strict = false;

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (onlyPositionals || arg === '-' || !arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    if (arg === '--') {
      onlyPositionals = true;
      continue;
    }
    if (arg === '--help' || arg === '-h') return { kind: 'help' };

    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (name === STRICT_FLAG) {
      if (eq !== -1) throw new CliError('BadFlagValue', `option ${STRICT_FLAG} takes no value`);
      if (strict) throw new CliError('RepeatedFlag', `option ${STRICT_FLAG} is given more than once`);
      strict = true;
      continue;
    }
    const spec = FLAGS.find((f) => f.flag === name);
    if (spec === undefined) {
      throw new CliError('UnknownFlag', `unknown option ${name} (see --help)`);
    }
    let raw: string | undefined;
    if (eq !== -1) {
      raw = arg.slice(eq + 1);
    } else {
      raw = argv[i + 1];
      if (raw === undefined || (raw.startsWith('--') && raw.length > 2)) {
        throw new CliError('MissingFlagValue', `option ${name} needs a value ${spec.valueName}`);
      }
      i++;
    }
    if (seen.has(name)) throw new CliError('RepeatedFlag', `option ${name} is given more than once`);
    seen.add(name);
    const parsed = spec.parse(raw.trim());
    if (!parsed.ok) {
      throw new CliError('BadFlagValue', `option ${name}: "${raw}" is not valid; expected ${parsed.expected}`);
    }
    values.set(spec.key, parsed.value);
  }

  if (positionals.length === 0) {
    throw new CliError('MissingFile', 'missing the CSV file to read (usage: detect <file.csv> [options]; see --help)');
  }
  if (positionals.length > 1) {
    throw new CliError('ExtraArgument', `expected one CSV file, got ${positionals.length}: ${positionals.join(' ')}`);
  }

  const mode = (values.get('mode') ?? DEFAULTS.mode) as Mode;
  for (const spec of FLAGS) {
    if (spec.modes !== undefined && values.has(spec.key) && !spec.modes.includes(mode)) {
      throw new CliError('FlagNotForMode', `option ${spec.flag} applies only to --mode ${spec.modes.join('|')}, not ${mode}`);
    }
  }
  if (values.has('server') !== values.has('key')) {
    throw new CliError('MissingFlagValue', '--server URL and --key KEY go together');
  }
  const imputeMode = (values.get('imputeMode') ?? DEFAULTS.imputeMode) as ImputeMode;
  const imputeFixedValue = values.get('imputeFixedValue') as number | undefined;
  if (imputeMode === 'fixed' && imputeFixedValue === undefined) {
    throw new CliError('MissingFlagValue', '--impute-mode fixed needs --impute-fixed-value V');
  }
  if (imputeFixedValue !== undefined && imputeMode !== 'fixed') {
    throw new CliError('FlagNotForMode', 'option --impute-fixed-value applies only with --impute-mode fixed');
  }

  return {
    kind: 'detect',
    file: positionals[0] as string,
    mode,
    period: values.get('period') as number | undefined,
    sensitivity: (values.get('sensitivity') as number | undefined) ?? DEFAULTS.sensitivity,
    maxAnomalyRatio: (values.get('maxAnomalyRatio') as number | undefined) ?? DEFAULTS.maxAnomalyRatio,
    granularity: (values.get('granularity') ?? DEFAULTS.granularity) as Granularity,
    customInterval: (values.get('customInterval') as number | undefined) ?? DEFAULTS.customInterval,
    imputeMode,
    imputeFixedValue,
    windowPoints: (values.get('windowPoints') as number | 'suggested' | 'follow' | undefined) ?? DEFAULTS.windowPoints,
    minHistory: values.get('minHistory') as number | undefined,
    memoryPoints: (values.get('memoryPoints') as number | undefined) ?? DEFAULTS.memoryPoints,
    threshold: values.get('threshold') as number | undefined,
    stableTrendWindow: values.get('stableTrendWindow') as number | undefined,
    strict,
    server: values.get('server') as string | undefined,
    key: values.get('key') as string | undefined,
  };
}

/** The text `--help` prints. */
export function usage(): string {
  const lines = [
    'Usage: npm run detect -- <file.csv | -> [options]',
    '',
    'Reads a timestamp,value CSV with a header row and writes one JSON object per point (JSON lines).',
    'Timestamps: ISO 8601 (2024-01-01T00:00:00Z, offsets, fractions) or epoch numbers',
    '(all digits: below 100000000000 = seconds, otherwise milliseconds).',
    '',
    'Options:',
  ];
  for (const f of FLAGS) lines.push(...wrap(`  ${`${f.flag} ${f.valueName}`.padEnd(26)}`, f.help));
  lines.push(...wrap(`  ${STRICT_FLAG.padEnd(26)}`, STRICT_HELP));
  lines.push(`  ${'-h, --help'.padEnd(26)}this text`);
  lines.push('', 'Exit status: 0 done, 1 data error (file, CSV, series), 2 usage error.');
  return lines.join('\n') + '\n';
}

const HELP_WIDTH = 100;

/** The help text after `lead`, wrapped at word boundaries and indented under its first line. */
function wrap(lead: string, text: string): string[] {
  const lines: string[] = [];
  let line = lead;
  for (const word of text.split(' ')) {
    if (line.length + word.length + 1 > HELP_WIDTH && line.trim().length > 0 && line.length > lead.length) {
      lines.push(line.trimEnd());
      line = ' '.repeat(lead.length);
    }
    line += line.length === lead.length || line.endsWith(' ') ? word : ` ${word}`;
  }
  lines.push(line.trimEnd());
  return lines;
}
