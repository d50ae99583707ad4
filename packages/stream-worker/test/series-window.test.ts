// A series' window and its checkpoint: round trips, every earlier layout still read, the judge's
// state (fixed and grown windows) carried through a checkpoint so a resumed worker judges as an
// uninterrupted one.
import { describe, expect, it } from 'vitest';
import { decodeWindow, emptyWindow, encodeWindow, judgeNewPoints } from '../src/index.js';
import { LiveJudges, type JudgeModelState, type JudgeSettings } from '../src/new-points-judge.js';
import { appendToWindow, judgeHistory } from '../src/series-window.js';

describe('window checkpoints', () => {
  it('round-trip, keep the newest points when the capacity shrank, and refuse foreign bytes', () => {
    const window = emptyWindow();
    window.values.push(1, 2, 3);
    window.timestampsMs.push(10, 20, 30);
    window.zScores.push(Number.NaN, 0.5, 7);
    window.lastJudgedTsMs = 30;
    window.seenPoints = 1000;
    const bytes = encodeWindow(window);
    const back = decodeWindow(bytes, 100)!;
    expect(back.values).toEqual([1, 2, 3]);
    expect(back.zScores[0]).toBeNaN();
    expect(back).toMatchObject({ lastJudgedTsMs: 30, seenPoints: 1000 });
    expect(decodeWindow(bytes, 2)!.values).toEqual([2, 3]);
    expect(decodeWindow(encodeWindow(emptyWindow()), 10)).toEqual(emptyWindow());
    expect(decodeWindow(Buffer.from('nonsense'), 10)).toBeNull();
    expect(decodeWindow(bytes.subarray(0, bytes.length - 1), 10)).toBeNull();
  });
});

/** A version-8 checkpoint without a level stream as version 7 wrote it: magic ADW7, without the level section. */
function asVersion7(v8: Buffer): Buffer {
  expect(v8.subarray(0, 4).toString('ascii')).toBe('ADW8');
  const arraysEnd = 32 + v8.readUInt32LE(4) * 24;
  const levelAt = arraysEnd + 4 + v8.readUInt32LE(arraysEnd) * 8;
  expect(v8.readUInt8(levelAt)).toBe(0);
  return Buffer.concat([Buffer.from('ADW7', 'ascii'), v8.subarray(4, levelAt), v8.subarray(levelAt + 1)]);
}

/**
 * A version-8 checkpoint of a judge that never grew its window (no older values, its history the
 * window's) as version 6 wrote it: magic ADW6, without the older values, the level section and the
 * following judge's own fields, the current window's judge section as it was.
 */
function asVersion6(v8: Buffer): Buffer {
  const v7 = asVersion7(v8);
  const arraysEnd = 32 + v7.readUInt32LE(4) * 24;
  expect(v7.readUInt32LE(arraysEnd)).toBe(0);
  const judgeAt = arraysEnd + 4;
  if (v7.readUInt8(judgeAt) === 0) return Buffer.concat([Buffer.from('ADW6', 'ascii'), v7.subarray(4, arraysEnd), Buffer.from([0])]);
  const lows = v7.readUInt32LE(judgeAt + 17);
  const highs = v7.readUInt32LE(judgeAt + 21 + lows * 16);
  const inner = judgeAt + 25 + (lows + highs) * 16;
  return Buffer.concat([Buffer.from('ADW6', 'ascii'), v7.subarray(4, arraysEnd), v7.subarray(inner)]);
}

/** A version-8 checkpoint as version 5 wrote it: magic ADW5, without the learned excursion's point. */
function asVersion5(v8: Buffer): Buffer {
  const v6 = asVersion6(v8);
  return Buffer.concat([Buffer.from('ADW5', 'ascii'), v6.subarray(4, 24), v6.subarray(32)]);
}

/** A window of three judged points out of the series' 300. */
function threePoints() {
  const window = emptyWindow();
  window.values.push(1, 2, 3);
  window.timestampsMs.push(10, 20, 30);
  window.zScores.push(0.1, 0.2, 5);
  window.lastJudgedTsMs = 30;
  window.seenPoints = 300;
  return window;
}

