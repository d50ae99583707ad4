// Reference rows from peers (issue 22): other detectors run on the same data and scored by the
// same scorers as our rows. The peers are Python packages, run from an optional environment
// (eval/peers/setup.sh) by the scripts in eval/peers/; this module runs them, parses what they
// write, scores it and writes the compact summary eval/peers.json. Evaluation only: nothing here
// is part of the service.
//
//   npm run eval:peers                       # every peer, NAB dev and UCR dev -> eval/peers.json
//   npm run eval:peers -- --only ucr         # one dataset (nab | ucr)
//   npm run eval:peers -- --peer stumpy      # some peers (vendor, stumpy; comma-separated)
//   npm run eval:peers -- --limit 3          # the first 3 series of each dataset (a quick check)
//   npm run eval:peers -- --reuse            # score the scripts' last outputs (eval/.peers-out) again
//
// A filtered run (--only, --peer, --limit) prints the table and writes nothing unless --out FILE
// is given, as `npm run eval` does.
import { spawn } from 'node:child_process';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopOnMissingDataset } from './datasets.js';
import { loadNabCorpus, NAB_PROFILE_NAMES, type NabCorpus } from './nab-data.js';
import { scoreCorpus, windowPrecisionRecall, type NabFileDetections } from './nab-scorer.js';
import { ANCHORS } from './anchors.js';
import { parseUcrFileName, ucrTopK, type UcrSeriesLocations } from './peers-ucr.js';

export const NOT_SET_UP = 'peers not set up: bash eval/peers/setup.sh';

export const PEER_NAMES = ['vendor', 'stumpy'] as const;
export type PeerName = (typeof PEER_NAMES)[number];
export const DATASETS = ['nab', 'ucr'] as const;
export type Dataset = (typeof DATASETS)[number];

/** One script run: which peer on which dataset, and how to call it. */
export interface PeerJob {
  readonly peer: PeerName;
  readonly dataset: Dataset;
  readonly script: string;
  readonly args: readonly string[];
}

/** stumpy's discords are a UCR method (a subsequence distance, no flags to score on NAB). */
export function peerJobs(peers: readonly PeerName[], datasets: readonly Dataset[]): PeerJob[] {
  const jobs: PeerJob[] = [];
  for (const peer of peers) {
    for (const dataset of datasets) {
      if (peer === 'vendor') jobs.push({ peer, dataset, script: 'vendor.py', args: [dataset] });
      else if (dataset === 'ucr') jobs.push({ peer, dataset, script: 'stumpy_ucr.py', args: [] });
    }
  }
  return jobs;
}

// --- the scripts' output ------------------------------------------------------------------

interface PeerHeader {
  readonly peer: string;
  readonly version: string;
  readonly elapsedMs: number;
  /** False when the script was stopped before its last series (it writes after every one). */
  readonly complete: boolean;
}

export interface NabPeerOutput extends PeerHeader {
  readonly files: readonly { file: string; rows: number; flagged: readonly number[]; errors: readonly string[] }[];
}

export interface UcrPeerOutput extends PeerHeader {
  readonly series: readonly { file: string; n: number; trainEnd: number; locations: readonly number[]; errors: readonly string[] }[];
}

function record(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SyntaxError(`${where}: expected an object`);
  return value as Record<string, unknown>;
}

function integers(value: unknown, where: string): number[] {
  if (!Array.isArray(value) || !value.every((v) => Number.isInteger(v))) throw new SyntaxError(`${where}: expected integers`);
  return value as number[];
}

function strings(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new SyntaxError(`${where}: expected strings`);
  return value as string[];
}

function header(o: Record<string, unknown>, where: string): PeerHeader {
  const { peer, version, elapsedMs, complete } = o;
  if (typeof peer !== 'string' || typeof version !== 'string' || typeof elapsedMs !== 'number') {
    throw new SyntaxError(`${where}: expected peer, version and elapsedMs`);
  }
  return { peer, version, elapsedMs, complete: complete !== false };
}

