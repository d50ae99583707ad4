// `npm run bench -- --compare REV`: this working tree against revision REV on the same host, the two
// runs interleaved round by round, so that the host's drift (30 % from hour to hour on a shared
// machine) falls on both alike. Reported as per-row ratios (this tree / REV) with their spread.
//
// REV is checked out in a temporary git worktree. Both trees are measured by this tree's harness
// (the bench/*.ts files are copied over REV's), so only the product code differs between them;
// the server child (bench/serve.ts) stays REV's own where it has one, since it wires REV's app
// (the two speak the same start/listening/close messages).
// REV's node_modules links to this tree's packages when the two lockfiles pin the same external
// packages (its own workspace packages are linked to its own folders), else it gets `npm ci`.
import { execFile, spawn } from 'node:child_process';
import { copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BENCH_SECTIONS, type BenchSection } from './args.js';
import { round } from './stats.js';

const run = promisify(execFile);

/** This tree's root (bench/ is one level below it). */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The harness files copied into REV's tree: every bench/*.ts at the top level, and the fine-tune cases. */
const HARNESS_EXTRA = ['packages/model/bench/cases.ts'];
/** Bench files REV keeps when it has them: they import REV's app by its own entry points. */
const REVISION_OWN = new Set(['serve.ts']);

export interface CompareOptions {
  readonly revision: string;
  readonly rounds: number;
  readonly quick: boolean;
  readonly sections: ReadonlySet<BenchSection>;
  /** The jobs section's size, given to both trees' runs alike. */
  readonly jobPoints: number | null;
  readonly jobSeries: number;
  readonly log: (message: string) => void;
}

interface RunRow {
  readonly section: string;
  readonly name: string;
  readonly latency: { readonly p50Ms: number };
  readonly throughput: number;
  readonly throughputUnit: string;
}

interface RunResult {
  readonly rows: readonly RunRow[];
  readonly machine: { readonly loadAverageAtStart: readonly number[]; readonly loadAverageAtEnd: readonly number[] };
}

interface Tree {
  readonly label: string;
  readonly dir: string;
}

async function git(cwd: string, ...argv: string[]): Promise<string> {
  const { stdout } = await run('git', argv, { cwd, maxBuffer: 16 * 2 ** 20 });
  return stdout.trim();
}

type LockPackages = Record<string, { version?: string; resolved?: string; integrity?: string; link?: boolean }>;

async function lockPackages(dir: string): Promise<LockPackages> {
  const lock = JSON.parse(await readFile(join(dir, 'package-lock.json'), 'utf8')) as { packages?: LockPackages };
  return lock.packages ?? {};
}

/** The external packages a lockfile pins (workspace links left out), as comparable text. */
function externalPins(packages: LockPackages): string {
  return JSON.stringify(
    Object.entries(packages)
      .filter(([key, entry]) => key.includes('node_modules/') && entry.link !== true)
      .map(([key, entry]) => [key, entry.version, entry.resolved, entry.integrity])
      .sort(),
  );
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * REV's node_modules as links: each external package to this tree's copy, each workspace package
 * (lock entries with `link: true`) to REV's own folder, so REV's code runs against REV's code.
 */
async function linkNodeModules(revDir: string, revPackages: LockPackages): Promise<void> {
  const target = join(revDir, 'node_modules');
  await mkdir(target, { recursive: true });
  const workspaceLinks = Object.entries(revPackages).filter(([key, entry]) => key.startsWith('node_modules/') && entry.link === true);
  const linkedScopes = new Set(workspaceLinks.map(([key]) => key.slice('node_modules/'.length).split('/')[0] as string).filter((n) => n.startsWith('@')));
  const source = join(ROOT, 'node_modules');
  for (const name of await readdir(source)) {
    if (linkedScopes.has(name)) {
      // A scope that holds workspace packages: a folder of its own, its external packages linked one by one.
      await mkdir(join(target, name), { recursive: true });
      for (const inner of await readdir(join(source, name))) {
        const key = `node_modules/${name}/${inner}`;
        if (revPackages[key]?.link === true || (await lstat(join(source, name, inner))).isSymbolicLink()) continue;
        await symlink(join(source, name, inner), join(target, name, inner));
      }
    } else if (!(await exists(join(target, name)))) {
      await symlink(join(source, name), join(target, name));
    }
  }
  for (const [key, entry] of workspaceLinks) {
    const link = join(revDir, key);
    if (await exists(link)) continue;
    await mkdir(dirname(link), { recursive: true });
    await symlink(join(revDir, entry.resolved as string), link);
  }
}

async function prepareRevision(revision: string, log: (message: string) => void): Promise<{ tree: Tree; remove: () => Promise<void> }> {
  const sha = await git(ROOT, 'rev-parse', '--verify', `${revision}^{commit}`);
  const dir = await mkdtemp(join(os.tmpdir(), `adp-bench-${sha.slice(0, 8)}-`));
  log(`checking out ${revision} (${sha.slice(0, 12)}) in ${dir}`);
  await git(ROOT, 'worktree', 'add', '--detach', '--quiet', dir, sha);
  const remove = async () => {
    await git(ROOT, 'worktree', 'remove', '--force', dir).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const name of await readdir(join(ROOT, 'bench'))) {
      if (!name.endsWith('.ts')) continue;
      if (REVISION_OWN.has(name) && (await exists(join(dir, 'bench', name)))) continue;
      await copyFile(join(ROOT, 'bench', name), join(dir, 'bench', name));
    }
    for (const file of HARNESS_EXTRA) {
      await mkdir(dirname(join(dir, file)), { recursive: true });
      await copyFile(join(ROOT, file), join(dir, file));
    }
    const [ours, theirs] = await Promise.all([lockPackages(ROOT), lockPackages(dir)]);
    if (externalPins(ours) === externalPins(theirs)) {
      log('the lockfiles pin the same packages: linking node_modules to this tree');
      await linkNodeModules(dir, theirs);
    } else {
      log('the lockfiles differ: npm ci in the temporary worktree (a minute or more)');
      await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, maxBuffer: 64 * 2 ** 20 });
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { tree: { label: revision, dir }, remove };
}