describe('window checkpoints with the level stream (version 8)', () => {
  it('round-trip the level model stream and its pending flags, read version 7 as having none, and refuse a damaged one', () => {
    const window = threePoints();
    window.level = {
      baselineUpdatedAtMs: 1_700_000_000_000,
      judged: 250,
      distances: [0.5, 1.5, 2.25],
      parts: [0.5, 1.5, 2.25],
      hold: { pending: [[260, 0.75], [270, 0.5]], runCap: 0.25 },
    };
    const v8 = encodeWindow(window);
    expect(decodeWindow(v8, 100)).toEqual(window);
    const none = encodeWindow({ ...window, level: null });
    expect(decodeWindow(none, 100)).toEqual({ ...window, level: null });
    expect(decodeWindow(asVersion7(none), 100)).toEqual({ ...window, level: null });
    // A level section cut short, or with a count past the end or a severity out of [0, 1]: not a checkpoint.
    const levelAt = 32 + 3 * 24 + 4;
    expect(decodeWindow(Buffer.concat([v8.subarray(0, levelAt + 20), Buffer.from([0])]), 100)).toBeNull();
    const tooMany = Buffer.from(v8);
    tooMany.writeUInt32LE(1000, levelAt + 25);
    expect(decodeWindow(tooMany, 100)).toBeNull();
    const badCap = Buffer.from(v8);
    badCap.writeDoubleLE(1.5, levelAt + 17);
    expect(decodeWindow(badCap, 100)).toBeNull();
  });
});

describe('window checkpoints with the learned excursion (version 6)', () => {
  it("round-trip where the last point beyond the learned band was, and read version-5 checkpoints as having none", () => {
    const window = threePoints();
    window.lastLearnedExcessAt = 299;
    const v7 = encodeWindow(window);
    expect(decodeWindow(v7, 100)).toEqual(window);
    expect(decodeWindow(asVersion6(v7), 100)).toEqual(window);
    const old = decodeWindow(asVersion5(v7), 100)!;
    expect(old).toEqual({ ...window, lastLearnedExcessAt: -1 });
    expect(decodeWindow(encodeWindow({ ...window, lastLearnedExcessAt: -1 }), 100)!.lastLearnedExcessAt).toBe(-1);
    // Not a point of the series' history, or a header cut short: not a checkpoint.
    for (const bad of [300, 2.5, -2, Number.NaN]) expect(decodeWindow(encodeWindow({ ...window, lastLearnedExcessAt: bad }), 100)).toBeNull();
    expect(decodeWindow(v7.subarray(0, 28), 100)).toBeNull();
  });
});

