import { STREAM_DEFAULTS } from '@adp/detection';
import { createModelRuntime } from '@adp/model';
import type { ResultRow } from '@adp/streaming';
import { describe, expect, it } from 'vitest';
import {
  batchEnergies,
  decodeWindow,
  emptyWindow,
  encodeWindow,
  judgeNewPoints,
  loadWorkerConfig,
  MAX_BATCH_POINTS,
  validateTelemetryBatch,
  validateTelemetryPoint,
  WorkerConfigError,
} from '../src/index.js';
import { appendToWindow, judgeHistory } from '../src/series-window.js';
import { ResultSink } from '../src/result-sink.js';
import { LiveJudges, type JudgeModelState, type JudgeSettings } from '../src/new-points-judge.js';

describe('loadWorkerConfig', () => {
  it('has documented defaults and is frozen', () => {
    const config = loadWorkerConfig({});
    expect(config).toMatchObject({
      windowPoints: 720,
      memoryPoints: 8640,
      groupId: 'adp-worker',
      telemetryTopic: 'adp.telemetry.v1',
      jobsTopic: 'adp.jobs.v1',
      deadLetterTopic: 'adp.telemetry.dead-letter.v1',
      kafkaBrokers: undefined,
      clickhouseDatabase: 'adp',
      partitionsConcurrently: 12,
      liveJudges: 1024,
      logLevel: 'info',
    });
    // The shipped streaming defaults, shared with the CLI's stream mode and the evaluation.
    expect(config).toMatchObject({
      windowPoints: STREAM_DEFAULTS.windowPoints,
      memoryPoints: STREAM_DEFAULTS.memoryPoints,
      sensitivity: STREAM_DEFAULTS.sensitivity,
      maxAnomalyRatio: STREAM_DEFAULTS.maxAnomalyRatio,
    });
    expect(loadWorkerConfig({ WORKER_LIVE_JUDGES: '0' }).liveJudges).toBe(0);
    expect(loadWorkerConfig({ WORKER_MEMORY_POINTS: '0' }).memoryPoints).toBe(0);
    expect(config.alerts).toEqual({ topic: 'adp.alerts.v1', quietPoints: 10 });
    expect(loadWorkerConfig({ WORKER_ALERTS: 'false' }).alerts).toBeNull();
    expect(loadWorkerConfig({ ALERTS_TOPIC: 'alerts-x', WORKER_EPISODE_QUIET_POINTS: '3' }).alerts).toEqual({ topic: 'alerts-x', quietPoints: 3 });
    expect(Object.isFrozen(config)).toBe(true);
    expect(loadWorkerConfig({ KAFKA_BROKERS: 'a:9092, b:9093', WORKER_WINDOW_POINTS: ' 288 ' })).toMatchObject({
      kafkaBrokers: ['a:9092', 'b:9093'],
      windowPoints: 288,
    });
  });

  it.each([
    ['WORKER_WINDOW_POINTS', '10'],
    ['WORKER_WINDOW_POINTS', '1.5'],
    ['WORKER_MAX_ANOMALY_RATIO', '0.5'],
    ['KAFKA_BROKERS', 'nohost'],
    ['CLICKHOUSE_DATABASE', 'adp; DROP TABLE x'],
    ['CLICKHOUSE_URL', 'ftp://x'],
    ['REDIS_URL', 'http://x:1'],
    ['WORKER_GROUP_ID', 'has space'],
    ['WORKER_EPISODE_QUIET_POINTS', '0'],
    ['WORKER_ALERTS', 'maybe'],
    ['LOG_LEVEL', 'loud'],
    ['WORKER_CHANGEPOINTS', 'maybe'],
    ['KAFKA_SESSION_TIMEOUT_MS', '1000'],
    ['WORKER_LIVE_JUDGES', '-1'],
    ['WORKER_LIVE_JUDGES', '100001'],
    ['WORKER_MEMORY_POINTS', '-1'],
    ['WORKER_MEMORY_POINTS', '1000001'],
    ['WORKER_MEMORY_POINTS', 'all'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadWorkerConfig({ [name]: value })).toThrow(WorkerConfigError);
    try {
      loadWorkerConfig({ [name]: value });
    } catch (error) {
      expect((error as WorkerConfigError).variable).toBe(name);
    }
  });
});

