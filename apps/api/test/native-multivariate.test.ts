// Multivariate baselines and detection (points with `channels`): request validation before the
// model loads, the machine-level regime and its driver, and the whole flow on the real model
// (each channel fine-tuned as `<machine_id>:<channel>`, listed and deleted as one machine).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { FINETUNE_DEFAULTS, WARMUP_POINTS, type FineTuneOptions } from '@adp/model';
import type { Regime } from '@adp/regimes';
import { machineJudgement, type MachineVerdictBody } from '../src/native/multivariate.js';
import {
  NO_MODEL,
  del,
  get,
  machineSignal,
  nativeEnvironment,
  points,
  post,
  sharedRealModel,
  type NativeEnvironment,
} from './native-helpers.js';

const SLOW = 300_000;
const TRAINING_POINTS = 1000;

/** Points carrying `channels`, one reading per channel per point. */
function channelPoints(channels: Record<string, readonly number[]>): { channels: Record<string, number> }[] {
  const names = Object.keys(channels);
  const length = channels[names[0] ?? '']?.length ?? 0;
  return Array.from({ length }, (_, i) => ({ channels: Object.fromEntries(names.map((name) => [name, channels[name]?.[i] ?? 0])) }));
}

function flat(length: number, value = 1): number[] {
  return new Array<number>(length).fill(value);
}

function error(code: string, message: string) {
  return { error: { code, message } };
}

describe('multivariate request validation (before the model loads)', () => {
  let env: NativeEnvironment;
  let app: FastifyInstance;

  beforeAll(async () => {
    env = await nativeEnvironment(NO_MODEL);
    app = await env.start();
  });
  afterAll(async () => {
    await env.cleanup();
  });

  async function expectError(url: string, body: unknown, status: number, expected: unknown): Promise<void> {
    const response = await post(app, url, body);
    expect(response.json()).toEqual(expected);
    expect(response.statusCode).toBe(status);
  }

  it('refuses a point that lacks a channel of the first point, or has one more', async () => {
    const series = channelPoints({ temp: flat(120), rpm: flat(120) });
    series[5] = { channels: { temp: 1 } };
    await expectError(
      '/v1/baseline',
      { machine_id: 'rig', series },
      400,
      error('InvalidSeries', "series[5].channels lacks 'rpm': every point carries the channels of series[0]."),
    );
    series[5] = { channels: { temp: 1, rpm: 1, flow: 2 } };
    await expectError(
      '/v1/detect',
      { machine_id: 'rig', series },
      400,
      error('InvalidSeries', "series[5].channels has 'flow', which series[0] does not: every point carries the channels of series[0]."),
    );
  });

  it('refuses more than 16 channels, a bad channel name, and a point with value and channels', async () => {
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, k) => [`c${k}`, flat(120)]));
    await expectError(
      '/v1/baseline',
      { machine_id: 'rig', series: channelPoints(many) },
      400,
      error('InvalidSeries', 'series[0].channels must have 1 to 16 entries; it has 17.'),
    );
    await expectError(
      '/v1/detect',
      { series: channelPoints({ '9lives': flat(20) }) },
      400,
      error(
        'InvalidSeries',
        "series[0].channels has the key '9lives', which is not 1 to 64 characters from A-Z a-z 0-9 _ . : - starting with a letter or underscore.",
      ),
    );
    const series: Record<string, unknown>[] = channelPoints({ temp: flat(120) });
    series[3] = { value: 2, channels: { temp: 1 } };
    await expectError(
      '/v1/baseline',
      { machine_id: 'rig', series },
      400,
      error('InvalidSeries', "series[3] must have exactly one of 'value' and 'channels'; a multivariate series has 'channels' only."),
    );
  });

  it('refuses too few points, a machine id with a colon, energies beside a series, and names the channel of a bad reading', async () => {
    await expectError(
      '/v1/baseline',
      { machine_id: 'rig', series: channelPoints({ temp: flat(99), rpm: flat(99) }) },
      400,
      error('InvalidSeries', 'series must have 100 to 8640 items; it has 99.'),
    );
    await expectError(
      '/v1/baseline',
      { machine_id: 'rig:a', series: channelPoints({ temp: flat(120) }) },
      400,
      error(
        'InvalidMachineId',
        "The 'machine_id' field of a multivariate series must not contain ':' (it separates a machine from its channels: '<machine_id>:<channel>').",
      ),
    );
    await expectError(
      '/v1/baseline',
      { machine_id: 'rig', series: channelPoints({ temp: flat(120) }), energies: flat(120) },
      400,
      error('InvalidArgument', "Send either 'series' (healthy data to fine-tune on) or 'energies', not both."),
    );
    const series = channelPoints({ temp: flat(120), rpm: flat(120) }) as { channels: Record<string, unknown> }[];
    series[7]!.channels['rpm'] = 'fast';
    const response = await post(app, '/v1/baseline', { machine_id: 'rig', series });
    expect(response.statusCode).toBe(400);
    const body = response.json() as { error: { code: string; message: string } };
    expect(body.error.code).toBe('InvalidSeries');
    expect(body.error.message).toBe('series[7].channels.rpm must be a number from -1e+100 to 1e+100.');
  });

  it('checks the detection options once, as for a single series', async () => {
    await expectError(
      '/v1/detect',
      { series: channelPoints({ temp: flat(20) }), sensitivity: 120 },
      400,
      error('InvalidArgument', 'sensitivity must be an integer from 0 to 99.'),
    );
  });
});