/** A NAB script's JSON: per file, the flagged rows (0-based, ascending, inside the file). */
export function parseNabPeerOutput(text: string, where = 'peer output'): NabPeerOutput {
  const o = record(JSON.parse(text), where);
  if (!Array.isArray(o['files'])) throw new SyntaxError(`${where}: expected files`);
  const files = o['files'].map((f: unknown, i) => {
    const r = record(f, `${where} files[${i}]`);
    const { file, rows } = r;
    if (typeof file !== 'string' || !Number.isInteger(rows) || (rows as number) < 0) {
      throw new SyntaxError(`${where} files[${i}]: expected file and rows`);
    }
    const flagged = integers(r['flagged'], `${where} ${file} flagged`);
    flagged.forEach((row, j) => {
      if (row < 0 || row >= (rows as number) || (j > 0 && row <= flagged[j - 1]!)) {
        throw new RangeError(`${where} ${file}: flagged rows must be ascending rows of the file`);
      }
    });
    return { file, rows: rows as number, flagged, errors: strings(r['errors'], `${where} ${file} errors`) };
  });
  return { ...header(o, where), files };
}

/** A UCR script's JSON: per series, its named locations (1-based, in the test part, best first). */
export function parseUcrPeerOutput(text: string, where = 'peer output'): UcrPeerOutput {
  const o = record(JSON.parse(text), where);
  if (!Array.isArray(o['series'])) throw new SyntaxError(`${where}: expected series`);
  const series = o['series'].map((s: unknown, i) => {
    const r = record(s, `${where} series[${i}]`);
    const { file, n, trainEnd } = r;
    if (typeof file !== 'string' || !Number.isInteger(n) || !Number.isInteger(trainEnd)) {
      throw new SyntaxError(`${where} series[${i}]: expected file, n and trainEnd`);
    }
    const locations = integers(r['locations'], `${where} ${file} locations`);
    if (locations.some((p) => p <= (trainEnd as number) || p > (n as number))) {
      throw new RangeError(`${where} ${file}: locations must lie in the test part`);
    }
    return { file, n: n as number, trainEnd: trainEnd as number, locations, errors: strings(r['errors'], `${where} ${file} errors`) };
  });
  return { ...header(o, where), series };
}

// --- scoring ------------------------------------------------------------------------------

export interface NabPeerScore {
  readonly files: number;
  /** standard, low FP, low FN, as the table orders them. */
  readonly scores: readonly [number, number, number];
  readonly windowsDetected: number;
  readonly windows: number;
  readonly falsePositiveRows: number;
  readonly flaggedShare: number;
  readonly failedRequests: number;
}

/**
 * The peer's flags scored by nab-scorer.ts, as our rows are. The output must cover the corpus's
 * files (each with its row count) unless `partial`, when the corpus is cut to the files it has.
 */
export function scoreNabPeer(corpus: NabCorpus, output: NabPeerOutput, partial = false): NabPeerScore {
  const byFile = new Map(output.files.map((f) => [f.file, f]));
  const series = partial ? corpus.series.filter((s) => byFile.has(s.file)) : corpus.series;
  const files: NabFileDetections[] = series.map((s) => {
    const out = byFile.get(s.file);
    if (out === undefined) throw new RangeError(`peer ${output.peer}: no flags for ${s.file}`);
    if (out.rows !== s.values.length) throw new RangeError(`peer ${output.peer}: ${s.file} has ${s.values.length} rows, not ${out.rows}`);
    const detections = new Array<boolean>(out.rows).fill(false);
    for (const row of out.flagged) detections[row] = true;
    return { file: s.file, rowCount: out.rows, windows: s.windows, detections };
  });
  const profile = (name: string) => {
    const p = corpus.profiles.find((q) => q.name === name);
    if (p === undefined) throw new RangeError(`no NAB profile ${name}`);
    return scoreCorpus(files, p).score;
  };
  const counts = windowPrecisionRecall(files);
  const [standard, lowFp, lowFn] = NAB_PROFILE_NAMES.map(profile) as [number, number, number];
  const rows = files.reduce((n, f) => n + f.rowCount, 0);
  const flagged = files.reduce((n, f) => n + f.detections.filter(Boolean).length, 0);
  return {
    files: files.length,
    scores: [standard, lowFp, lowFn],
    windowsDetected: counts.recalledWindows,
    windows: counts.windows,
    falsePositiveRows: counts.detections - counts.detectionsInWindows,
    flaggedShare: rows === 0 ? 0 : flagged / rows,
    failedRequests: output.files.reduce((n, f) => n + f.errors.length, 0),
  };
}