describe('validateTelemetryPoint', () => {
  const point = { organization: 'org_a', machine_id: 'm-1', timestamp: 1000, value: 1.5, channels: null, tags: {} };
  const key = Buffer.from('org_a/m-1');

  it('accepts a value or channels (each channel its own series)', () => {
    expect(validateTelemetryPoint(point, key)).toEqual({
      ok: true,
      orgId: 'org_a',
      machineId: 'm-1',
      points: [{ tsMs: 1000, readings: [{ seriesId: 'm-1', value: 1.5 }] }],
    });
    const channels = validateTelemetryPoint({ ...point, value: null, channels: [{ name: 'temp', value: 3 }] }, key);
    expect(channels).toMatchObject({ ok: true, points: [{ tsMs: 1000, readings: [{ seriesId: 'm-1:temp', value: 3 }] }] });
  });

  it.each([
    [{ machine_id: '' }, 'INVALID_MACHINE_ID'],
    [{ machine_id: 'a/b' }, 'INVALID_MACHINE_ID'],
    // ':' separates a machine from its channel: machine 'a:b' would be machine 'a''s channel 'b'.
    [{ machine_id: 'a:b' }, 'INVALID_MACHINE_ID'],
    [{ organization: 'x y' }, 'INVALID_ORGANIZATION'],
    [{ timestamp: -1 }, 'INVALID_TIMESTAMP'],
    [{ value: Number.NaN }, 'INVALID_VALUE'],
    [{ value: Number.POSITIVE_INFINITY }, 'INVALID_VALUE'],
    [{ value: 1e101 }, 'INVALID_VALUE'],
    [{ value: null }, 'NO_READING'],
    [{ channels: [{ name: 'a', value: 1 }] }, 'VALUE_AND_CHANNELS'],
    [{ value: null, channels: [] }, 'INVALID_CHANNEL'],
    [{ value: null, channels: [{ name: '1bad', value: 1 }] }, 'INVALID_CHANNEL'],
    [{ value: null, channels: [{ name: 'a', value: 1 }, { name: 'a', value: 2 }] }, 'INVALID_CHANNEL'],
    [{ value: null, channels: [{ name: 'a', value: Number.NaN }] }, 'INVALID_VALUE'],
  ])('refuses %j as %s', (change, reason) => {
    const changed = { ...point, ...change };
    const changedKey = Buffer.from(`${changed.organization}/${changed.machine_id}`);
    expect(validateTelemetryPoint(changed, changedKey)).toMatchObject({ ok: false, reason });
  });

  it('refuses a point whose key is not <organization>/<machine_id>', () => {
    expect(validateTelemetryPoint(point, null)).toMatchObject({ ok: false, reason: 'KEY_MISMATCH' });
    expect(validateTelemetryPoint(point, Buffer.from('org_a/m-2'))).toMatchObject({ ok: false, reason: 'KEY_MISMATCH' });
  });
});

