import { STREAM_DEFAULTS } from '@adp/detection';
import { createModelRuntime } from '@adp/model';
import type { ResultRow } from '@adp/streaming';
import { describe, expect, it } from 'vitest';
import {
  batchEnergies,
  loadWorkerConfig,
  MAX_BATCH_POINTS,
  validateTelemetryBatch,
  validateTelemetryPoint,
  WorkerConfigError,
} from '../src/index.js';
import { ResultSink } from '../src/result-sink.js';

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