export interface UcrPeerScore {
  readonly series: number;
  readonly top1: number;
  readonly top3: number;
  readonly hits1: number;
  readonly hits3: number;
  readonly failedRequests: number;
}

/** top-1 and top-3 from each series' named locations, the labels read from the file names. */
export function scoreUcrPeer(output: UcrPeerOutput): UcrPeerScore {
  const series: UcrSeriesLocations[] = output.series.map((s) => {
    const label = parseUcrFileName(s.file);
    if (label.trainEnd !== s.trainEnd) throw new RangeError(`peer ${output.peer}: ${s.file} read with trainEnd ${s.trainEnd}`);
    return { label, locations: s.locations };
  });
  const one = ucrTopK(series, 1);
  const three = ucrTopK(series, 3);
  return {
    series: series.length,
    top1: one.accuracy,
    top3: three.accuracy,
    hits1: one.hits,
    hits3: three.hits,
    failedRequests: output.series.reduce((n, s) => n + s.errors.length, 0),
  };
}

// --- the table and the summary ------------------------------------------------------------

export interface PeerRow {
  readonly name: string;
  readonly nab?: readonly [number, number, number] | undefined;
  readonly ucrTop1?: number | undefined;
  readonly ucrTop3?: number | undefined;
  readonly note?: string | undefined;
}

/** Published UCR figures on the whole archive (ucr_dev/README.md); not computed here. */
export const UCR_ANCHORS: readonly PeerRow[] = [
  { name: 'TimeVQVAE-AD (published)', ucrTop1: 0.708, ucrTop3: 0.776, note: 'whole archive (250 series)' },
  { name: 'Matrix Profile, STUMPY discord (published)', ucrTop1: 0.512, ucrTop3: 0.684, note: 'whole archive (250 series)' },
  { name: 'MERLIN / MERLIN++ (published)', ucrTop1: 0.424, note: 'whole archive (250 series)' },
  { name: 'Convolutional autoencoder (published)', ucrTop1: 0.352, ucrTop3: 0.412, note: 'whole archive (250 series)' },
];

/** The published NAB anchors of the main table (anchors.ts), for the same page. */
export function nabAnchorRows(): PeerRow[] {
  return ANCHORS.filter((a) => a.nab !== undefined).map((a) => ({ name: a.name, nab: a.nab, note: a.source }));
}

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);
}

export function peersTable(rows: readonly PeerRow[]): string {
  const head = ['detector', 'NAB standard', 'NAB low FP', 'NAB low FN', 'UCR top-1', 'UCR top-3', 'note'];
  const line = (c: readonly string[]): string => `| ${c.join(' | ')} |`;
  return [
    line(head),
    line(head.map((_, i) => (i === 0 || i === head.length - 1 ? '---' : '---:'))),
    ...rows.map((r) =>
      line([r.name, fixed(r.nab?.[0], 1), fixed(r.nab?.[1], 1), fixed(r.nab?.[2], 1), fixed(r.ucrTop1, 3), fixed(r.ucrTop3, 3), r.note ?? '']),
    ),
  ].join('\n');
}

export interface PeerResult {
  readonly peer: PeerName;
  readonly package: string;
  readonly version: string;
  readonly nab?: NabPeerScore | undefined;
  readonly nabElapsedMs?: number | undefined;
  readonly ucr?: UcrPeerScore | undefined;
  readonly ucrElapsedMs?: number | undefined;
  /** Datasets whose script was stopped before its last series: scored on what it finished. */
  readonly stoppedEarly?: readonly Dataset[] | undefined;
}

const ROW_NAMES: Record<PeerName, string> = {
  vendor: 'time-series-anomaly-detector, entire series (peer)',
  stumpy: 'stumpy discord, test against train (peer)',
};