describe('validateTelemetryBatch', () => {
  const reading = (timestamp: number, value: number) => ({ timestamp, value, channels: null });
  const batch = { organization: 'org_a', machine_id: 'm-1', points: [reading(1000, 1.5), reading(2000, 2.5), reading(3000, -1)], tags: {} };
  const key = Buffer.from('org_a/m-1');

  it('accepts points in ascending order, values or channels, each checked as a single point', () => {
    expect(validateTelemetryBatch(batch, key)).toEqual({
      ok: true,
      orgId: 'org_a',
      machineId: 'm-1',
      points: [
        { tsMs: 1000, readings: [{ seriesId: 'm-1', value: 1.5 }] },
        { tsMs: 2000, readings: [{ seriesId: 'm-1', value: 2.5 }] },
        { tsMs: 3000, readings: [{ seriesId: 'm-1', value: -1 }] },
      ],
    });
    const channels = {
      ...batch,
      points: [
        { timestamp: 5, value: null, channels: [{ name: 'a', value: 1 }, { name: 'b', value: 2 }] },
        { timestamp: 6, value: null, channels: [{ name: 'a', value: 3 }] },
      ],
    };
    expect(validateTelemetryBatch(channels, key)).toMatchObject({
      ok: true,
      points: [
        { tsMs: 5, readings: [{ seriesId: 'm-1:a', value: 1 }, { seriesId: 'm-1:b', value: 2 }] },
        { tsMs: 6, readings: [{ seriesId: 'm-1:a', value: 3 }] },
      ],
    });
    const full = { ...batch, points: Array.from({ length: MAX_BATCH_POINTS }, (_, i) => reading(i, i)) };
    expect(validateTelemetryBatch(full, key)).toMatchObject({ ok: true });
  });

  it.each([
    [[], 'INVALID_BATCH', 'a batch holds 1..10000 points; got 0'],
    [Array.from({ length: MAX_BATCH_POINTS + 1 }, (_, i) => reading(i, i)), 'INVALID_BATCH', 'a batch holds 1..10000 points; got 10001'],
    [[reading(1000, 1), reading(1000, 2)], 'POINTS_OUT_OF_ORDER', 'points[1].timestamp 1000 is not after points[0].timestamp 1000'],
    [[reading(2000, 1), reading(3000, 2), reading(2500, 3)], 'POINTS_OUT_OF_ORDER', 'points[2].timestamp 2500 is not after points[1].timestamp 3000'],
    [[reading(1000, 1), reading(2000, Number.NaN)], 'INVALID_VALUE', 'points[1].value NaN is not a finite number'],
    [[reading(1000, 1), reading(-5, 1)], 'INVALID_TIMESTAMP', 'points[1].timestamp -5 is not epoch milliseconds'],
    [[reading(1000, 1), { timestamp: 2000, value: null, channels: null }], 'NO_READING', 'neither points[1].value nor points[1].channels is set'],
    [[{ timestamp: 2000, value: 1, channels: [{ name: 'a', value: 1 }] }], 'VALUE_AND_CHANNELS', 'points[0].value and points[0].channels are both set'],
    [[{ timestamp: 2000, value: null, channels: [{ name: 'a', value: 1 }, { name: 'a', value: 1 }] }], 'INVALID_CHANNEL', 'points[0].channels: channel a appears twice'],
  ])('refuses the whole batch: %#', (points, reason, detail) => {
    const result = validateTelemetryBatch({ ...batch, points }, key);
    expect(result).toMatchObject({ ok: false, reason });
    expect((result as { detail: string }).detail).toContain(detail);
  });

  it('refuses a batch with a bad identity or key as a point would be refused', () => {
    expect(validateTelemetryBatch(batch, Buffer.from('org_a/m-2'))).toMatchObject({ ok: false, reason: 'KEY_MISMATCH' });
    expect(validateTelemetryBatch({ ...batch, machine_id: 'a b' }, Buffer.from('org_a/a b'))).toMatchObject({
      ok: false,
      reason: 'INVALID_MACHINE_ID',
    });
    expect(validateTelemetryBatch({ ...batch, organization: '' }, Buffer.from('/m-1'))).toMatchObject({
      ok: false,
      reason: 'INVALID_ORGANIZATION',
    });
  });
});

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

/**
 * A version-7 checkpoint of a judge that never grew its window (no older values, its history the
 * window's) as version 6 wrote it: magic ADW6, without the older values and the following judge's
 * own fields, the current window's judge section as it was.
 */
function asVersion6(v7: Buffer): Buffer {
  expect(v7.subarray(0, 4).toString('ascii')).toBe('ADW7');
  const arraysEnd = 32 + v7.readUInt32LE(4) * 24;
  expect(v7.readUInt32LE(arraysEnd)).toBe(0);
  const judgeAt = arraysEnd + 4;
  if (v7.readUInt8(judgeAt) === 0) return Buffer.concat([Buffer.from('ADW6', 'ascii'), v7.subarray(4, arraysEnd), Buffer.from([0])]);
  const lows = v7.readUInt32LE(judgeAt + 17);
  const highs = v7.readUInt32LE(judgeAt + 21 + lows * 16);
  const inner = judgeAt + 25 + (lows + highs) * 16;
  return Buffer.concat([Buffer.from('ADW6', 'ascii'), v7.subarray(4, arraysEnd), v7.subarray(inner)]);
}

/** A version-7 checkpoint as version 5 wrote it: magic ADW5, without the learned excursion's point. */
function asVersion5(v7: Buffer): Buffer {
  const v6 = asVersion6(v7);
  return Buffer.concat([Buffer.from('ADW5', 'ascii'), v6.subarray(4, 24), v6.subarray(32)]);
}

