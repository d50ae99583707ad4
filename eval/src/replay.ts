// Replaying last-point decisions on NAB. Streaming the engine over the 35 files takes about 25 s,
// but most rule changes only touch how a point's verdict is decided from what the detector
// computed for it: its deviation, band, refractory maximum and sustained-error scores.
// `recordDecisions` streams the engine once with its `onDecision` hook (an evaluation-only
// option) and keeps those inputs for every judged row; `replay` scores any decision rule on them
// with NAB's scorer in well under a second. A change to the forecast, the noise scale or the
// window still needs the full run (`npm run eval -- --only nab ...`).
//
//   npx tsx eval/src/replay.ts                 # record, replay the engine's own rule, print
//   npx tsx eval/src/replay.ts --out FILE      # also write the recording as JSON
//   npx tsx eval/src/replay.ts --halves        # also the engine's steps on two halves of the files
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as engine from '@adp/detection';
import type { DecisionInputs } from '@adp/detection';
import { type EngineApi, engineStreamingDetector, HARNESS_STREAM, type StreamSettings } from './engine.js';
import { stopOnMissingDataset } from './datasets.js';
import { loadNabCorpus, type NabCorpus } from './nab-data.js';
import { type NabFileDetections, type NabProfile, type NabWindow, scoreCorpus, scoredDetections } from './nab-scorer.js';

/** One file's recording: `inputs[k]` belongs to row `firstJudged + k`; earlier rows are not judged. */
export interface RecordedFile {
  readonly file: string;
  readonly rowCount: number;
  readonly windows: readonly NabWindow[];
  readonly windowPoints: number;
  readonly firstJudged: number;
  readonly inputs: readonly DecisionInputs[];
}

/** A decision rule: is this judged row an anomaly, given what the detector computed for it? */
export type DecisionRule = (inputs: DecisionInputs, row: number, file: RecordedFile) => boolean;

/** The alarms of last-point detection, in the order a verdict tries them. */
export const ALARMS = ['band', 'sustained', 'newLevel', 'stuck'] as const;
export type Alarm = (typeof ALARMS)[number];

/**
 * Which alarm reports the point under the engine's exported decision functions, null for none;
 * `quietShare` is the sustained alarm's quiet-point gate (`SUSTAINED_QUIET_SHARE`; 0 replays the
 * engine without it).
 */
export function alarmOf(d: DecisionInputs, quietShare: number = engine.SUSTAINED_QUIET_SHARE): Alarm | null {
  const outside = engine.outsideBand(d.deviation, d.margin, d.scale, d.largest, d.newest) && !d.echo && !d.familiar && !d.routine;
  if (outside) return 'band';
  const scores = Number.isNaN(d.sustainedNow) ? null : { now: d.sustainedNow, before: d.sustainedBefore };
  if (engine.sustainedAlarm(false, d.deviation, scores, () => d.reportedInStretch, quietShare * d.margin) > 0) return 'sustained';
  if (engine.newLevelAlarm(false, d.newLevel, scores, () => d.reportedInStretch) !== 0) return 'newLevel';
  return engine.stuckAlarm(false, d.stuck, () => d.reportedInStretch) !== 0 ? 'stuck' : null;
}

/** The engine's decision from its exported functions (see `alarmOf`). */
function decide(d: DecisionInputs, quietShare: number): boolean {
  return alarmOf(d, quietShare) !== null;
}

/** The engine's own rule, from its exported decision functions: replaying it gives its flags. */
export const engineRule: DecisionRule = (d) => decide(d, engine.SUSTAINED_QUIET_SHARE);

/**
 * Streams every NAB file as the harness's default engine row does (`detectStream`, the streaming
 * rule of `settings`) and records each judged row's decision inputs. Throws if the recorded
 * verdicts are not the flags `detectStream` returned (the hook and the records must agree).
 */
export function recordDecisions(corpus: NabCorpus, settings: StreamSettings = HARNESS_STREAM): RecordedFile[] {
  let inputs: DecisionInputs[] = [];
  // The harness's own default engine row, with the hook as one more detectStream option.
  const detector = engineStreamingDetector(
    engine as unknown as EngineApi,
    { name: 'record', description: 'records decision inputs', detect: { onDecision: (d: DecisionInputs) => inputs.push(d) } },
    settings,
  );
  return corpus.series.map((s): RecordedFile => {
    inputs = [];
    const flags = detector.flags(s.values, s.timestampsMs);
    // Without a client period every row from the first full minimum history on is judged.
    const firstJudged = s.values.length - inputs.length;
    flags.forEach((flag, row) => {
      const judged = row >= firstJudged ? inputs[row - firstJudged]!.isAnomaly : false;
      if (flag !== judged) throw new Error(`${s.file}: recorded verdict of row ${row} differs from detectStream's`);
    });
    const windowPoints = detector.lastPlan()!.windowPoints;
    return { file: s.file, rowCount: s.values.length, windows: s.windows, windowPoints, firstJudged, inputs };
  });
}