export function peerRows(results: readonly PeerResult[]): PeerRow[] {
  return results.map((r) => {
    const notes = [`${r.package} ${r.version}`];
    if (r.nab !== undefined) notes.push(`NAB: ${r.nab.windowsDetected}/${r.nab.windows} windows, ${(100 * r.nab.flaggedShare).toFixed(1)} % of rows flagged`);
    if (r.ucr !== undefined) notes.push(`UCR: ${r.ucr.series} series`);
    for (const d of r.stoppedEarly ?? []) notes.push(`${d.toUpperCase()} stopped early: ${d === 'nab' ? `${r.nab?.files ?? 0} files` : `${r.ucr?.series ?? 0} series`} scored`);
    const failed = (r.nab?.failedRequests ?? 0) + (r.ucr?.failedRequests ?? 0);
    if (failed > 0) notes.push(`${failed} failed requests (no flags)`);
    return { name: ROW_NAMES[r.peer], nab: r.nab?.scores, ucrTop1: r.ucr?.top1, ucrTop3: r.ucr?.top3, note: notes.join('; ') };
  });
}

/** A peer's NAB figures as the committed summary (eval/peers.json) holds them, for `npm run eval`'s table. */
export interface CommittedPeerNab {
  readonly name: string;
  readonly nab: readonly [number, number, number];
  /** The day `npm run eval:peers` measured it. */
  readonly date: string;
}

/**
 * The peers' NAB rows of the last `npm run eval:peers` (its summary file), so that `npm run eval`
 * prints them beside our rows without running Python: none when the file is absent.
 */
export async function committedPeerNab(file: string): Promise<CommittedPeerNab[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const summary = record(JSON.parse(text) as unknown, file);
  const date = typeof summary['date'] === 'string' ? summary['date'] : 'unknown date';
  if (!Array.isArray(summary['results'])) throw new SyntaxError(`${file}: expected results`);
  return (summary['results'] as unknown[]).flatMap((entry, i) => {
    const result = record(entry, `${file}: results[${i}]`);
    const peer = result['peer'] as PeerName;
    const scores = result['nab'] === undefined ? undefined : record(result['nab'], `${file}: results[${i}].nab`)['scores'];
    if (!PEER_NAMES.includes(peer) || !Array.isArray(scores) || scores.length !== 3 || !scores.every((v) => typeof v === 'number')) return [];
    return [{ name: ROW_NAMES[peer], nab: scores as unknown as readonly [number, number, number], date }];
  });
}

// --- running ------------------------------------------------------------------------------

export interface PeersOptions {
  readonly peers: readonly PeerName[];
  readonly datasets: readonly Dataset[];
  readonly limit: number | null;
  readonly dataDir: string;
  readonly venv: string;
  readonly out: string | null;
  /** Score the scripts' last outputs in eval/.peers-out instead of running them again. */
  readonly reuse: boolean;
}

export function parsePeersArgs(argv: readonly string[], repoRoot: string): PeersOptions {
  let peers: PeerName[] = [...PEER_NAMES];
  let datasets: Dataset[] = [...DATASETS];
  let limit: number | null = null;
  let dataDir = path.resolve(repoRoot, '../shared/datasets');
  let venv = path.join(repoRoot, 'eval/.peers-venv');
  let out: string | null = path.join(repoRoot, 'eval/peers.json');
  let filtered = false;
  let explicitOut = false;
  let reuse = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--reuse') {
      reuse = true;
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined) throw new RangeError(`${flag ?? ''} needs a value`);
    i += 1;
    if (flag === '--peer') {
      peers = value.split(',').map((p) => {
        if (!(PEER_NAMES as readonly string[]).includes(p)) throw new RangeError(`unknown peer ${p} (${PEER_NAMES.join(', ')})`);
        return p as PeerName;
      });
      filtered = true;
    } else if (flag === '--only') {
      if (!(DATASETS as readonly string[]).includes(value)) throw new RangeError(`unknown dataset ${value} (${DATASETS.join(', ')})`);
      datasets = [value as Dataset];
      filtered = true;
    } else if (flag === '--limit') {
      limit = Number(value);
      if (!Number.isInteger(limit) || limit < 1) throw new RangeError('--limit takes a positive integer');
      filtered = true;
    } else if (flag === '--data') dataDir = path.resolve(value);
    else if (flag === '--venv') venv = path.resolve(value);
    else if (flag === '--out') {
      out = path.resolve(value);
      explicitOut = true;
    } else throw new RangeError(`unknown option ${flag ?? ''}`);
  }
  return { peers, datasets, limit, dataDir, venv, out: filtered && !explicitOut ? null : out, reuse };
}

