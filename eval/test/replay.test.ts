import * as detection from '@adp/detection';
import { beforeAll, describe, expect, it } from 'vitest';
import { type EngineApi, engineStreamingDetector } from '../src/engine.js';
import { loadNabCorpus, type NabCorpus } from '../src/nab-data.js';
import { probationaryRows, scoreCorpus } from '../src/nab-scorer.js';
import {
  ALARMS,
  alarmOf,
  alarmRecords,
  type DecisionRule,
  engineRule,
  parseReplayArgs,
  type RecordedFile,
  recordDecisions,
  replay,
  type ReplayResult,
  splitHalves,
  STEP_RULES,
} from '../src/replay.js';
import { ENGINE_VARIANTS } from '../src/variants.js';
import { datasetGate, datasetTitle } from '../../test/datasets.js';

const NAB = datasetGate('nab_dev');
// A spiky file whose spikes often climb over two points, a daily cycle with a jump, a short file
// with two windows, a file whose marginal spikes keep an event under way through a window, and
// one whose narrow misses often lie well inside its recent range.
const FILES = [
  'ec2_network_in_5abac7',
  'art_daily_jumpsup',
  'rogue_agent_key_hold',
  'ec2_cpu_utilization_fe7f93',
  'rogue_agent_key_updown',
];