export interface ReplayResult {
  /** Normalised NAB score per profile name. */
  readonly scores: Readonly<Record<string, number>>;
  readonly missedWindows: number;
  /** Flagged rows outside every window, after the probationary period. */
  readonly falsePositiveRows: number;
  readonly detections: readonly NabFileDetections[];
}

/** The file's flags under `rule` (rows before the first judged one are not flagged). */
function detectionsOf(f: RecordedFile, rule: DecisionRule): NabFileDetections {
  const flags = new Array<boolean>(f.rowCount).fill(false);
  f.inputs.forEach((d, k) => {
    flags[f.firstJudged + k] = rule(d, f.firstJudged + k, f);
  });
  return { file: f.file, rowCount: f.rowCount, windows: f.windows, detections: flags };
}

/** Scores `rule` on the recorded inputs with NAB's scorer, every profile. */
export function replay(files: readonly RecordedFile[], profiles: readonly NabProfile[], rule: DecisionRule): ReplayResult {
  const detections = files.map((f) => detectionsOf(f, rule));
  const scores: Record<string, number> = {};
  let missedWindows = 0;
  let falsePositiveRows = 0;
  profiles.forEach((p, i) => {
    const corpus = scoreCorpus(detections, p);
    scores[p.name] = corpus.score;
    if (i === 0) {
      for (const f of corpus.files) {
        missedWindows += f.missedWindows;
        falsePositiveRows += f.falsePositiveRows;
      }
    }
  });
  return { scores, missedWindows, falsePositiveRows, detections };
}