/** The environment's Python, or null when setup.sh has not been run. */
export async function venvPython(venv: string): Promise<string | null> {
  const python = path.join(venv, 'bin', 'python');
  try {
    await access(python);
    return python;
  } catch {
    return null;
  }
}

/** Runs one script to completion; its progress (stderr) goes to ours. */
export type ScriptRunner = (python: string, script: string, args: readonly string[]) => Promise<void>;

export const runScript: ScriptRunner = (python, script, args) =>
  new Promise((resolve, reject) => {
    const child = spawn(python, [script, ...args], {
      cwd: path.dirname(script),
      stdio: ['ignore', 'inherit', 'inherit'],
      // One thread per library: the evaluation shares a small machine.
      env: { ...process.env, PYTHONWARNINGS: 'ignore', OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1', NUMBA_NUM_THREADS: '1' },
    });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(script)} exited with ${code ?? signal ?? 'nothing'}`)),
    );
  });

export interface PeersRun {
  readonly results: PeerResult[];
  readonly table: string;
}

/** Runs the chosen peers and scores them; null (after printing NOT_SET_UP) without the environment. */
export async function runPeers(
  opts: PeersOptions,
  repoRoot: string,
  runner: ScriptRunner = runScript,
  print: (line: string) => void = console.log,
): Promise<PeersRun | null> {
  const python = await venvPython(opts.venv);
  if (python === null) {
    print(NOT_SET_UP);
    return null;
  }
  const scratch = path.join(repoRoot, 'eval/.peers-out');
  await mkdir(scratch, { recursive: true });
  const corpus = opts.datasets.includes('nab') ? await loadNabCorpus(path.join(opts.dataDir, 'nab_dev')) : null;
  const results = new Map<PeerName, PeerResult>();
  for (const job of peerJobs(opts.peers, opts.datasets)) {
    const outFile = path.join(scratch, `${job.peer}-${job.dataset}.json`);
    const data = path.join(opts.dataDir, job.dataset === 'nab' ? 'nab_dev' : 'ucr_dev');
    const limit = opts.limit === null ? [] : ['--limit', String(opts.limit)];
    if (!opts.reuse) {
      await runner(python, path.join(repoRoot, 'eval/peers', job.script), [...job.args, '--data', data, '--out', outFile, ...limit]);
    }
    const text = await readFile(outFile, 'utf8');
    const before = results.get(job.peer);
    const stopped = (complete: boolean): Dataset[] => [...(before?.stoppedEarly ?? []), ...(complete ? [] : [job.dataset])];
    if (job.dataset === 'nab' && corpus !== null) {
      const output = parseNabPeerOutput(text, outFile);
      results.set(job.peer, {
        ...(before ?? { peer: job.peer, package: output.peer, version: output.version }),
        nab: scoreNabPeer(corpus, output, opts.limit !== null || !output.complete),
        nabElapsedMs: output.elapsedMs,
        stoppedEarly: stopped(output.complete),
      });
    } else {
      const output = parseUcrPeerOutput(text, outFile);
      results.set(job.peer, {
        ...(before ?? { peer: job.peer, package: output.peer, version: output.version }),
        ucr: scoreUcrPeer(output),
        ucrElapsedMs: output.elapsedMs,
        stoppedEarly: stopped(output.complete),
      });
    }
  }
  const list = [...results.values()];
  const table = peersTable([...peerRows(list), ...nabAnchorRows(), ...UCR_ANCHORS]);
  return { results: list, table };
}

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB`;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const opts = parsePeersArgs(process.argv.slice(2), repoRoot);
  const started = performance.now();
  const run = await runPeers(opts, repoRoot).catch(stopOnMissingDataset);
  if (run !== null) {
    console.log(`\npeers on NAB dev and UCR dev\n\n${run.table}\n`);
    if (opts.out !== null) {
      await writeFile(
        opts.out,
        `${JSON.stringify(
          {
            date: new Date().toISOString().slice(0, 10),
            machine: machine(),
            threads: 1,
            // With --reuse this is the scoring alone; each peer's own time is in its results.
            reusedOutputs: opts.reuse,
            elapsedMs: Math.round(performance.now() - started),
            results: run.results,
            table: run.table,
          },
          null,
          2,
        )}\n`,
      );
      console.log(`wrote ${path.relative(process.cwd(), opts.out)}`);
    }
  }
}
