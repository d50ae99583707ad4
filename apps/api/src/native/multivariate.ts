// Multivariate requests of the native routes: a series whose points carry `channels` (named
// readings, as telemetry's points do) instead of `value`. The schema has checked each point's
// channels (names, count, readings); here are the rules between points (every point carries the
// first point's channels) and between fields (a channel's series id fits a machine id). Each channel is checked, baselined and
// judged as its own series `<machine_id>:<channel>` under the univariate rules (./request.ts),
// so a channel's baseline is the one the streaming workers use for that channel's telemetry.
// The machine-level regime of a point is its most severe channel regime; its driver is the channel
// at that regime with the highest z-score.
import { MACHINE_ID_MAX_LENGTH, MAX_MULTIVARIATE_CHANNELS } from '@adp/domain';
import { judgeMachine, type MachineModel, type MachineVerdict } from '@adp/machine';
import type { Regime } from '@adp/regimes';
import { AppError, ERRORS } from '../errors.js';
import { type JsonObject, invalidSeries, isJsonObject } from '../request-checks.js';
import {
  parseBaselineRequest,
  parseDetectRequest,
  type BaselineBodyFields,
  type DetectFlags,
  type NativeBaselineRequest,
  type NativeDetectRequest,
  type ParseTimestamp,
  type SchemaPoint,
} from './request.js';

/**
 * Most channels of one multivariate baseline or detection. Each channel is a fine-tune or a model
 * run of its own, one after another in one admission slot, so the request's work grows with its
 * channels. Telemetry takes more channels a point: further channels get their baselines one series
 * at a time (`POST /v1/baseline` for `<machine_id>:<channel>`).
 */
export { MAX_MULTIVARIATE_CHANNELS };

/** Machine-level regimes from most to least severe. */
export const REGIME_SEVERITY: readonly Regime[] = ['SHOCK', 'TRANSITION', 'ACTIVE', 'HEALTHY', 'UNKNOWN'];

export interface ChannelRequest<T> {
  readonly channel: string;
  readonly request: T;
}

export interface MultivariateBaselineRequest {
  readonly machineId: string;
  readonly label: string | null;
  readonly granularity: string | null;
  readonly sensitivity: number | null;
  /** Points per channel (every channel has every point). */
  readonly points: number;
  readonly channels: readonly ChannelRequest<Extract<NativeBaselineRequest, { kind: 'series' }>>[];
}

export interface MultivariateDetectRequest {
  readonly machineId: string | null;
  readonly points: number;
  readonly channels: readonly ChannelRequest<NativeDetectRequest>[];
}

/**
 * Whether a body is multivariate: its `series` is an array whose first point has `channels`.
 * Any other body takes the univariate route unchanged.
 */
export function isMultivariate(body: unknown): boolean {
  return isJsonObject(body) && isMultichannelSeries(body['series']);
}

/** Whether a series is multichannel: an array whose first point has `channels`. */
export function isMultichannelSeries(series: unknown): series is unknown[] {
  if (!Array.isArray(series)) return false;
  const first: unknown = series[0];
  return isJsonObject(first) && first['channels'] !== undefined && first['channels'] !== null;
}

/**
 * A multivariate machine id: the univariate rule (the schema's) without ':', which joins a machine
 * to its channels.
 */
export function parseMultivariateMachineId(machineId: string, what = "'machine_id' field"): string {
  if (machineId.includes(':')) {
    throw new AppError(
      ERRORS.InvalidMachineId,
      `The ${what} of a multivariate series must not contain ':' (it separates a machine from its channels: '<machine_id>:<channel>').`,
    );
  }
  return machineId;
}

/**
 * The channel names (the first point's, in its order) and each channel's points in the univariate
 * shape `{timestamp, value}`. Every point must carry exactly the first point's channels; names,
 * their count and the readings are the schema's.
 */
export function splitChannels(series: readonly unknown[], machineId: string | null): { names: string[]; perChannel: Map<string, SchemaPoint[]> } {
  const first = series[0] as { channels: JsonObject };
  const names = Object.keys(first.channels);
  if (machineId !== null) {
    for (const name of names) {
      if (machineId.length + 1 + name.length > MACHINE_ID_MAX_LENGTH) {
        throw invalidSeries(
          `series[0].channels.${name}: '<machine_id>:<channel>' must be at most ${MACHINE_ID_MAX_LENGTH} characters (each channel is its own series).`,
        );
      }
    }
  }
  const perChannel = new Map<string, SchemaPoint[]>(names.map((name) => [name, new Array<SchemaPoint>(series.length)]));
  for (let index = 0; index < series.length; index++) {
    const point = series[index] as JsonObject;
    const readings = point['channels'];
    if (!isJsonObject(readings)) {
      throw invalidSeries(`series[${index}] must have 'channels': an object of channel names to numbers, as series[0] has.`);
    }
    if (point['value'] !== undefined && point['value'] !== null) {
      throw invalidSeries(`series[${index}] must have exactly one of 'value' and 'channels'; a multivariate series has 'channels' only.`);
    }
    const keys = Object.keys(readings);
    const missing = names.find((name) => !Object.hasOwn(readings, name));
    if (missing !== undefined) {
      throw invalidSeries(`series[${index}].channels lacks '${missing}': every point carries the channels of series[0].`);
    }
    if (keys.length !== names.length) {
      const extra = keys.find((key) => !names.includes(key)) ?? '';
      throw invalidSeries(`series[${index}].channels has '${extra}', which series[0] does not: every point carries the channels of series[0].`);
    }
    const timestamp = point['timestamp'] as string | null | undefined;
    for (const name of names) {
      perChannel.get(name)![index] = { timestamp, value: readings[name] as number };
    }
  }
  return { names, perChannel };
}

