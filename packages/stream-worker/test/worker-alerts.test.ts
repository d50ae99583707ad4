// Alerts where points are judged: one alert per episode opened and closed (not per flagged point),
// on the alerts topic, with the episode's state surviving a worker restart, and feedback in the
// store deciding which flags count.
import { afterEach, describe, expect, it } from 'vitest';
import type { MachineFeedback } from '@adp/store';
import type { Alert } from '@adp/streaming';
import { startWorker, type RunningWorker, type WorkerDeps } from '../src/index.js';
import { encodeMachineModel, fitMachineModel, judgeMachine } from '@adp/machine';
import { baselineStore, codecs, embeddedPlatform, fakeModel, ORG, signal, statsBaseline, telemetryMessage, testConfig, type Platform } from './helpers.js';

const T0 = 1_700_000_000_000;
const STEP = 60_000;
const SPIKES = new Set([140, 300]);
const ALERTS = { topic: 'alerts', quietPoints: 5 };

const running: RunningWorker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.stop()));
});

async function start(platform: Platform, overrides: Partial<WorkerDeps> = {}): Promise<RunningWorker> {
  const worker = await startWorker({
    ...platform,
    store: baselineStore(new Map()),
    loadModel: async () => fakeModel(),
    config: testConfig({ alerts: ALERTS }),
    ...overrides,
  });
  running.push(worker);
  return worker;
}

async function readAlerts(platform: Platform): Promise<{ alerts: Alert[]; close: () => Promise<void> }> {
  const alerts: Alert[] = [];
  const consumer = await platform.bus.consumer({ groupId: 'alerts-reader', topics: [ALERTS.topic] });
  await consumer.run(async (batch) => {
    for (const message of batch.messages) alerts.push(codecs.alert.decode(message.value));
  });
  return { alerts, close: () => consumer.close() };
}

const points = (machine: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, k) => telemetryMessage({ machine_id: machine, timestamp: T0 + (from + k) * STEP, value: signal(0, from + k, SPIKES) }));

describe('worker alerts', () => {
  it('raises one opened and one closed alert per episode, keyed by machine, with the peak and its band', async () => {
    const platform = await embeddedPlatform();
    const worker = await start(platform);
    const reader = await readAlerts(platform);
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points('pump-1', 0, 400));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(400);
    await expect.poll(() => reader.alerts.length, { timeout: 60_000 }).toBe(6);
    await reader.close();
    const { alerts } = reader;
    // The engine also flags one point of its warm-up (20): an episode like the others.
    expect(alerts.map((a) => [a.event, (a.started_at - T0) / STEP])).toEqual([
      ['EPISODE_OPENED', 20],
      ['EPISODE_CLOSED', 20],
      ['EPISODE_OPENED', 140],
      ['EPISODE_CLOSED', 140],
      ['EPISODE_OPENED', 300],
      ['EPISODE_CLOSED', 300],
    ]);
    const closed = alerts[3]!;
    expect(closed).toMatchObject({
      organization: ORG,
      machine_id: 'pump-1',
      series_id: 'pump-1',
      channels: [],
      ended_at: T0 + 140 * STEP,
      flagged_points: 1,
      peak_at: T0 + 140 * STEP,
      peak_value: signal(0, 140, SPIKES),
      regime: 'UNKNOWN',
      event_id: `${ORG}/pump-1/${T0 + 140 * STEP}/closed`,
    });
    expect(closed.peak_severity).toBeGreaterThan(0);
    expect(closed.peak_value).toBeGreaterThan(closed.expected_value + closed.upper_margin);
    expect(worker.counters().alerts).toBe(6);
  });

  it('keeps an open episode across a restart: the close comes after it, the open is not raised again', async () => {
    const platform = await embeddedPlatform();
    const reader = await readAlerts(platform);
    const producer = await platform.bus.producer();
    const first = await start(platform);
    // Up to two points after the spike: the episode is open, not yet closed.
    await producer.send('telemetry', points('pump-2', 0, 143));
    await expect.poll(() => first.counters().rows, { timeout: 120_000 }).toBe(143);
    await first.stop();
    await expect.poll(() => reader.alerts.length, { timeout: 60_000 }).toBe(3);
    const second = await start(platform);
    await producer.send('telemetry', points('pump-2', 143, 200));
    await expect.poll(() => second.counters().rows, { timeout: 120_000 }).toBe(57);
    await expect.poll(() => reader.alerts.length, { timeout: 60_000 }).toBe(4);
    await reader.close();
    expect(reader.alerts.map((a) => a.event)).toEqual(['EPISODE_OPENED', 'EPISODE_CLOSED', 'EPISODE_OPENED', 'EPISODE_CLOSED']);
    expect(reader.alerts[3]).toMatchObject({ started_at: T0 + 140 * STEP, ended_at: T0 + 140 * STEP });
  });

  it('feedback that marks the spike not anomalous keeps like spikes from raising episodes', async () => {
    const platform = await embeddedPlatform();
    const spike = signal(0, 140, SPIKES);
    const feedback: MachineFeedback = {
      feedbackId: 'fb_1',
      orgId: ORG,
      machineId: 'pump-3',
      fromMs: T0,
      toMs: T0 + 1,
      label: 'not_anomaly',
      pattern: { low: spike - 1, high: spike + 1, direction: 'up', points: 1 },
      createdAt: new Date(T0),
    };
    const store = { ...baselineStore(new Map()), alerting: { listFeedback: async () => [feedback] } };
    const worker = await start(platform, { store });
    const reader = await readAlerts(platform);
    const producer = await platform.bus.producer();
    await producer.send('telemetry', points('pump-3', 0, 400));
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(400);
    // The spikes at 140 and 300 are both within one band of the marked range; the warm-up flag at 20
    // lies outside it and still raises its episode.
    await expect.poll(() => reader.alerts.length, { timeout: 60_000 }).toBe(2);
    await reader.close();
    expect(reader.alerts.map((a) => (a.started_at - T0) / STEP)).toEqual([20, 20]);
  });
});