describe('window checkpoints with the judge state (versions 2 to 6)', () => {
  const settings = { windowPoints: 120, maxAnomalyRatio: 0.25 };
  const series = Array.from({ length: 400 }, (_, i) => 50 + 5 * Math.sin((2 * Math.PI * i) / 24) + ((i * 7919) % 13) / 13);
  series[300] = series[300]! + 30;

  function judged(upTo: number, judgeSettings: JudgeSettings = settings) {
    const window = emptyWindow();
    const first = judgeNewPoints(
      { context: [], newValues: series.slice(0, upTo), seenPoints: 0, sensitivity: 95, judge: null },
      judgeSettings,
    );
    window.values.push(...series.slice(Math.max(0, upTo - 119), upTo));
    window.timestampsMs.push(...window.values.map((_, i) => i));
    window.zScores.push(...window.values.map(() => Number.NaN));
    window.lastJudgedTsMs = upTo;
    window.seenPoints = upTo;
    window.judge = first.judge;
    return { window, first };
  }

  it('round-trip the judge state, which resumes exactly as an uninterrupted run', () => {
    const { window } = judged(250);
    expect(window.judge?.judge.model).not.toBeNull();
    // The one-step errors' summaries the judge reuses between refreshes travel too (version 4:
    // with the band's spreads above and below).
    expect(window.judge?.judge.errors).toMatchObject({
      at: expect.any(Number) as number,
      calibrated: expect.any(Number) as number,
      upper: expect.any(Number) as number,
      lower: expect.any(Number) as number,
    });
    const bytes = encodeWindow(window);
    expect(bytes.subarray(0, 4).toString('ascii')).toBe('ADW8');
    const back = decodeWindow(bytes, 119)!;
    expect(decodeWindow(asVersion6(bytes), 119)!.judge).toEqual(window.judge);
    expect(decodeWindow(asVersion5(bytes), 119)!.judge).toEqual(window.judge);
    expect(back.judge).toEqual(window.judge);
    const whole = judgeNewPoints({ context: [], newValues: series, seenPoints: 0, sensitivity: 95, judge: null }, settings);
    const resumed = judgeNewPoints(
      { context: back.values, newValues: series.slice(250), seenPoints: back.seenPoints, sensitivity: 95, judge: back.judge },
      settings,
    );
    expect(resumed.detections).toEqual(whole.detections.slice(250));
    expect(resumed.detections[50]!.isAnomaly).toBe(true);
  });

  it('read version-1 checkpoints (no judge state: fitted afresh) and drop a judge that does not fit the window', () => {
    const { window } = judged(250);
    const v2 = asVersion5(encodeWindow(window));
    // A version-1 checkpoint is the version-2 one without the judge section, magic ADW1.
    const n = window.values.length;
    const v1 = Buffer.concat([Buffer.from('ADW1', 'ascii'), v2.subarray(4, 24 + n * 24)]);
    const old = decodeWindow(v1, 119)!;
    expect(old.values).toEqual(window.values);
    expect(old.judge).toBeNull();
    const fresh = judgeNewPoints(
      { context: old.values, newValues: series.slice(250), seenPoints: old.seenPoints, sensitivity: 95, judge: null },
      settings,
    );
    expect(fresh.detections).toHaveLength(150);
    expect(fresh.detections[50]!.isAnomaly).toBe(true);
    // A judge state for another point count (a checkpoint written by a different version) is ignored.
    expect(decodeWindow(encodeWindow({ ...window, seenPoints: 251 }), 119)!.judge).toBeNull();
    // A damaged judge section keeps the window, without the judge.
    const damaged = Buffer.concat([v2, Buffer.from([1])]);
    expect(decodeWindow(damaged, 119)!.judge).toBeNull();
  });

  /** A version-5 checkpoint as version 4 wrote it: magic ADW4, without the past section. */
  function asVersion4(v5: Buffer, n: number): Buffer {
    const at = 24 + n * 24 + 1 + 4 + 24;
    const lows = v5.readUInt32LE(at);
    const highs = v5.readUInt32LE(at + 4 + lows * 16);
    const end = at + 8 + (lows + highs) * 16;
    return Buffer.concat([Buffer.from('ADW4', 'ascii'), v5.subarray(4, at), v5.subarray(end)]);
  }

  it('round-trip the past range (version 5), and read version-4 checkpoints with an empty past', () => {
    // A memory of 400 points: by point 250, the 131 points that left the 120-point window.
    const remembering = { ...settings, memoryPoints: 400 };
    const { window, first: head } = judged(250, remembering);
    const lows = head.judge.judge.pastLows!;
    const highs = head.judge.judge.pastHighs!;
    // The following judge's own past (before its history, here the window's) is the same.
    expect(head.judge.pastLows).toEqual(lows);
    expect(head.judge.pastHighs).toEqual(highs);
    expect(lows.length).toBeGreaterThan(0);
    expect(highs.length).toBeGreaterThan(0);
    // The queues' heads are the lowest and highest of points 0..130.
    expect(lows[1]).toBe(Math.min(...series.slice(0, 131)));
    expect(highs[1]).toBe(Math.max(...series.slice(0, 131)));
    const v5 = asVersion5(encodeWindow(window));
    const back = decodeWindow(v5, 119)!;
    expect(back.judge).toEqual(head.judge);
    const whole = judgeNewPoints({ context: [], newValues: series, seenPoints: 0, sensitivity: 95, judge: null }, remembering);
    const resumed = judgeNewPoints(
      { context: back.values, newValues: series.slice(250), seenPoints: 250, sensitivity: 95, judge: back.judge },
      remembering,
    );
    expect(resumed.detections).toEqual(whole.detections.slice(250));
    expect(resumed.judge).toEqual(whole.judge);
    // Version 4 had no past: the judge resumes with an empty one.
    const v4 = asVersion4(v5, 119);
    const old = decodeWindow(v4, 119)!;
    expect(old.judge).toEqual({ ...head.judge, judge: { ...head.judge.judge, pastLows: undefined, pastHighs: undefined }, pastLows: [], pastHighs: [] });
    // A past whose points do not increase, or that runs past the end, drops the judge, not the window.
    const at = 24 + 119 * 24 + 1 + 4 + 24;
    const bad = Buffer.from(v5);
    bad.writeDoubleLE(-5, at + 4 + 16);
    expect(lows.length).toBeGreaterThanOrEqual(4);
    expect(decodeWindow(bad, 119)!.judge).toBeNull();
    const long = Buffer.from(v5);
    long.writeUInt32LE(1_000_000, at);
    expect(decodeWindow(long, 119)!.judge).toBeNull();
    expect(decodeWindow(long, 119)!.values).toEqual(window.values);
  });

  it('read version-2 and version-3 checkpoints (no reusable one-step errors: fresh ones at the next point)', () => {
    const { window } = judged(250);
    const v4 = asVersion4(asVersion5(encodeWindow(window)), window.values.length);
    const errors = window.judge!.judge.errors!;
    // Version 2 is version 4 without the errors section (49 bytes), magic ADW2; version 3 has the
    // section without the side spreads: hasErrors, at, calibrated, largest, newest (33 bytes).
    const body = v4.subarray(4, v4.length - 49);
    const v2 = Buffer.concat([Buffer.from('ADW2', 'ascii'), body]);
    const v3Errors = Buffer.alloc(33);
    v3Errors.writeUInt8(1, 0);
    [errors.at, errors.calibrated, errors.largest, errors.newest].forEach((x, k) => v3Errors.writeDoubleLE(x, 1 + 8 * k));
    const v3 = Buffer.concat([Buffer.from('ADW3', 'ascii'), body, v3Errors]);
    const whole = judgeNewPoints({ context: [], newValues: series, seenPoints: 0, sensitivity: 95, judge: null }, settings);
    for (const [name, bytes] of [
      ['version 2', v2],
      ['version 3', v3],
    ] as const) {
      const back = decodeWindow(bytes, 119)!;
      expect(back.judge, name).toEqual({ ...window.judge, judge: { ...window.judge!.judge, errors: null } });
      const resumed = judgeNewPoints(
        { context: back.values, newValues: series.slice(250), seenPoints: back.seenPoints, sensitivity: 95, judge: back.judge },
        settings,
      );
      // The same verdicts; margins within the reuse's drift (at most 8 points of one-step errors).
      expect(resumed.detections.map((d) => d.isAnomaly), name).toEqual(whole.detections.slice(250).map((d) => d.isAnomaly));
      resumed.detections.forEach((d, i) => {
        const exact = whole.detections[250 + i]!;
        expect(Math.abs(d.upperMargin - exact.upperMargin), name).toBeLessThanOrEqual(0.2 * exact.upperMargin);
        expect(Math.abs(d.lowerMargin - exact.lowerMargin), name).toBeLessThanOrEqual(0.2 * exact.lowerMargin);
      });
    }
    // Damaged summaries (a negative spread) drop the judge state, not the window, in both versions.
    for (const [bytes, at] of [
      [v4, v4.length - 24],
      [v4, v4.length - 32],
      [v3, v3.length - 24],
    ] as const) {
      const bad = Buffer.from(bytes);
      bad.writeDoubleLE(-1, at);
      expect(decodeWindow(bad, 119)!.judge).toBeNull();
      expect(decodeWindow(bad, 119)!.values).toEqual(window.values);
    }
    // A version-3 section with version 4's length (or the reverse) is malformed: no judge.
    expect(decodeWindow(Buffer.concat([Buffer.from('ADW3', 'ascii'), v4.subarray(4)]), 119)!.judge).toBeNull();
    expect(decodeWindow(Buffer.concat([Buffer.from('ADW4', 'ascii'), v3.subarray(4)]), 119)!.judge).toBeNull();
  });

  it('judge the same whatever the batches were', () => {
    const whole = judgeNewPoints({ context: [], newValues: series, seenPoints: 0, sensitivity: 95, judge: null }, settings);
    let context: number[] = [];
    let judge = null;
    const pieces = [];
    for (const [from, to] of [
      [0, 7],
      [7, 100],
      [100, 101],
      [101, 333],
      [333, 400],
    ] as const) {
      const result = judgeNewPoints({ context, newValues: series.slice(from, to), seenPoints: from, sensitivity: 95, judge }, settings);
      pieces.push(...result.detections);
      context = series.slice(Math.max(0, to - 119), to);
      judge = result.judge;
    }
    expect(pieces).toEqual(whole.detections);
  });

  it('judge the same with live judges kept between batches, and restore whenever the state is not the one they returned', () => {
    const whole = judgeNewPoints({ context: [], newValues: series, seenPoints: 0, sensitivity: 95, judge: null }, settings);
    const cuts = [0, 7, 100, 101, 150, 151, 152, 260, 333, 400];
    for (const mode of ['kept', 'copied state', 'checkpointed state', 'retried batch', 'tiny cache'] as const) {
      const live = new LiveJudges(mode === 'tiny cache' ? 1 : 8);
      let judge: JudgeModelState | null = null;
      const pieces = [];
      for (let c = 1; c < cuts.length; c++) {
        const [from, to] = [cuts[c - 1]!, cuts[c]!];
        const task = (state: JudgeModelState | null) => ({
          context: series.slice(Math.max(0, from - 119), from),
          newValues: series.slice(from, to),
          seenPoints: from,
          sensitivity: 95,
          judge: state,
          series: 'org/pump',
        });
        // A state copied to and from a detection thread keeps its stamp; a checkpoint drops it.
        let given = judge;
        if (mode === 'copied state' && judge !== null) given = JSON.parse(JSON.stringify(judge)) as JudgeModelState;
        if (mode === 'checkpointed state' && judge !== null) {
          const { stamp, ...rest } = judge;
          expect(stamp).toEqual(expect.any(Number));
          given = rest;
        }
        if (mode === 'retried batch' && c === 4) {
          // The batch is judged, then fails before it is stored: the retry brings the old state.
          judgeNewPoints(task(given), settings, live);
        }
        if (mode === 'tiny cache') {
          // Another series takes the only place between two batches of this one.
          judgeNewPoints({ ...task(null), series: 'org/other', seenPoints: 0, context: [] }, settings, live);
        }
        const result = judgeNewPoints(task(given), settings, live);
        pieces.push(...result.detections);
        judge = result.judge;
      }
      expect(pieces, mode).toEqual(whole.detections);
      expect(live.size, mode).toBe(1);
      live.clear();
      expect(live.size).toBe(0);
    }
  });
});