describe.skipIf(!NAB.run)(datasetTitle('replaying recorded decisions', NAB), () => {
  let corpus: NabCorpus;
  let files: RecordedFile[];
  beforeAll(async () => {
    const all = await loadNabCorpus(NAB.dir);
    corpus = { ...all, series: all.series.filter((s) => FILES.some((f) => s.file.includes(f))) };
    expect(corpus.series).toHaveLength(FILES.length);
    files = recordDecisions(corpus);
  }, 60_000);

  /** The flagged rows of a replay inside one window of the file whose name holds `name`. */
  function flaggedInWindow(result: ReplayResult, name: string, windowIndex: number): number[] {
    const file = corpus.series.findIndex((s) => s.file.includes(name));
    const window = corpus.series[file]!.windows[windowIndex]!;
    return result.detections[file]!.detections.flatMap((x, i) => (x && i >= window.startRow && i <= window.endRow ? [i] : []));
  }

  it("gives back the engine's own flags and NAB scores with the engine's rule", () => {
    const result = replay(files, corpus.profiles, engineRule);
    const variant = ENGINE_VARIANTS.find((v) => v.name === 'default')!;
    const detector = engineStreamingDetector(detection as unknown as EngineApi, variant);
    corpus.series.forEach((s, i) => {
      expect(result.detections[i]!.detections, s.file).toEqual(detector.flags(s.values, s.timestampsMs));
    });
    for (const p of corpus.profiles) {
      expect(result.scores[p.name], p.name).toBeCloseTo(scoreCorpus(result.detections, p).score, 12);
    }
    // Every judged row is recorded: all but the first 11 (a window needs 12 points).
    for (const f of files) expect(f.firstJudged, f.file).toBe(11);
  });

  it('splits the files into two fixed halves by name, and switches the steps off by their fields', () => {
    const { a, b } = splitHalves(files);
    const names = files.map((f) => f.file).sort();
    expect(a.map((f) => f.file).sort()).toEqual([names[0], names[2], names[4]]);
    expect(b.map((f) => f.file).sort()).toEqual([names[1], names[3]]);
    expect(splitHalves([...files].reverse()).a.map((f) => f.file).sort()).toEqual([names[0], names[2], names[4]]);
    // The new-level alarm only adds flags, the familiar-range and routine-miss rules only hold
    // them back, and all three act on these files.
    const [engine, noRoutine, noQuiet, neither09, noLevel, noFamiliar, none] = STEP_RULES.map((s) =>
      replay(files, corpus.profiles, s.rule).detections.reduce((n, d) => n + d.detections.filter(Boolean).length, 0),
    );
    expect(STEP_RULES[0]!.rule).toBe(engineRule);
    expect(noRoutine!).toBeGreaterThan(engine!);
    expect(noQuiet!).toBeGreaterThanOrEqual(engine!);
    expect(neither09!).toBeGreaterThanOrEqual(noRoutine!);
    expect(noLevel!).toBeLessThan(engine!);
    expect(noFamiliar!).toBeGreaterThan(engine!);
    // Engine 0.7.0's rule: without the new-level alarm, and without the rules that hold back.
    expect(none!).toBeGreaterThan(noLevel!);
  });

  it('scores a rule that never fires as the null detector, 0 under every profile', () => {
    const never = replay(files, corpus.profiles, () => false);
    for (const p of corpus.profiles) expect(never.scores[p.name], p.name).toBe(0);
    expect(never.falsePositiveRows).toBe(0);
    expect(never.missedWindows).toBe(corpus.series.reduce((n, s) => n + s.windows.length, 0));
  });

  it("replays another rule on the same inputs: engine 0.5.0's new-event exception", () => {
    // Before 0.6.0 a deviation 20 times the ongoing event's largest error was new even while that
    // event was still rising: the second point of a two-point spike was reported again.
    const before060: DecisionRule = (d, row, f) => engineRule({ ...d, newest: 0 }, row, f);
    const now = replay(files, corpus.profiles, engineRule);
    const then = replay(files, corpus.profiles, before060);
    const spiky = corpus.series.findIndex((s) => s.file.includes('5abac7'));
    const flagged = (r: typeof now): number[] => r.detections[spiky]!.detections.flatMap((x, i) => (x ? [i] : []));
    expect(flagged(now)).toContain(858);
    expect(flagged(now)).not.toContain(859);
    expect(flagged(then)).toEqual(expect.arrayContaining([858, 859, 1163, 1164, 2078, 2079]));
    expect(then.falsePositiveRows).toBeGreaterThan(now.falsePositiveRows);
  });

  it("replays engine 0.7.0's rule, without the new-level alarm and the familiar-range rule", () => {
    // fe7f93's second window opens with a spike nine margins out that the refractory rule held
    // back (an earlier event under way); it is past every value of the window's older half, so
    // since 0.8.0 the new-level alarm reports it.
    const before080: DecisionRule = (d, row, f) => engineRule({ ...d, newLevel: 0, familiar: false }, row, f);
    const now = replay(files, corpus.profiles, engineRule);
    const then = replay(files, corpus.profiles, before080);
    expect(flaggedInWindow(then, 'fe7f93', 1)).toEqual([]);
    expect(flaggedInWindow(now, 'fe7f93', 1)[0]).toBe(2131);
    const file = corpus.series.findIndex((s) => s.file.includes('fe7f93'));
    const recorded = files[file]!.inputs[2131 - files[file]!.firstJudged]!;
    expect(recorded.newLevel).toBeGreaterThan(detection.NEW_LEVEL_MARGIN);
    expect(Math.abs(recorded.deviation)).toBeGreaterThan(recorded.margin);
  });

  it('counts the reports by the alarm that raised them, adding up to the scorer\'s false positives and windows', () => {
    const standard = corpus.profiles.find((p) => p.name === 'standard')!;
    const result = replay(files, corpus.profiles, engineRule);
    const scored = scoreCorpus(result.detections, standard);
    const records = alarmRecords(files, standard);
    expect(records.map((r) => r.alarm)).toEqual([...ALARMS]);
    const sum = (pick: (r: (typeof records)[number]) => number): number => records.reduce((n, r) => n + pick(r), 0);
    expect(sum((r) => r.falsePositiveRows)).toBe(result.falsePositiveRows);
    expect(sum((r) => r.falsePositiveCost)).toBeCloseTo(scored.lost.falsePositives, 9);
    const windows = corpus.series.reduce((n, s) => n + s.windows.length, 0);
    expect(sum((r) => r.windowsFirst)).toBe(windows - result.missedWindows);
    expect(sum((r) => r.reportedRows)).toBe(scored.files.reduce((n, f) => n + f.detectionRows, 0));
    // Each flagged row has exactly one alarm, and a row nothing reports has none.
    for (const f of files) {
      for (const d of f.inputs) expect(alarmOf(d) !== null).toBe(d.isAnomaly);
    }
    // These files' first detections by the band lie closer to it than its false positives do.
    const band = records.find((r) => r.alarm === 'band')!;
    expect(band.windowsFirst).toBeGreaterThan(0);
    expect(band.firstMedianMargins!).toBeLessThan(band.falsePositiveMedianMargins!);
    // A recording whose verdict no alarm gives (not the engine's) is refused, not counted.
    const first = files[0]!;
    const quiet = first.inputs.findIndex((d, k) => !d.isAnomaly && first.firstJudged + k >= probationaryRows(first.rowCount));
    const forged = { ...first, inputs: first.inputs.map((d, k) => (k === quiet ? { ...d, isAnomaly: true } : d)) };
    expect(() => alarmRecords([forged], standard)).toThrow(/flagged but no alarm reports it/);
  });
});

describe('eval:replay command line', () => {
  it('reads --halves and --out, and refuses anything else', () => {
    expect(parseReplayArgs([])).toEqual({ halves: false });
    expect(parseReplayArgs(['--halves', '--out', '/tmp/r.json'])).toEqual({ halves: true, out: '/tmp/r.json' });
    expect(() => parseReplayArgs(['--out'])).toThrow('--out needs a file');
    expect(() => parseReplayArgs(['--out', '--halves'])).toThrow('--out needs a file');
    expect(() => parseReplayArgs(['--half'])).toThrow('unknown option --half (--halves, --out FILE)');
  });
});
