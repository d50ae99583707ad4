import { encodeMachineModel, fitMachineModel, judgeMachine } from '@adp/machine';
import { BASELINE_CHANGED_CHANNEL, type ResultRow } from '@adp/streaming';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeWindow, startWorker, type BatchSummary, type RunningWorker, type WorkerDeps, type WorkerModel } from '../src/index.js';
import {
  allRows,
  baselineStore,
  batchMessage,
  codecs,
  embeddedPlatform,
  readDeadLetters,
  fakeModel,
  ORG,
  signal,
  statsBaseline,
  telemetryMessage,
  testConfig,
  type Platform,
} from './helpers.js';

// Further apart than the refractory stretch (REFRACTORY_POINTS, 150): a second spike within it is
// the same event.
const SPIKES = new Set([140, 300, 460]);
const POINTS = 520;
const T0 = 1_700_000_000_000;
const STEP = 60_000;

function points(machines: readonly string[], from: number, to: number) {
  const out = [];
  for (let i = from; i < to; i++) {
    for (const [m, machine] of machines.entries()) {
      out.push(telemetryMessage({ machine_id: machine, timestamp: T0 + i * STEP, value: signal(m, i, SPIKES) }));
    }
  }
  return out;
}

const running: RunningWorker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.stop()));
});

async function start(platform: Platform, overrides: Partial<WorkerDeps> = {}): Promise<RunningWorker> {
  const worker = await startWorker({
    ...platform,
    store: baselineStore(new Map()),
    loadModel: async () => fakeModel(),
    config: testConfig(),
    ...overrides,
  });
  running.push(worker);
  return worker;
}

/** Detection fields only: what must not depend on how the stream was cut into batches or workers. */
function judgement(row: ResultRow) {
  const { writtenAtMs: _w, ...rest } = row;
  return rest;
}