describe('window checkpoints with a grown window (version 7)', () => {
  // A 48-point cycle: 4 periods + 1 = 193 points, beyond the 120-point window (which holds 2 cycles).
  const settings = { windowPoints: 120, memoryPoints: 2000, maxAnomalyRatio: 0.25 };
  const series = Array.from({ length: 900 }, (_, i) => 50 + 5 * Math.sin((2 * Math.PI * i) / 48) + ((i * 7919) % 13) / 13);
  series[700] = series[700]! + 30;
  const whole = judgeNewPoints({ context: [], newValues: series, seenPoints: 0, sensitivity: 95, judge: null }, settings);
  // The history kept: the largest window suggested (4 × the period found + 1), less one.
  const kept = whole.judge.historyPoints;

  it('grows the judge to the suggested window and keeps the older values it needs beside the window', () => {
    const period = whole.detections[899]!.period;
    expect(period).toBeGreaterThanOrEqual(46);
    expect(period).toBeLessThanOrEqual(50);
    // Four cycles and one point of a period found along the way (46 to 50 points).
    const grown = whole.judge.judge.windowPoints;
    expect((grown - 1) % 4).toBe(0);
    expect((grown - 1) / 4).toBeGreaterThanOrEqual(46);
    expect((grown - 1) / 4).toBeLessThanOrEqual(50);
    expect(kept).toBeGreaterThanOrEqual(grown - 1);
    expect(whole.detections[700]!.isAnomaly).toBe(true);
    const window = emptyWindow();
    let judge: JudgeModelState | null = null;
    const pieces = [];
    for (const [from, to] of [
      [0, 50],
      [50, 260],
      [260, 261],
      [261, 640],
      [640, 900],
    ] as const) {
      const result = judgeNewPoints(
        { context: judgeHistory(window), newValues: series.slice(from, to), seenPoints: from, sensitivity: 95, judge },
        settings,
      );
      pieces.push(...result.detections);
      const values = series.slice(from, to);
      appendToWindow(window, { values, timestampsMs: values.map((_, k) => from + k), zScores: values.map(() => Number.NaN) }, 119, result.historyLength);
      window.judge = result.judge;
      // Every batch resumes from the checkpoint, as a restarted worker would.
      // (Its judge resumes as the same judge: empty past queues read back as none.)
      const back = decodeWindow(encodeWindow(window), 119)!;
      expect({ ...back, judge: null }).toEqual({ ...window, judge: null });
      expect(back.judge!.judge.seen).toBe(to);
      Object.assign(window, back);
      judge = back.judge;
    }
    expect(pieces).toEqual(whole.detections);
    expect(window.values).toEqual(series.slice(900 - 119));
    expect(window.olderValues).toEqual(series.slice(900 - kept, 900 - 119));
    expect(judgeHistory(window)).toEqual(series.slice(900 - kept));
  });

  it('keeps what the judge keeps when its window grows within a batch after a long stretch without a cycle', () => {
    // 500 points without a cycle (the judge's history is its 119-point window), then the 48-point
    // cycle: the window grows within a batch, and the values of that batch before the growth
    // beyond the old history are not the judge's any more, so the window must not keep them.
    const noisy = Array.from({ length: 500 }, (_, i) => 50 + ((i * 7919) % 13) / 13);
    const values = noisy.concat(series.map((v) => v + 0.5));
    const reference = judgeNewPoints({ context: [], newValues: values, seenPoints: 0, sensitivity: 95, judge: null }, settings);
    expect(reference.judge.judge.windowPoints).toBeGreaterThan(120);
    for (const size of [29, 100, 137]) {
      const window = emptyWindow();
      let judge: JudgeModelState | null = null;
      const pieces = [];
      for (let from = 0; from < values.length; from += size) {
        const batch = values.slice(from, from + size);
        const result = judgeNewPoints({ context: judgeHistory(window), newValues: batch, seenPoints: from, sensitivity: 95, judge }, settings);
        pieces.push(...result.detections);
        appendToWindow(window, { values: batch, timestampsMs: batch.map((_, k) => from + k), zScores: batch.map(() => Number.NaN) }, 119, result.historyLength);
        window.judge = result.judge;
        const back = decodeWindow(encodeWindow(window), 119)!;
        Object.assign(window, back);
        judge = back.judge;
      }
      expect(pieces, `batches of ${size}`).toEqual(reference.detections);
      expect(judgeHistory(window).length, `batches of ${size}`).toBe(reference.historyLength);
    }
  });

  it('drops a damaged following section (the window stays) and refuses a damaged older-values section', () => {
    const window = emptyWindow();
    const values = series.slice(900 - 119);
    window.values.push(...values);
    window.timestampsMs.push(...values.map((_, k) => k));
    window.zScores.push(...values.map(() => Number.NaN));
    window.olderValues.push(...series.slice(900 - kept, 900 - 119));
    window.seenPoints = 900;
    window.lastJudgedTsMs = 118;
    window.judge = whole.judge;
    const bytes = encodeWindow(window);
    const arraysEnd = 32 + 119 * 24;
    const judgeAt = arraysEnd + 4 + (kept - 119) * 8 + 1;
    expect(decodeWindow(bytes, 119)!.judge).toEqual(whole.judge);
    const noHistory = Buffer.from(bytes);
    noHistory.writeUInt32LE(0, judgeAt + 1);
    expect(decodeWindow(noHistory, 119)!.judge).toBeNull();
    expect(decodeWindow(noHistory, 119)!.olderValues).toEqual(window.olderValues);
    const badSwitch = Buffer.from(bytes);
    badSwitch.writeDoubleLE(2.5, judgeAt + 9);
    expect(decodeWindow(badSwitch, 119)!.judge).toBeNull();
    const tooMany = Buffer.from(bytes);
    tooMany.writeUInt32LE(100_000, arraysEnd);
    expect(decodeWindow(tooMany, 119)).toBeNull();
    const notFinite = Buffer.from(bytes);
    notFinite.writeDoubleLE(Number.NaN, arraysEnd + 4);
    expect(decodeWindow(notFinite, 119)).toBeNull();
    // A smaller capacity keeps the window's newest values; the judge keeps its whole history.
    const smaller = decodeWindow(bytes, 100)!;
    expect(smaller.values).toEqual(values.slice(19));
    expect(judgeHistory(smaller)).toEqual(series.slice(900 - kept));
    expect(smaller.judge).toEqual(whole.judge);
  });
});