describe("worker alerts for a multi-channel machine's joint model", () => {
  it("raises the machine's episode opened and closed under its own id, naming the channels that drove it", async () => {
    const readings = (from: number, to: number, fault: readonly [number, number] | null) =>
      Array.from({ length: to - from }, (_, k) => {
        const i = from + k;
        const load = Math.sin(i / 7) + 0.1 * Math.sin(i * 12.9898);
        const shifted = fault !== null && i >= fault[0] && i < fault[1] ? 1.5 : 0;
        return {
          flow: 30 + 2 * load + 0.05 * Math.sin(i * 78.233) - shifted,
          current: 1 + 0.1 * load + 0.003 * Math.sin(i * 37.719),
          vibration: 0.03 + 0.001 * Math.sin(i * 4.1414),
        };
      });
    const names = ['flow', 'current', 'vibration'] as const;
    const healthy = readings(0, 600, null);
    const model = fitMachineModel({ channels: [...names], values: names.map((name) => healthy.map((row) => row[name])) });
    const store = baselineStore(new Map([['rig', { ...statsBaseline('rig'), channels: [...names], machineModel: encodeMachineModel(model) }]]));
    const platform = await embeddedPlatform();
    const worker = await start(platform, { store });
    const reader = await readAlerts(platform);
    const stream = readings(600, 1000, [800, 900]);
    const expected = judgeMachine(model, names.map((name) => stream.map((row) => row[name])), 95);
    const producer = await platform.bus.producer();
    await producer.send(
      'telemetry',
      stream.map((row, i) => telemetryMessage({ machine_id: 'rig', timestamp: T0 + i * STEP, channels: names.map((name) => ({ name, value: row[name] })) })),
    );
    await expect.poll(() => worker.counters().rows, { timeout: 120_000 }).toBe(400 * 4);
    const fault = expected.episodes.find((episode) => episode.start < 230 && episode.end > 290)!;
    expect(fault).toBeDefined();
    const machineAlerts = () => reader.alerts.filter((alert) => alert.series_id === 'rig' && alert.event !== 'REGIME_CHANGED');
    await expect.poll(() => machineAlerts().filter((alert) => alert.started_at === T0 + fault.start * STEP).length, { timeout: 60_000 }).toBe(2);
    await reader.close();
    const [opened, closed] = machineAlerts().filter((alert) => alert.started_at === T0 + fault.start * STEP);
    expect(opened).toMatchObject({ event: 'EPISODE_OPENED', machine_id: 'rig', organization: ORG });
    expect(closed).toMatchObject({ event: 'EPISODE_CLOSED', machine_id: 'rig', ended_at: T0 + fault.end * STEP });
    expect(closed!.channels).toEqual(fault.channels.map(({ channel }) => channel));
    expect(closed!.channels[0]).toBe('flow');
  });
});