/** Runs a univariate parse for one channel; its series errors name the channel. */
function forChannel<T>(channel: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof AppError && error.code === ERRORS.InvalidSeries.code) {
      throw invalidSeries(`Channel '${channel}': ${error.message}`);
    }
    throw error;
  }
}

/** `POST /v1/baseline` with a multivariate `series`. */
export function parseMultivariateBaselineRequest(
  body: BaselineBodyFields,
  series: readonly unknown[],
  parseTimestamp: ParseTimestamp,
): MultivariateBaselineRequest {
  const machineId = parseMultivariateMachineId(body.machine_id);
  if (body.energies != null) {
    throw new AppError(ERRORS.InvalidArgument, "Send either 'series' (healthy data to fine-tune on) or 'energies', not both.");
  }
  const { names, perChannel } = splitChannels(series, machineId);
  const channels = names.map((channel) => {
    const request = forChannel(channel, () => parseBaselineRequest(body, perChannel.get(channel), parseTimestamp));
    if (request.kind !== 'series') throw new Error('unreachable: a channel baseline without its series');
    return { channel, request };
  });
  const first = channels[0]!.request;
  return {
    machineId,
    label: first.label,
    granularity: first.granularity,
    sensitivity: first.sensitivity,
    points: series.length,
    channels,
  };
}

/** `POST /v1/detect` with a multivariate `series`. */
export function parseMultivariateDetectRequest(
  body: DetectFlags,
  series: readonly unknown[],
  parseTimestamp: ParseTimestamp,
): MultivariateDetectRequest {
  const machineId = body.machine_id == null ? null : parseMultivariateMachineId(body.machine_id);
  const { names, perChannel } = splitChannels(series, machineId);
  const channels = names.map((channel) => ({
    channel,
    request: forChannel(channel, () => parseDetectRequest(body, perChannel.get(channel)!, parseTimestamp)),
  }));
  return { machineId, points: series.length, channels };
}

export interface ChannelJudgement {
  readonly channel: string;
  readonly regimes: readonly Regime[];
  readonly zScores: ArrayLike<number>;
}

export interface MachineJudgement {
  /** Per point: the most severe of the channels' regimes. */
  readonly regimes: Regime[];
  /** Per point: the channel at the machine regime with the highest z-score; null at HEALTHY and UNKNOWN. */
  readonly driver: (string | null)[];
  /** Points each channel drove, every channel listed (0 included), in the channels' order. */
  readonly drivers: Record<string, number>;
}

/** The machine-level regimes and drivers of a multivariate detection (every channel has the same points). */
export function machineJudgement(channels: readonly ChannelJudgement[]): MachineJudgement {
  const points = channels[0]?.regimes.length ?? 0;
  const regimes = new Array<Regime>(points);
  const driver = new Array<string | null>(points);
  // A Map: a channel may be named `__proto__`, which an assignment to a plain object would not store.
  const counts = new Map<string, number>(channels.map(({ channel }) => [channel, 0]));
  for (let index = 0; index < points; index++) {
    let worst: Regime = 'UNKNOWN';
    for (const { regimes: own } of channels) {
      const regime = own[index] ?? 'UNKNOWN';
      if (REGIME_SEVERITY.indexOf(regime) < REGIME_SEVERITY.indexOf(worst)) worst = regime;
    }
    regimes[index] = worst;
    let chosen: string | null = null;
    if (worst !== 'HEALTHY' && worst !== 'UNKNOWN') {
      let highest = Number.NEGATIVE_INFINITY;
      for (const { channel, regimes: own, zScores } of channels) {
        const z = zScores[index] ?? Number.NEGATIVE_INFINITY;
        if (own[index] === worst && (chosen === null || z > highest)) {
          chosen = channel;
          highest = z;
        }
      }
    }
    driver[index] = chosen;
    if (chosen !== null) counts.set(chosen, (counts.get(chosen) ?? 0) + 1);
  }
  return { regimes, driver, drivers: Object.fromEntries(counts) };
}

