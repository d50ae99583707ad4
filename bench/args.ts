// The command line of `npm run bench` (bench/README.md lists every option).

/** Parts of a run, in the order a run takes them; `--sections` picks some. */
export const BENCH_SECTIONS = ['engine', 'model', 'http', 'native', 'jobs'] as const;
export type BenchSection = (typeof BENCH_SECTIONS)[number];

export interface BenchArgs {
  /** Fewer samples and shorter loads; nothing is written unless `jsonOut` names a file. */
  readonly quick: boolean;
  readonly sections: ReadonlySet<BenchSection>;
  /** Writes the run's results here (not to bench/results.json): what `--compare` reads back. */
  readonly jsonOut: string | null;
  /** `--compare REV`: the revision to run against, interleaved with this tree. */
  readonly compare: string | null;
  /** Runs of each tree in a comparison (default 3). */
  readonly rounds: number;
  /** `--job-points N`: points of the jobs section's job (default: 1,000,000, or 100,000 with --quick). */
  readonly jobPoints: number | null;
  /** `--job-series N`: the job's points spread over N machines' series (default 1). */
  readonly jobSeries: number;
}

export class BenchArgsError extends Error {}

function valueOf(argv: readonly string[], index: number, flag: string): string {
  const value = argv[index + 1];
  if (value === undefined || value.startsWith('--')) throw new BenchArgsError(`${flag} needs a value`);
  return value;
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  let quick = false;
  let sections: Set<BenchSection> = new Set(BENCH_SECTIONS);
  let jsonOut: string | null = null;
  let compare: string | null = null;
  let rounds = 3;
  let jobPoints: number | null = null;
  let jobSeries = 1;
  const whole = (flag: string, text: string, min: number): number => {
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < min) throw new BenchArgsError(`${flag} needs a whole number of at least ${min}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    switch (flag) {
      case '--quick':
        quick = true;
        break;
      case '--sections': {
        const names = valueOf(argv, i++, flag).split(',');
        const unknown = names.filter((name) => !(BENCH_SECTIONS as readonly string[]).includes(name));
        if (unknown.length > 0) throw new BenchArgsError(`unknown section ${unknown.join(', ')} (sections: ${BENCH_SECTIONS.join(', ')})`);
        sections = new Set(names as BenchSection[]);
        break;
      }
      case '--json-out':
        jsonOut = valueOf(argv, i++, flag);
        break;
      case '--compare':
        compare = valueOf(argv, i++, flag);
        break;
      case '--rounds': {
        rounds = Number(valueOf(argv, i++, flag));
        if (!Number.isSafeInteger(rounds) || rounds < 1) throw new BenchArgsError('--rounds needs a whole number of at least 1');
        break;
      }
      case '--job-points':
        jobPoints = whole(flag, valueOf(argv, i++, flag), 12);
        break;
      case '--job-series':
        jobSeries = whole(flag, valueOf(argv, i++, flag), 1);
        break;
      default:
        throw new BenchArgsError(`unknown option ${flag}`);
    }
  }
  if (jobPoints !== null && jobPoints < jobSeries * 12) throw new BenchArgsError('--job-points must give every series of --job-series at least 12 points');
  return { quick, sections, jsonOut, compare, rounds, jobPoints, jobSeries };
}