describe('startWorker on the in-process bus', () => {
  it('judges every point once, flags the injected spikes, and adds energies and regimes where a baseline exists', async () => {
    const platform = await embeddedPlatform();
    const machines = ['m-0', 'm-1', 'm-base'];
    const store = baselineStore(new Map([['m-base', statsBaseline('m-base')]]));
    const modelCalls: { series: number; points: number }[] = [];
    const worker = await start(platform, { store, loadModel: async () => fakeModel(modelCalls) });
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points(machines, 0, POINTS));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(POINTS * machines.length);

    for (const machine of machines) {
      const rows = await allRows(platform.results, machine);
      expect(rows).toHaveLength(POINTS);
      expect(rows.map((row) => row.tsMs)).toEqual(Array.from({ length: POINTS }, (_, i) => T0 + i * STEP));
      const flagged = rows.flatMap((row, i) => (row.isAnomaly ? [i] : []));
      for (const spike of SPIKES) expect(flagged, machine).toContain(spike);
      expect(flagged.length).toBeLessThan(12);
    }
    for (const row of await allRows(platform.results, 'm-0')) {
      expect(row).toMatchObject({ energy: null, zScore: null, regime: 'UNKNOWN', modelVersion: expect.stringMatching(/^engine-\d/) });
    }
    const base = await allRows(platform.results, 'm-base');
    // energy = ((v - 50) / 5)^2 against mean 1, std 1: a +60 spike is far beyond shockZ.
    for (const spike of SPIKES) {
      expect(base[spike]!.regime).toBe('SHOCK');
      expect(base[spike]!.zScore).toBeGreaterThan(100);
    }
    expect(base[100]!.regime).toBe('HEALTHY');
    expect(base[10]!.energy).toBe(0); // the model's warm-up
    expect(base[100]!.modelVersion).toMatch(/^engine-.*\+fake-1$/);
    expect(modelCalls.length).toBeGreaterThan(0);
    expect(worker.counters()).toMatchObject({ deadLetters: 0, replays: 0, failedBatches: 0 });
    // Baselines are read once per series and cached.
    expect(store.reads).toBe(machines.length);
  });

  it("reports where each batch's time went: its own phases within its wall time, the rows phase measured", async () => {
    const platform = await embeddedPlatform();
    const summaries: BatchSummary[] = [];
    const worker = await start(platform, { onBatch: (summary) => summaries.push(summary) });
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points(['m-0', 'm-1'], 0, 200));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(400);
    expect(summaries.length).toBeGreaterThan(0);
    for (const { rows, timings } of summaries) {
      for (const ms of Object.values(timings)) expect(Number.isFinite(ms) && ms >= 0).toBe(true);
      // decode, detect, energy, regimes and rows are this batch's own work in this thread: within its wall time.
      const own = timings.decodeMs + timings.detectMs + timings.energyMs + timings.regimesMs + timings.rowsMs;
      expect(own).toBeLessThanOrEqual(timings.totalMs + 1e-6);
      if (rows > 0) expect(timings.rowsMs).toBeGreaterThan(0);
    }
  });

  it("takes a spike's echo out of the regimes: SHOCK at the spike, HEALTHY after it, also across batches", async () => {
    // A model whose energy at a point is the largest (scaled value)^2 in the point's 64-point
    // window: one spike raises the next 63 points' energies, as the learned model's window does.
    const echoing: WorkerModel = {
      modelVersion: 'echo-1',
      async energies(values, options) {
        const center = options?.normalisation?.center ?? 0;
        const scale = options?.normalisation?.scale ?? 1;
        const out = new Float64Array(values.length);
        for (let i = 32; i < values.length; i++) {
          for (let k = Math.max(0, i - 63); k <= i; k++) out[i] = Math.max(out[i]!, (((values[k] ?? 0) - center) / scale) ** 2);
        }
        return { energies: out };
      },
    };
    const platform = await embeddedPlatform();
    const store = baselineStore(new Map([['m-echo', statsBaseline('m-echo')]]));
    const worker = await start(platform, { store, loadModel: async () => echoing });
    const producer = await platform.bus.producer();
    const spike = 150;
    const send = (from: number, to: number) => {
      const out = [];
      for (let i = from; i < to; i++) {
        out.push(telemetryMessage({ machine_id: 'm-echo', timestamp: T0 + i * STEP, value: signal(0, i, new Set([spike])) }));
      }
      return producer.send('telemetry', out);
    };
    // The spike is the last point of one batch: its echo is taken out of the next batches' points.
    await send(0, spike + 1);
    await expect.poll(() => worker.counters().rows, { timeout: 20_000 }).toBe(spike + 1);
    await send(spike + 1, 200);
    await expect.poll(() => worker.counters().rows, { timeout: 20_000 }).toBe(200);
    await send(200, POINTS);
    await expect.poll(() => worker.counters().rows, { timeout: 20_000 }).toBe(POINTS);

    const rows = await allRows(platform.results, 'm-echo');
    expect(rows[spike]!.regime).toBe('SHOCK');
    // The stored z-scores are the series' own: the echo is there, the regimes do not count it.
    expect(rows[spike + 30]!.zScore).toBeGreaterThan(100);
    const after = rows.slice(spike + 1).map((row) => row.regime);
    expect(after.every((regime) => regime === 'HEALTHY'), after.join(',')).toBe(true);
  });

  it('dead-letters poison messages with reason, partition and offset, and goes on with the partition', async () => {
    const platform = await embeddedPlatform();
    const worker = await start(platform);
    const dlq = await readDeadLetters(platform);
    const dead = dlq.letters;
    const producer = await platform.bus.producer();
    const key = `${ORG}/m-0`;
    const poison = [
      { key, value: Buffer.from('not avro at all') },
      telemetryMessage({ machine_id: 'bad id!', timestamp: T0 }, key),
      telemetryMessage({ machine_id: 'm-0', timestamp: T0 }),
      telemetryMessage({ machine_id: 'm-0', timestamp: T0, value: 1, channels: [{ name: 'a', value: 1 }] }),
      telemetryMessage({ machine_id: 'm-0', timestamp: T0, value: 1 }, `${ORG}/other`),
      telemetryMessage({ machine_id: 'm-0', timestamp: -5, value: 1 }),
      // A TelemetryBatch whose points array claims 2^50 readings in a few bytes: refused before
      // decoding (avsc alone would build readings until the process ran out of memory).
      {
        key,
        value: Buffer.concat([
          Buffer.from([0xc3, 0x01]),
          codecs.telemetryBatch.fingerprint,
          Buffer.from([2 * ORG.length, ...Buffer.from(ORG), 6, ...Buffer.from('m-0'), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x04, 2, 0]),
        ]),
      },
    ];
    await producer.send('telemetry', points(['m-0'], 0, 20));
    await producer.send('telemetry', poison);
    await producer.send('telemetry', points(['m-0'], 20, 40));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(40);
    await expect.poll(() => dead.length).toBe(poison.length);
    expect(dead.map((d) => d.reason)).toEqual([
      'MESSAGE_NOT_SINGLE_OBJECT',
      'INVALID_MACHINE_ID',
      'NO_READING',
      'VALUE_AND_CHANNELS',
      'KEY_MISMATCH',
      'INVALID_TIMESTAMP',
      'MESSAGE_BODY_CORRUPT',
    ]);
    expect(dead.map((d) => d.source_offset)).toEqual([20, 21, 22, 23, 24, 25, 26]);
    expect(new Set(dead.map((d) => d.source_partition)).size).toBe(1);
    expect(dead[0]!.original_value.toString()).toBe('not avro at all');
    expect((await allRows(platform.results, 'm-0')).map((r) => r.tsMs)).toHaveLength(40);
    await dlq.close();
  });

  it('resumes from checkpoints after a restart with the whole window, replays skipped', async () => {
    const machines = ['m-0', 'm-1'];
    const reference = await embeddedPlatform();
    const one = await start(reference);
    await (await reference.bus.producer()).send('telemetry', points(machines, 0, POINTS));
    await expect.poll(() => one.counters().rows, { timeout: 120_000 }).toBe(POINTS * 2);

    const platform = await embeddedPlatform();
    const producer = await platform.bus.producer();
    const first = await start(platform);
    // 205: not a multiple of the period-recheck stretch (12 for a 120-point window) nor of the refit interval.
    await producer.send('telemetry', points(machines, 0, 205));
    await expect.poll(() => first.counters().rows, { timeout: 120_000 }).toBe(410);
    await first.stop();
    // The second worker sees a replay of 55 points (a producer retry), then the rest.
    await producer.send('telemetry', points(machines, 150, POINTS));
    const second = await start(platform);
    await expect.poll(() => second.counters().rows, { timeout: 120_000 }).toBe((POINTS - 205) * 2);
    expect(second.counters().replays).toBe(110);
    for (const machine of machines) {
      const expected = (await allRows(reference.results, machine)).map(judgement);
      const got = (await allRows(platform.results, machine)).map(judgement);
      expect(got.map((row) => [row.tsMs, row.value])).toEqual(expected.map((row) => [row.tsMs, row.value]));
      // The resumed worker had the whole window and the judge's state from the checkpoint: its
      // judgements are identical to the uninterrupted run's, whatever the batches were.
      expect(got).toEqual(expected);
      for (const spike of SPIKES) expect(got[spike]!.isAnomaly).toBe(true);
    }
  });

  it('resumes a judge whose window is growing to 4 cycles + 1 across a restart, exactly as an uninterrupted run', async () => {
    // A 50-point cycle: the 120-point window finds it and asks for 201 points, which the worker
    // judges from once it holds them (the values beyond its window kept beside it).
    const cycle = (from: number, to: number) => {
      const out = [];
      for (let i = from; i < to; i++) {
        const value = 50 + 10 * Math.sin((2 * Math.PI * i) / 50) + ((i * 7919) % 13) / 26 + (i === 420 ? 25 : 0);
        out.push(telemetryMessage({ machine_id: 'm-cycle', timestamp: T0 + i * STEP, value }));
      }
      return out;
    };
    const key = `workers/${ORG}/m-cycle`;
    const reference = await embeddedPlatform();
    const one = await start(reference);
    await (await reference.bus.producer()).send('telemetry', cycle(0, 600));
    await expect.poll(() => one.counters().rows, { timeout: 120_000 }).toBe(600);
    const whole = decodeWindow((await reference.checkpoints.load([key])).get(key)!, 119)!;
    expect(whole.judge!.judge.windowPoints).toBeGreaterThan(120);
    expect(whole.olderValues).toHaveLength(whole.judge!.historyPoints - 119);

    const platform = await embeddedPlatform();
    const producer = await platform.bus.producer();
    const first = await start(platform);
    await producer.send('telemetry', cycle(0, 170));
    await expect.poll(() => first.counters().rows, { timeout: 120_000 }).toBe(170);
    await first.stop();
    // At the restart the judge wants the larger window and is still gathering its history.
    const paused = decodeWindow((await platform.checkpoints.load([key])).get(key)!, 119)!;
    expect(paused.judge!.targetWindow).toBeGreaterThan(170);
    expect(paused.judge!.judge.windowPoints).toBe(120);
    expect(paused.olderValues).toHaveLength(170 - 119);
    await producer.send('telemetry', cycle(170, 600));
    const second = await start(platform);
    await expect.poll(() => second.counters().rows, { timeout: 120_000 }).toBe(430);
    const got = (await allRows(platform.results, 'm-cycle')).map(judgement);
    expect(got).toEqual((await allRows(reference.results, 'm-cycle')).map(judgement));
    expect(got[420]!.isAnomaly).toBe(true);
  });

  it('judges exactly the same in detection threads as in its own thread, over many batches (live judges in both)', async () => {
    const machines = ['m-0', 'm-1', 'm-2'];
    const inline = await embeddedPlatform();
    const one = await start(inline);
    await (await inline.bus.producer()).send('telemetry', points(machines, 0, 200));
    const threaded = await embeddedPlatform();
    const pooled = await start(threaded, { config: testConfig({ detectionThreads: 2 }) });
    // In four parts, each stored before the next is sent: every series is judged in several
    // batches, continued by the live judge of the thread it went to before.
    const producer = await threaded.bus.producer();
    for (const [from, to] of [
      [0, 80],
      [80, 81],
      [81, 150],
      [150, 200],
    ] as const) {
      await producer.send('telemetry', points(machines, from, to));
      await expect.poll(() => pooled.counters().rows, { timeout: 120_000 }).toBe(to * machines.length);
    }
    await expect.poll(() => one.counters().rows, { timeout: 120_000 }).toBe(600);
    for (const machine of machines) {
      expect((await allRows(threaded.results, machine)).map(judgement)).toEqual((await allRows(inline.results, machine)).map(judgement));
    }
  });

  it('retries a batch whose insert failed without judging anything twice', async () => {
    const platform = await embeddedPlatform();
    let failures = 0;
    const results = {
      ...platform.results,
      insert: async (rows: readonly ResultRow[]) => {
        if (failures < 3 && rows.some((row) => row.tsMs >= T0 + 100 * STEP)) {
          failures++;
          throw new Error('ClickHouse is down');
        }
        return platform.results.insert(rows);
      },
    };
    const reference = await embeddedPlatform();
    const one = await start(reference);
    await (await reference.bus.producer()).send('telemetry', points(['m-0'], 0, 200));
    const worker = await start({ ...platform, results });
    await (await platform.bus.producer()).send('telemetry', points(['m-0'], 0, 200));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(200);
    await expect.poll(() => one.counters().rows, { timeout: 120_000 }).toBe(200);
    expect(worker.counters().failedBatches).toBe(3);
    expect((await allRows(platform.results, 'm-0')).map(judgement)).toEqual((await allRows(reference.results, 'm-0')).map(judgement));
  });

  it('drops a cached baseline when a change is announced, and uses the new one from the next batch', async () => {
    const platform = await embeddedPlatform();
    const baselines = new Map<string, ReturnType<typeof statsBaseline>>();
    const store = baselineStore(baselines);
    const worker = await start(platform, { store });
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points(['m-0'], 0, 100));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(100);
    expect((await allRows(platform.results, 'm-0')).every((row) => row.regime === 'UNKNOWN')).toBe(true);

    baselines.set('m-0', statsBaseline('m-0'));
    await producer.send('telemetry', points(['m-0'], 100, 120));
    await expect.poll(() => worker.counters().rows).toBe(120);
    // Cached "no baseline" still in force: nobody said it changed.
    expect((await allRows(platform.results, 'm-0')).slice(100).every((row) => row.regime === 'UNKNOWN')).toBe(true);

    await platform.notifier.publish(BASELINE_CHANGED_CHANNEL, JSON.stringify({ orgId: ORG, machineId: 'm-0' }));
    await expect.poll(() => worker.counters().baselineNotifications).toBe(1);
    await producer.send('telemetry', points(['m-0'], 120, 140));
    await expect.poll(() => worker.counters().rows).toBe(140);
    const after = (await allRows(platform.results, 'm-0')).slice(120);
    expect(after.every((row) => row.regime !== 'UNKNOWN' && row.energy !== null)).toBe(true);
  });

  it("forgets a deleted machine's windows and checkpoints on a deletion notice, and only that machine's", async () => {
    const platform = await embeddedPlatform();
    const worker = await start(platform);
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points(['m-0', 'm-01'], 0, 100));
    await expect.poll(() => worker.counters().rows, { timeout: 10_000 }).toBe(200);
    const keys = [`workers/${ORG}/m-0`, `workers/${ORG}/m-01`];
    expect([...(await platform.checkpoints.load(keys)).keys()]).toEqual(keys);

    await platform.notifier.publish(BASELINE_CHANGED_CHANNEL, JSON.stringify({ orgId: ORG, machineId: 'm-0', deleted: true }));
    await expect.poll(() => worker.counters().machineDeletions).toBe(1);
    await expect.poll(async () => [...(await platform.checkpoints.load(keys)).keys()]).toEqual([`workers/${ORG}/m-01`]);

    // The same points again: judged afresh for m-0, replays for m-01 (whose window stayed).
    await producer.send('telemetry', points(['m-0', 'm-01'], 0, 50));
    await expect.poll(() => worker.counters().rows, { timeout: 10_000 }).toBe(250);
    expect(worker.counters().replays).toBe(50);
  });

  it('does not put back the window of a machine deleted while its batch was being stored', async () => {
    const platform = await embeddedPlatform();
    let gate: Promise<void> | null = null;
    let open!: () => void;
    let saving!: () => void;
    const saveStarted = new Promise<void>((resolve) => (saving = resolve));
    const checkpoints = {
      ...platform.checkpoints,
      async save(entries: ReadonlyMap<string, Buffer>): Promise<void> {
        await platform.checkpoints.save(entries);
        if (gate) {
          saving();
          await gate;
        }
      },
    };
    const worker = await start(platform, { checkpoints });
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points(['m-0'], 0, 50));
    await expect.poll(() => worker.counters().rows, { timeout: 10_000 }).toBe(50);

    const batchesBefore = worker.counters().batches;
    gate = new Promise<void>((resolve) => (open = resolve));
    await producer.send('telemetry', points(['m-0'], 50, 60));
    await saveStarted;
    await platform.notifier.publish(BASELINE_CHANGED_CHANNEL, JSON.stringify({ orgId: ORG, machineId: 'm-0', deleted: true }));
    await expect.poll(() => worker.counters().machineDeletions).toBe(1);
    gate = null;
    open();
    await expect.poll(() => worker.counters().batches).toBe(batchesBefore + 1);
    await expect.poll(async () => (await platform.checkpoints.load([`workers/${ORG}/m-0`])).size).toBe(0);

    // Judged afresh: nothing of the deleted machine's window is left.
    await producer.send('telemetry', points(['m-0'], 0, 10));
    await expect.poll(() => worker.counters().rows, { timeout: 10_000 }).toBe(70);
    expect(worker.counters().replays).toBe(0);
  });

  it('judges the points of batch messages exactly as the same points sent one per message', async () => {
    const machines = ['m-0', 'm-1'];
    const reference = await embeddedPlatform();
    const one = await start(reference);
    await (await reference.bus.producer()).send('telemetry', points(machines, 0, POINTS));

    const platform = await embeddedPlatform();
    const worker = await start(platform);
    const reading = (m: number, i: number) => ({ timestamp: T0 + i * STEP, value: signal(m, i, SPIKES) });
    const run = (m: number, from: number, to: number) => Array.from({ length: to - from }, (_, k) => reading(m, from + k));
    const producer = await platform.bus.producer();
    // Batches of 1, 7, 92 and the rest, single points in between, and a batch that repeats 30
    // points already sent (a producer's retry): those are replays, judged once.
    for (const [m, machine] of machines.entries()) {
      await producer.send('telemetry', [
        batchMessage(machine, run(m, 0, 1)),
        batchMessage(machine, run(m, 1, 8)),
        ...Array.from({ length: 12 }, (_, k) => telemetryMessage({ machine_id: machine, timestamp: T0 + (8 + k) * STEP, value: signal(m, 8 + k, SPIKES) })),
        batchMessage(machine, run(m, 20, 112)),
        batchMessage(machine, run(m, 82, POINTS)),
      ]);
    }
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(POINTS * machines.length);
    await expect.poll(() => one.counters().rows, { timeout: 120_000 }).toBe(POINTS * machines.length);
    expect(worker.counters()).toMatchObject({ messages: 32, replays: 60, deadLetters: 0 });
    for (const machine of machines) {
      const got = (await allRows(platform.results, machine)).map(judgement);
      expect(got).toEqual((await allRows(reference.results, machine)).map(judgement));
      for (const spike of SPIKES) expect(got[spike]!.isAnomaly).toBe(true);
    }
  });

  it('dead-letters a bad batch whole, judges none of its points, and goes on with the partition', async () => {
    const platform = await embeddedPlatform();
    const worker = await start(platform);
    const dlq = await readDeadLetters(platform);
    const dead = dlq.letters;
    const at = (i: number, value = 50) => ({ timestamp: T0 + i * STEP, value });
    const poison = [
      batchMessage('m-0', [at(20), at(22), at(21)]),
      batchMessage('m-0', []),
      batchMessage('m-0', [at(20), at(21, Number.NaN)]),
      // Keyed as m-0's (same partition), but the body names m-1.
      batchMessage('m-1', [at(20), at(21)], `${ORG}/m-0`),
    ];
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points(['m-0'], 0, 20));
    await producer.send('telemetry', poison);
    await producer.send('telemetry', points(['m-0'], 20, 40));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(40);
    await expect.poll(() => dead.length).toBe(poison.length);
    expect(dead.map((d) => d.reason)).toEqual(['POINTS_OUT_OF_ORDER', 'INVALID_BATCH', 'INVALID_VALUE', 'KEY_MISMATCH']);
    expect(dead[0]!.detail).toBe(
      `points[2].timestamp ${T0 + 21 * STEP} is not after points[1].timestamp ${T0 + 22 * STEP}; a batch's timestamps must increase`,
    );
    expect(dead[2]!.detail).toBe('points[1].value NaN is not a finite number with |v| <= 1e100');
    expect(dead.map((d) => d.source_offset)).toEqual([20, 21, 22, 23]);
    // The whole message is kept: it decodes back to every point it carried.
    expect(codecs.telemetryBatch.decode(dead[0]!.original_value).points.map((p) => p.timestamp)).toEqual([20, 22, 21].map((i) => T0 + i * STEP));
    // None of the bad batches' points was stored: rows 20..39 are the good messages' values.
    const rows = await allRows(platform.results, 'm-0');
    expect(rows.map((row) => row.tsMs)).toEqual(Array.from({ length: 40 }, (_, i) => T0 + i * STEP));
    expect(rows.slice(20).map((row) => row.value)).toEqual(Array.from({ length: 20 }, (_, k) => signal(0, 20 + k, SPIKES)));
    await dlq.close();
  });

  it('judges each channel of a multi-channel point as its own series', async () => {
    const platform = await embeddedPlatform();
    const worker = await start(platform);
    const producer = await platform.bus.producer();
    await producer.send(
      'telemetry',
      Array.from({ length: 30 }, (_, i) =>
        telemetryMessage({
          machine_id: 'pump',
          timestamp: T0 + i * STEP,
          channels: [
            { name: 'temperature', value: 20 + i },
            { name: 'pressure', value: 3 },
          ],
        }),
      ),
    );
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(60);
    expect(await allRows(platform.results, 'pump:temperature')).toHaveLength(30);
    expect((await allRows(platform.results, 'pump:pressure'))[29]!.value).toBe(3);
  });

  it("judges a multi-channel machine with a joint model as a request to POST /v1/detect would, across a restart", async () => {
    // Three channels: flow and current follow one load, vibration on its own. Healthy rows make the
    // baseline; the stream then breaks the flow-current relation for 120 points.
    const readings = (from: number, to: number, fault: readonly [number, number] | null) => {
      const out: { flow: number; current: number; vibration: number }[] = [];
      for (let i = from; i < to; i++) {
        const load = Math.sin(i / 7) + 0.1 * Math.sin(i * 12.9898);
        const shifted = fault !== null && i >= fault[0] && i < fault[1] ? 1.5 : 0;
        out.push({
          flow: 30 + 2 * load + 0.05 * Math.sin(i * 78.233) - shifted,
          current: 1 + 0.1 * load + 0.003 * Math.sin(i * 37.719),
          vibration: 0.03 + 0.001 * Math.sin(i * 4.1414),
        });
      }
      return out;
    };
    const healthy = readings(0, 600, null);
    const channelNames = ['flow', 'current', 'vibration'] as const;
    const model = fitMachineModel({ channels: [...channelNames], values: channelNames.map((name) => healthy.map((row) => row[name])) });
    const record = { ...statsBaseline('rig'), channels: [...channelNames], machineModel: encodeMachineModel(model), updatedAt: new Date(5_000) };
    const store = baselineStore(new Map([['rig', record]]));
    const stream = readings(600, 1000, [800, 920]);
    const expected = judgeMachine(model, channelNames.map((name) => stream.map((row) => row[name])), 95);
    expect(expected.episodes.some((e) => e.start < 830 - 600 && e.end > 900 - 600)).toBe(true);
    const messages = stream.map((row, i) =>
      telemetryMessage({ machine_id: 'rig', timestamp: T0 + i * STEP, channels: channelNames.map((name) => ({ name, value: row[name] })) }),
    );

    const platform = await embeddedPlatform();
    const producer = await platform.bus.producer();
    const first = await start(platform, { store });
    await producer.send('telemetry', messages.slice(0, 250));
    await expect.poll(() => first.counters().rows, { timeout: 120_000 }).toBe(250 * 4);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    // A restart: the machine's stream goes on from its checkpoint; a replayed point is skipped.
    const second = await start(platform, { store });
    await producer.send('telemetry', [messages[249]!, ...messages.slice(250)]);
    await expect.poll(async () => (await allRows(platform.results, 'rig')).length, { timeout: 120_000 }).toBe(400);

    const rows = await allRows(platform.results, 'rig');
    expect(rows.map((row) => row.tsMs)).toEqual(stream.map((_, i) => T0 + i * STEP));
    expect(rows.map((row) => row.isAnomaly)).toEqual(expected.isAnomaly);
    rows.forEach((row, i) => {
      expect(row.value).toBeCloseTo(expected.score[i]!, 9);
      expect(row.severity).toBeCloseTo(expected.severity[i]!, 9);
      expect(row).toMatchObject({ expectedValue: 0, lowerMargin: 0, isNegativeAnomaly: false, energy: null, zScore: null, modelVersion: 'machine-gaussian-drift' });
      expect(row.upperMargin).toBeCloseTo(expected.threshold, 9);
    });
    const inEpisode = (i: number) => expected.episodes.some((e) => e.closed && i >= e.start && i <= e.end);
    rows.forEach((row, i) => expect(row.regime, `point ${i}`).toBe(row.isAnomaly || inEpisode(i) ? 'ACTIVE' : 'HEALTHY'));
    // Each channel is still judged as its own series.
    expect(await allRows(platform.results, 'rig:flow')).toHaveLength(400);
    expect(second.counters().rows).toBeGreaterThan(0);
  });

  it('two workers of one group share the partitions and every point is judged once', async () => {
    const platform = await embeddedPlatform();
    const machines = Array.from({ length: 12 }, (_, i) => `m-${i}`);
    const a = await start(platform);
    const b = await start(platform);
    await (await platform.bus.producer()).send('telemetry', points(machines, 0, 50));
    await expect.poll(() => a.counters().rows + b.counters().rows, { timeout: 120_000 }).toBe(600);
    expect(a.counters().rows).toBeGreaterThan(0);
    expect(b.counters().rows).toBeGreaterThan(0);
    const summaries = await platform.results.machines(ORG);
    expect(summaries.map((s) => s.points)).toEqual(new Array(12).fill(50));
  });
});