describe('machineJudgement', () => {
  it('takes the most severe channel regime and the highest z-score at it as the driver', () => {
    const judged = machineJudgement([
      { channel: 'a', regimes: ['HEALTHY', 'ACTIVE', 'SHOCK', 'TRANSITION', 'UNKNOWN'] as Regime[], zScores: [1, 7, 13, 9, 0] },
      { channel: 'b', regimes: ['HEALTHY', 'ACTIVE', 'ACTIVE', 'SHOCK', 'UNKNOWN'] as Regime[], zScores: [2, 8, 40, 12, 0] },
    ]);
    expect(judged.regimes).toEqual(['HEALTHY', 'ACTIVE', 'SHOCK', 'SHOCK', 'UNKNOWN']);
    // Point 2: b's z-score is higher, but only a is at SHOCK.
    expect(judged.driver).toEqual([null, 'b', 'a', 'b', null]);
    expect(judged.drivers).toEqual({ a: 1, b: 2 });
  });

  it('keeps a channel named like an Object property in the counts', () => {
    const judged = machineJudgement([{ channel: '__proto__', regimes: ['ACTIVE'], zScores: [7] }]);
    expect(Object.entries(judged.drivers)).toEqual([['__proto__', 1]]);
  });
});

interface ChannelBaselineBody {
  channel: string;
  series_id: string;
  baseline_id: string;
  stats: { num_windows: number; series_length: number; energy_mean: number };
  finetune_stats: { status: string; windows: number; duration_seconds: number };
  shape: { length: number; reference_points: number } | null;
}

interface SeriesDetectBody {
  regimes: Regime[];
  z_scores: number[];
  energies: number[] | null;
  expectedValues: number[];
  isAnomaly: boolean[];
  engine: string;
  machine_id: string | null;
  baseline_id: string | null;
}

interface MultivariateBody {
  machine: MachineVerdictBody | null;
  machine_id: string | null;
  baseline_id: string | null;
  regimes: Regime[];
  driver: (string | null)[];
  drivers: Record<string, number>;
  channels: Record<string, SeriesDetectBody>;
}