/** The machine model's verdict as `POST /v1/detect` answers it. */
export interface MachineVerdictBody {
  readonly model: 'gaussian-drift';
  readonly sensitivity: number;
  readonly threshold: number;
  readonly score: number[];
  readonly is_anomaly: boolean[];
  readonly severity: number[];
  readonly contributions: Record<string, number[]>;
  readonly episodes: {
    start: number;
    end: number;
    start_timestamp: string | null;
    end_timestamp: string | null;
    peak: number;
    peak_score: number;
    severity: number;
    channels: { channel: string; share: number }[];
    closed: boolean;
  }[];
}

/**
 * The InvalidSeries for a series that lacks channels the machine's joint model reads together,
 * else null. `where` names the series in a request of several (a job's `Series 2 (machine 'p')`).
 */
export function lacksModelChannels(modelChannels: readonly string[], has: (channel: string) => boolean, where?: string): AppError | null {
  const missing = modelChannels.filter((name) => !has(name));
  if (missing.length === 0) return null;
  const problem = `baseline models the channels ${modelChannels.join(', ')} together; the series lacks ${missing.map((name) => `'${name}'`).join(', ')}.`;
  return invalidSeries(where === undefined ? `The machine's ${problem}` : `${where}: the machine's ${problem}`);
}

/**
 * Judges a multivariate request against the machine's joint model. The request must carry every
 * channel of the model (a channel it adds is judged on its own only).
 */
export function judgeAgainstMachineModel(
  model: MachineModel,
  channels: readonly ChannelRequest<NativeDetectRequest>[],
  sensitivity: number,
): { body: MachineVerdictBody; verdict: MachineVerdict } {
  const byName = new Map(channels.map(({ channel, request }) => [channel, request]));
  const lacking = lacksModelChannels(model.channels, (name) => byName.has(name));
  if (lacking !== null) throw lacking;
  const requests = model.channels.map((name) => byName.get(name)!);
  const verdict = judgeMachine(model, requests.map((request) => request.input.values), sensitivity);
  const timestamps = requests[0]?.input.timestampsMs ?? null;
  const at = (index: number): string | null => (timestamps === null ? null : new Date(timestamps[index] ?? 0).toISOString());
  // A Map first: a channel may be named `__proto__`, which an assignment to a plain object would not store.
  const contributions = new Map(model.channels.map((name, c) => [name, Array.from(verdict.contributions[c] ?? [])]));
  return {
    verdict,
    body: {
      model: model.kind,
      sensitivity,
      threshold: verdict.threshold,
      score: Array.from(verdict.score),
      is_anomaly: verdict.isAnomaly,
      severity: verdict.severity,
      contributions: Object.fromEntries(contributions),
      episodes: verdict.episodes.map((episode) => ({
        start: episode.start,
        end: episode.end,
        start_timestamp: at(episode.start),
        end_timestamp: at(episode.end),
        peak: episode.peak,
        peak_score: episode.peakScore,
        severity: episode.severity,
        channels: episode.channels.map(({ channel, share }) => ({ channel, share })),
        closed: episode.closed,
      })),
    },
  };
}

/**
 * The machine-level regimes with the joint model's verdict: a point inside an episode is at least
 * ACTIVE (a machine out of its healthy state is not HEALTHY, whatever each channel says alone),
 * driven by the channel with the largest part of its score where no channel regime named one.
 */
export function withMachineVerdict(judgement: MachineJudgement, model: MachineModel, verdict: MachineVerdict): MachineJudgement {
  const regimes = [...judgement.regimes];
  const driver = [...judgement.driver];
  const counts = new Map(Object.entries(judgement.drivers));
  const inEpisode = new Array<boolean>(regimes.length).fill(false);
  for (const { start, end } of verdict.episodes) for (let index = start; index <= end; index++) inEpisode[index] = true;
  for (let index = 0; index < regimes.length; index++) {
    if (!inEpisode[index] || (regimes[index] !== 'HEALTHY' && regimes[index] !== 'UNKNOWN')) continue;
    regimes[index] = 'ACTIVE';
    let top = 0;
    verdict.contributions.forEach((part, c) => {
      if ((part[index] ?? 0) > (verdict.contributions[top]?.[index] ?? 0)) top = c;
    });
    const channel = model.channels[top] ?? null;
    driver[index] = channel;
    if (channel !== null) counts.set(channel, (counts.get(channel) ?? 0) + 1);
  }
  return { regimes, driver, drivers: Object.fromEntries(counts) };
}

/** A channel's failure names the channel; the code stays. */
export function inChannelError(error: unknown, channel: string): unknown {
  if (!(error instanceof AppError) || error.code !== ERRORS.InvalidSeries.code) return error;
  return new AppError(ERRORS.InvalidSeries, `Channel '${channel}': ${error.message}`, { cause: error });
}