describe('window checkpoints with the learned excursion (version 6)', () => {
  it("round-trip where the last point beyond the learned band was, and read version-5 checkpoints as having none", () => {
    const window = emptyWindow();
    window.values.push(1, 2, 3);
    window.timestampsMs.push(10, 20, 30);
    window.zScores.push(0.1, 0.2, 5);
    window.lastJudgedTsMs = 30;
    window.seenPoints = 300;
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
    expect(bytes.subarray(0, 4).toString('ascii')).toBe('ADW7');
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
    const judgeAt = arraysEnd + 4 + (kept - 119) * 8;
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

describe('ResultSink (one write for concurrent batches)', () => {
  const row = (tsMs: number) => ({ tsMs }) as ResultRow;

  it('writes the batches handed over together in one insert, rows before checkpoints', async () => {
    const calls: string[] = [];
    const coalescer = new ResultSink(
      { insert: async (rows) => void calls.push(`insert ${rows.map((r) => r.tsMs).join(',')}`) },
      { save: async (entries) => void calls.push(`save ${[...entries.keys()].join(',')}`) },
      { lingerMs: 5, maxRows: 1000 },
    );
    const [a, b] = await Promise.all([
      coalescer.store([row(1), row(2)], new Map([['a', Buffer.from('1')]])),
      coalescer.store([row(3)], new Map([['b', Buffer.from('2')]])),
    ]);
    expect(calls).toEqual(['insert 1,2,3', 'save a,b']);
    expect(a.batches).toBe(2);
    expect(b.batches).toBe(2);
  });

  it('rejects every batch of a round whose insert failed, and saves no checkpoint', async () => {
    let saved = 0;
    const coalescer = new ResultSink(
      { insert: async () => Promise.reject(new Error('down')) },
      { save: async () => void saved++ },
      { lingerMs: 0, maxRows: 1000 },
    );
    const results = await Promise.allSettled([coalescer.store([row(1)], new Map()), coalescer.store([row(2)], new Map())]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(saved).toBe(0);
  });
});

describe('batchEnergies', () => {
  it('asks the model nothing while every new point is inside its series\' warm-up', async () => {
    const calls: number[] = [];
    const model = {
      modelVersion: 'unused',
      energies: (values: ArrayLike<number>) => {
        calls.push(values.length);
        return Promise.resolve({ energies: new Float64Array(values.length).fill(7) });
      },
    };
    const request = (historyIndex: number, count: number) => ({
      context: Array.from({ length: historyIndex }, (_, i) => i),
      newValues: Array.from({ length: count }, (_, i) => i),
      weights: null,
      normalisation: { center: 0, scale: 1 },
      historyIndex,
    });
    const energies = await batchEnergies(model, [request(0, 10), request(20, 12)]);
    expect(calls).toEqual([]);
    expect(energies.map((e) => Array.from(e))).toEqual([new Array(10).fill(0), new Array(12).fill(0)]);
    // One point past the warm-up: the model is asked, and only that point takes its answer.
    const next = await batchEnergies(model, [request(20, 13)]);
    expect(calls).toHaveLength(1);
    expect(Array.from(next[0]!)).toEqual([...new Array(12).fill(0), 7]);
  });

  it('gives the energies the model gives each whole series, several machines in one model call', async () => {
    const runtime = await createModelRuntime();
    try {
      const series = [0, 1, 2].map((m) => Array.from({ length: 200 }, (_, i) => 10 * m + Math.sin(i / (4 + m)) + ((i * 31) % 7) / 10));
      const normalisations = series.map((values, m) => ({ center: 10 * m, scale: 0.8 + m / 10 }));
      const calls: number[] = [];
      const asked: number[][] = [];
      const model = {
        modelVersion: runtime.modelVersion,
        energies: (values: ArrayLike<number>, options?: Parameters<typeof runtime.energies>[1]) => {
          calls.push(values.length);
          asked.push(Array.from(options?.points ?? []));
          return runtime.energies(values, options);
        },
      };
      // Machine 0 new from its 150th point, machine 1 from its 20th (inside the warm-up), machine 2 from its 70th.
      const cuts = [150, 20, 70];
      const energies = await batchEnergies(
        model,
        series.map((values, m) => ({
          context: values.slice(0, cuts[m]),
          newValues: values.slice(cuts[m]),
          weights: null,
          normalisation: normalisations[m]!,
          historyIndex: cuts[m]!,
        })),
      );
      expect(calls).toHaveLength(1);
      // Each segment is 64 context values and the new ones; only the new points past their
      // series' warm-up (32) are asked for: 50 + 168 + 130, at their places in the segments.
      expect(calls[0]).toBe(3 * 64 + 50 + 180 + 130);
      const segmentStarts = [64, 64 + 50 + 64, 64 + 50 + 64 + 180 + 64];
      expect(asked[0]).toEqual([
        ...Array.from({ length: 50 }, (_, j) => segmentStarts[0]! + j),
        ...Array.from({ length: 168 }, (_, j) => segmentStarts[1]! + 12 + j),
        ...Array.from({ length: 130 }, (_, j) => segmentStarts[2]! + j),
      ]);
      for (const [m, values] of series.entries()) {
        const whole = await runtime.energies(values, { normalisation: normalisations[m]! });
        const expected = Array.from(whole.energies).slice(cuts[m]);
        const got = Array.from(energies[m]!);
        expect(got).toHaveLength(expected.length);
        got.forEach((energy, i) => expect(energy).toBeCloseTo(expected[i]!, 4));
      }
    } finally {
      await runtime.close();
    }
  });
});