/** What one alarm did on the recorded rows, after each file's probationary period. */
export interface AlarmRecord {
  readonly alarm: Alarm;
  readonly reportedRows: number;
  readonly falsePositiveRows: number;
  /** The weighted cost of those false positives under the profile (positive). */
  readonly falsePositiveCost: number;
  /** Windows whose first detection this alarm made. */
  readonly windowsFirst: number;
  /** Median |deviation| / margin of the windows' first detections by this alarm (null: none). */
  readonly firstMedianMargins: number | null;
  /** Median |deviation| / margin of this alarm's false positives (null: none). */
  readonly falsePositiveMedianMargins: number | null;
}

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The engine's reports by the alarm that raised them (`alarmOf`): rows, false positives and their
 * cost under `profile` (NAB's weights, as the scorer counts them), the windows each alarm caught
 * first, and how far outside its band (in margins) a first detection and a false positive lay.
 */
export function alarmRecords(files: readonly RecordedFile[], profile: NabProfile): AlarmRecord[] {
  const acc = new Map<Alarm, { reported: number; fp: number; cost: number; first: number[]; fpMargins: number[] }>(
    ALARMS.map((a) => [a, { reported: 0, fp: 0, cost: 0, first: [], fpMargins: [] }]),
  );
  for (const f of files) {
    const caught = f.windows.map(() => false);
    // The recorded verdicts (recordDecisions checked them against detectStream's flags).
    for (const s of scoredDetections(detectionsOf(f, (d) => d.isAnomaly))) {
      const d = f.inputs[s.row - f.firstJudged]!;
      const alarm = alarmOf(d);
      if (alarm === null) throw new Error(`${f.file}: row ${s.row} is flagged but no alarm reports it`);
      const a = acc.get(alarm)!;
      a.reported += 1;
      const margins = Math.abs(d.deviation) / d.margin;
      if (s.window >= 0) {
        if (!caught[s.window]) a.first.push(margins);
        caught[s.window] = true;
      } else {
        a.fp += 1;
        a.cost -= profile.fpWeight * s.falsePositiveWeight;
        a.fpMargins.push(margins);
      }
    }
  }
  return ALARMS.map((alarm) => {
    const a = acc.get(alarm)!;
    return {
      alarm,
      reportedRows: a.reported,
      falsePositiveRows: a.fp,
      falsePositiveCost: a.cost,
      windowsFirst: a.first.length,
      firstMedianMargins: median(a.first),
      falsePositiveMedianMargins: median(a.fpMargins),
    };
  });
}

function alarmReport(files: readonly RecordedFile[], profile: NabProfile): string {
  const cell = (x: number | null): string => (x === null ? '' : x.toFixed(2));
  const lines = [
    `| alarm | rows reported | false-positive rows | their cost (${profile.name}, raw) | windows caught first | margins out: first detections (median) | margins out: false positives (median) |`,
    '|---|---:|---:|---:|---:|---:|---:|',
    ...alarmRecords(files, profile).map(
      (r) =>
        `| ${r.alarm} | ${r.reportedRows} | ${r.falsePositiveRows} | ${r.falsePositiveCost.toFixed(2)} | ${r.windowsFirst} | ` +
        `${cell(r.firstMedianMargins)} | ${cell(r.falsePositiveMedianMargins)} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The files in two halves, alternately in the order of their names (the first, third, ... name
 * in `a`): a fixed split for checking that a rule's gain is not one half's alone.
 */
export function splitHalves(files: readonly RecordedFile[]): { a: RecordedFile[]; b: RecordedFile[] } {
  const order = files.map((f) => f.file).sort();
  const inA = (f: RecordedFile): boolean => order.indexOf(f.file) % 2 === 0;
  return { a: files.filter(inA), b: files.filter((f) => !inA(f)) };
}

/**
 * The engine's rule with some of its steps switched off, by the fields a step writes (and the
 * quiet-point gate by its share): what the `--halves` report compares (the new-level alarm and
 * familiar-range rule, the routine-miss rule and the quiet-point gate; CHANGELOG.md says when each came).
 */
export const STEP_RULES: ReadonlyArray<{ readonly name: string; readonly rule: DecisionRule }> = [
  { name: 'engine', rule: engineRule },
  { name: 'no routine-miss rule', rule: (d) => decide({ ...d, routine: false }, engine.SUSTAINED_QUIET_SHARE) },
  { name: 'no quiet-point gate on the sustained alarm', rule: (d) => decide(d, 0) },
  { name: 'neither 0.9.0 step (engine 0.8)', rule: (d) => decide({ ...d, routine: false }, 0) },
  { name: 'no new-level alarm', rule: (d) => decide({ ...d, newLevel: 0 }, engine.SUSTAINED_QUIET_SHARE) },
  { name: 'no familiar-range rule', rule: (d) => decide({ ...d, familiar: false }, engine.SUSTAINED_QUIET_SHARE) },
  {
    name: 'none of the four (engine 0.7.0)',
    rule: (d) => decide({ ...d, newLevel: 0, familiar: false, routine: false, stuck: 0 }, 0),
  },
];

function halvesReport(files: readonly RecordedFile[], profiles: readonly NabProfile[]): string {
  const { a, b } = splitHalves(files);
  const cell = (part: readonly RecordedFile[], rule: DecisionRule): string => {
    const scores = replay(part, profiles, rule).scores;
    return profiles.map((p) => (scores[p.name] ?? Number.NaN).toFixed(1)).join(' / ');
  };
  const lines = [
    `| rule | half A (${a.length} files) | half B (${b.length} files) | all ${files.length} |`,
    '|---|---:|---:|---:|',
    ...STEP_RULES.map((s) => `| ${s.name} | ${cell(a, s.rule)} | ${cell(b, s.rule)} | ${cell(files, s.rule)} |`),
  ];
  return `${lines.join('\n')}\n`;
}

/** `eval:replay`'s options: `--halves`, `--out FILE`; anything else is a RangeError. */
export function parseReplayArgs(argv: readonly string[]): { halves: boolean; out?: string } {
  const parsed: { halves: boolean; out?: string } = { halves: false };
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    if (flag === '--halves') parsed.halves = true;
    else if (flag === '--out') {
      const file = argv[index + 1];
      if (file === undefined || file.startsWith('--')) throw new RangeError('--out needs a file');
      parsed.out = file;
      index++;
    } else throw new RangeError(`unknown option ${flag} (--halves, --out FILE)`);
  }
  return parsed;
}

async function main(argv: readonly string[]): Promise<void> {
  const { halves, out } = parseReplayArgs(argv);
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const corpus = await loadNabCorpus(path.resolve(repoRoot, '..', 'shared', 'datasets', 'nab_dev'));
  const started = performance.now();
  const files = recordDecisions(corpus);
  const recorded = performance.now();
  const result = replay(files, corpus.profiles, engineRule);
  const replayed = performance.now();
  const figures = corpus.profiles.map((p) => (result.scores[p.name] ?? Number.NaN).toFixed(1)).join(' / ');
  process.stdout.write(
    `recorded ${files.reduce((n, f) => n + f.inputs.length, 0)} judged rows in ` +
      `${((recorded - started) / 1000).toFixed(1)} s\nengine's rule replayed in ${(replayed - recorded).toFixed(0)} ms: NAB ${figures} ` +
      `(standard / low FP / low FN), ${result.missedWindows} windows missed, ${result.falsePositiveRows} false-positive rows\n`,
  );
  const standard = corpus.profiles.find((p) => p.name === 'standard');
  if (standard !== undefined) process.stdout.write(`\n${alarmReport(files, standard)}`);
  if (halves) process.stdout.write(`\n${halvesReport(files, corpus.profiles)}`);
  if (out !== undefined) {
    await writeFile(out, JSON.stringify({ profiles: corpus.profiles, files }));
    process.stdout.write(`wrote ${out}\n`);
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch(stopOnMissingDataset).catch((err: unknown) => {
    process.stderr.write(`${err instanceof RangeError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