/** One run of the harness in `tree`; its progress goes to our stderr, its table is discarded. */
async function benchOnce(tree: Tree, options: CompareOptions, out: string): Promise<RunResult> {
  const argv = ['--import', 'tsx', 'bench/run.ts', '--sections', [...options.sections].join(','), '--json-out', out];
  if (options.quick) argv.push('--quick');
  if (options.jobPoints !== null) argv.push('--job-points', String(options.jobPoints));
  if (options.jobSeries !== 1) argv.push('--job-series', String(options.jobSeries));
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: tree.dir, stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`the bench run in ${tree.dir} (${tree.label}) failed: ${signal ?? `status ${code}`}`)),
    );
  });
  return JSON.parse(await readFile(out, 'utf8')) as RunResult;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export interface RowComparison {
  readonly section: string;
  readonly name: string;
  readonly baseP50Ms: number;
  readonly headP50Ms: number;
  /** this tree's p50 / REV's, per round: below 1 is faster. */
  readonly p50Ratios: readonly number[];
  readonly throughputUnit: string;
  /** this tree's throughput / REV's, per round: above 1 is more. */
  readonly throughputRatios: readonly number[];
}

/** Pairs each round's runs row by row (by name); a row missing from either side is left out. */
export function compareRuns(head: readonly RunResult[], base: readonly RunResult[]): RowComparison[] {
  const names = (head[0]?.rows ?? []).map((row) => row.name);
  const comparisons: RowComparison[] = [];
  for (const name of names) {
    const pairs = head
      .map((run, round) => [run.rows.find((r) => r.name === name), base[round]?.rows.find((r) => r.name === name)] as const)
      .filter((pair): pair is readonly [RunRow, RunRow] => pair[0] !== undefined && pair[1] !== undefined);
    const first = pairs[0];
    if (first === undefined) continue;
    comparisons.push({
      section: first[0].section,
      name,
      baseP50Ms: round(median(pairs.map(([, b]) => b.latency.p50Ms))),
      headP50Ms: round(median(pairs.map(([h]) => h.latency.p50Ms))),
      p50Ratios: pairs.map(([h, b]) => h.latency.p50Ms / b.latency.p50Ms),
      throughputUnit: first[0].throughputUnit,
      throughputRatios: pairs.map(([h, b]) => h.throughput / b.throughput),
    });
  }
  return comparisons;
}

const spread = (ratios: readonly number[]) => `${round(Math.min(...ratios), 2)}–${round(Math.max(...ratios), 2)}`;

export function comparisonTable(rows: readonly RowComparison[], baseLabel: string): string {
  const lines = [
    `| Case | ${baseLabel} p50 ms | this tree p50 ms | p50 ratio (median) | p50 ratio (min–max) | throughput ratio (median) | throughput ratio (min–max) |`,
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.baseP50Ms} | ${r.headP50Ms} | ${round(median(r.p50Ratios), 2)} | ${spread(r.p50Ratios)} | ` +
        `${round(median(r.throughputRatios), 2)} (${r.throughputUnit}) | ${spread(r.throughputRatios)} |`,
    );
  }
  return lines.join('\n');
}

export async function compareRevisions(options: CompareOptions): Promise<void> {
  const { log } = options;
  const head: Tree = { label: 'this tree', dir: ROOT };
  const { tree: base, remove } = await prepareRevision(options.revision, log);
  const scratch = await mkdtemp(join(os.tmpdir(), 'adp-bench-compare-'));
  const headRuns: RunResult[] = [];
  const baseRuns: RunResult[] = [];
  const loads: string[] = [];
  try {
    for (let r = 0; r < options.rounds; r++) {
      // Alternate who goes first, so a host that slows down (or warms up) over a round favours neither.
      const order = r % 2 === 0 ? [head, base] : [base, head];
      for (const tree of order) {
        log(`round ${r + 1} of ${options.rounds}: ${tree.label}`);
        const result = await benchOnce(tree, options, join(scratch, `${r}-${tree === head ? 'head' : 'base'}.json`));
        (tree === head ? headRuns : baseRuns).push(result);
        loads.push(`${tree === head ? 'this' : options.revision} ${result.machine.loadAverageAtStart[0]}→${result.machine.loadAverageAtEnd[0]}`);
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
    await remove();
  }
  const table = comparisonTable(compareRuns(headRuns, baseRuns), options.revision);
  const sections = options.sections.size === BENCH_SECTIONS.length ? 'all sections' : `sections ${[...options.sections].join(', ')}`;
  process.stdout.write(`\n${table}\n\n`);
  process.stdout.write(
    `this tree against ${options.revision}: ${options.rounds} rounds, ${options.quick ? 'quick' : 'full'} runs, ${sections}; ` +
      `ratios are this tree / ${options.revision} per round (p50 below 1 = faster, throughput above 1 = more).\n` +
      `${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${os.cpus().length} cores, Node ${process.version}; ` +
      `1-minute load average at each run's start→end: ${loads.join(', ')}.\n`,
  );
}