describe('multivariate baselines and detection on the real model', () => {
  const model = sharedRealModel();
  /** Each fine-tune's options, in the order of the calls. */
  const fineTunes: (FineTuneOptions | undefined)[] = [];
  let env: NativeEnvironment;
  let app: FastifyInstance;
  let baseline: { channels: ChannelBaselineBody[]; [field: string]: unknown };
  // rpm runs on another scale and cycle than temp: each channel is normalised on its own.
  const temp = machineSignal(TRAINING_POINTS, 1);
  const rpm = machineSignal(TRAINING_POINTS, 5).map((value) => 1500 + 20 * value);

  beforeAll(async () => {
    env = await nativeEnvironment(async () => {
      const real = await model.factory();
      return {
        ...real,
        fineTune: (values, options) => {
          fineTunes.push(options);
          return real.fineTune(values, options);
        },
      };
    });
    app = await env.start();
    const response = await post(app, '/v1/baseline', {
      machine_id: 'rig-1',
      label: 'test rig',
      series: channelPoints({ temp, rpm }),
    });
    expect(response.statusCode, response.body).toBe(200);
    baseline = response.json() as typeof baseline;
  }, SLOW);

  afterAll(async () => {
    await env.cleanup();
    await model.close();
  });

  it("answers the machine's record with each channel's own fine-tuned baseline", async () => {
    const heldOut = Math.round((TRAINING_POINTS - WARMUP_POINTS) * FINETUNE_DEFAULTS.holdoutShare);
    expect(baseline).toMatchObject({
      machine_id: 'rig-1',
      baseline_id: 'bl_rig-1',
      label: 'test rig',
      status: 'active',
      stats: { num_windows: 2 * heldOut, series_length: TRAINING_POINTS },
      finetune_stats: { status: 'completed' },
    });
    expect(baseline.channels.map((channel) => [channel.channel, channel.series_id, channel.baseline_id])).toEqual([
      ['temp', 'rig-1:temp', 'bl_rig-1:temp'],
      ['rpm', 'rig-1:rpm', 'bl_rig-1:rpm'],
    ]);
    for (const channel of baseline.channels) {
      expect(channel.stats).toMatchObject({ num_windows: heldOut, series_length: TRAINING_POINTS });
      expect(channel.finetune_stats.status).toBe('completed');
      expect(channel.shape).toMatchObject({ length: 48, reference_points: TRAINING_POINTS });
    }
    // The machine's record keeps no shapes of its own: each channel has its own.
    expect(baseline['shape']).toBeNull();
    const windows = baseline.channels.reduce((sum, channel) => sum + channel.finetune_stats.windows, 0);
    expect((baseline['finetune_stats'] as { windows: number }).windows).toBe(windows);

    expect((await get(app, '/v1/baseline?machine_id=rig-1')).json()).toEqual(baseline);
    // A channel's baseline is an ordinary baseline under its series id (where the workers look).
    const channel = await get(app, '/v1/baseline?machine_id=rig-1:rpm');
    expect(channel.statusCode).toBe(200);
    expect(channel.json()).toMatchObject({ machine_id: 'rig-1:rpm', label: 'test rig', stats: baseline.channels[1]?.stats });
    expect(channel.json()).not.toHaveProperty('channels');
  });

  it('reads a spike on one channel SHOCK for the machine, driven by that channel, the other channel healthy', async () => {
    const detectTemp = machineSignal(600, 3, TRAINING_POINTS);
    const detectRpm = machineSignal(600, 4, TRAINING_POINTS).map((value) => 1500 + 20 * value);
    const spike = 300;
    detectRpm[spike] = (detectRpm[spike] ?? 0) + 20 * 25;
    const response = await post(app, '/v1/detect', { machine_id: 'rig-1', include_energy: true, series: channelPoints({ temp: detectTemp, rpm: detectRpm }) });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as MultivariateBody;

    expect(body.machine_id).toBe('rig-1');
    expect(body.baseline_id).toBe('bl_rig-1');
    expect(Object.keys(body.channels)).toEqual(['temp', 'rpm']);
    expect(body.regimes).toHaveLength(600);
    expect(body.regimes[spike]).toBe('SHOCK');
    expect(body.driver[spike]).toBe('rpm');
    expect(body.channels['rpm']?.regimes[spike]).toBe('SHOCK');
    expect(body.channels['rpm']?.isAnomaly[spike]).toBe(true);
    expect(body.channels['temp']?.regimes.every((regime) => regime === 'HEALTHY')).toBe(true);
    expect(body.drivers['temp']).toBe(0);
    expect(body.drivers['rpm']).toBeGreaterThanOrEqual(1);
    for (const [name, channel] of Object.entries(body.channels)) {
      expect(channel).toMatchObject({ engine: 'fine-tuned', machine_id: `rig-1:${name}`, baseline_id: `bl_rig-1:${name}` });
      expect(channel.energies).toHaveLength(600);
    }

    // A channel's answer is the univariate answer for its series id.
    const single = await post(app, '/v1/detect', { machine_id: 'rig-1:rpm', series: points(detectRpm) });
    expect(single.statusCode).toBe(200);
    const own = single.json() as SeriesDetectBody;
    expect(own.regimes).toEqual(body.channels['rpm']?.regimes);
    // Written to 5 decimals: the same number either way, give or take one rounding step.
    own.z_scores.forEach((z, i) => expect(body.channels['rpm']?.z_scores[i]).toBeCloseTo(z, 4));
  });

  it("answers the machine's joint model with the baseline", () => {
    expect(baseline['machine_model']).toMatchObject({ kind: 'gaussian-drift', channels: ['temp', 'rpm'], rows: TRAINING_POINTS });
    const summary = baseline['machine_model'] as { threshold: number; drifting_channels: string[] };
    expect(summary.threshold).toBeGreaterThan(0);
    expect(summary.drifting_channels.every((name) => ['temp', 'rpm'].includes(name))).toBe(true);
  });

  it('flags a lasting departure of the joint state as one episode from start to end, naming the channel that drove it', async () => {
    const detectTemp = machineSignal(600, 3, TRAINING_POINTS);
    const detectRpm = machineSignal(600, 4, TRAINING_POINTS).map((value) => 1500 + 20 * value);
    // rpm runs 5 % high while temp follows its cycle: a broken relation, not a spike.
    for (let i = 250; i < 400; i++) detectRpm[i] = (detectRpm[i] ?? 0) + 75;
    const response = await post(app, '/v1/detect', { machine_id: 'rig-1', series: channelPoints({ temp: detectTemp, rpm: detectRpm }) });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as MultivariateBody;
    const machine = body.machine!;
    expect(machine).toMatchObject({ model: 'gaussian-drift', sensitivity: 95 });
    expect(machine.score).toHaveLength(600);
    expect(Object.keys(machine.contributions)).toEqual(['temp', 'rpm']);
    machine.score.forEach((score, i) => expect((machine.contributions['temp']?.[i] ?? 0) + (machine.contributions['rpm']?.[i] ?? 0)).toBeCloseTo(score, 6));
    expect(machine.episodes).toHaveLength(1);
    const episode = machine.episodes[0]!;
    expect(episode.start).toBeGreaterThanOrEqual(250);
    expect(episode.start).toBeLessThan(265);
    expect(episode.end).toBeGreaterThanOrEqual(399);
    expect(episode.end).toBeLessThan(420);
    expect(episode).toMatchObject({ closed: true, start_timestamp: null, end_timestamp: null });
    expect(episode.channels[0]?.channel).toBe('rpm');
    expect(episode.severity).toBeGreaterThan(0);
    // Flagged from its start to its end, and the machine is not HEALTHY anywhere inside it.
    for (let i = 0; i < 600; i++) expect(machine.is_anomaly[i]).toBe(i >= episode.start && i <= episode.end);
    expect(body.regimes.slice(episode.start, episode.end + 1).every((regime) => regime !== 'HEALTHY')).toBe(true);
    expect(machine.severity.slice(0, episode.start).every((value) => value === 0)).toBe(true);

    // A lower sensitivity asked for: a higher threshold.
    const calmer = await post(app, '/v1/detect', { machine_id: 'rig-1', sensitivity: 60, series: channelPoints({ temp: detectTemp, rpm: detectRpm }) });
    expect((calmer.json() as MultivariateBody).machine?.threshold).toBeGreaterThan(machine.threshold);
  });

  it("refuses a series that lacks one of the machine model's channels", async () => {
    const response = await post(app, '/v1/detect', { machine_id: 'rig-1', series: channelPoints({ temp: machineSignal(100, 9), flow: machineSignal(100, 8) }) });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual(error('InvalidSeries', "The machine's baseline models the channels temp, rpm together; the series lacks 'rpm'."));
  });

  it('answers machine null without a joint model (no machine id)', async () => {
    const response = await post(app, '/v1/detect', { series: channelPoints({ temp: machineSignal(100, 9), rpm: machineSignal(100, 8) }) });
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as MultivariateBody).machine).toBeNull();
  });

  it('refuses a single series for the multivariate machine, pointing to channels', async () => {
    const response = await post(app, '/v1/detect', { machine_id: 'rig-1', series: points(machineSignal(100, 9)) });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual(
      error(
        'InvalidSeries',
        "Machine 'rig-1' has a multivariate baseline (channels temp, rpm): send points with 'channels', or detect one channel as '<machine_id>:<channel>'.",
      ),
    );
  });

  it('lists the machine once with its channels, and meters every channel', async () => {
    for (const url of ['/v1/machines', '/v1/machines?include=telemetry']) {
      const list = (await get(app, url)).json() as { machines: { machine_id: string; channels?: string[] }[]; total: number };
      expect(list.machines.map((machine) => [machine.machine_id, machine.channels])).toEqual([['rig-1', ['temp', 'rpm']]]);
      expect(list.total).toBe(1);
    }
    const usage = (await get(app, '/v1/usage')).json() as { endpoint: string; total_points: number }[];
    expect(usage.find((entry) => entry.endpoint === 'v1/baseline')?.total_points).toBe(2 * TRAINING_POINTS);
  });

  it("a new baseline without a channel drops that channel's baseline; deleting the machine removes the rest", async () => {
    const again = await post(app, '/v1/baseline', { machine_id: 'rig-1', series: channelPoints({ temp }) });
    expect(again.statusCode, again.body).toBe(200);
    expect((again.json() as { channels: ChannelBaselineBody[]; label: string }).channels.map((c) => c.channel)).toEqual(['temp']);
    expect((again.json() as { label: string }).label).toBe('test rig');
    expect((await get(app, '/v1/baseline?machine_id=rig-1:rpm')).statusCode).toBe(404);

    const deleted = await del(app, '/v1/machines/rig-1');
    expect(deleted.json()).toMatchObject({ machine_id: 'rig-1', deleted: true, baseline_deleted: true });
    for (const id of ['rig-1', 'rig-1:temp']) {
      expect((await get(app, `/v1/baseline?machine_id=${id}`)).statusCode).toBe(404);
    }
    expect(((await get(app, '/v1/machines?include=telemetry')).json() as { total: number }).total).toBe(0);
  });

  it("fine-tunes each channel with the ridge solved in its cheaper form, a single series' baseline with the defaults", async () => {
    // The machine's first baseline (two channels), then its replacement without rpm.
    expect(fineTunes).toEqual([{ ridgeForm: 'auto' }, { ridgeForm: 'auto' }, { ridgeForm: 'auto' }]);
    const single = await post(app, '/v1/baseline', { machine_id: 'solo-1', series: points(temp) });
    expect(single.statusCode, single.body).toBe(200);
    expect(fineTunes.slice(3)).toEqual([undefined]);
    expect((await del(app, '/v1/machines/solo-1')).statusCode).toBe(200);
  });
});
