// The machine's verdict in the stream: a multi-channel machine whose baseline has a joint model of
// its channels (@adp/machine) gets, besides each channel's own rows, one row per point under its own
// id: the machine's score against its healthy state, the threshold as the upper margin, flagged
// while the score is over it, its regime ACTIVE inside an episode. The stream's state (points judged
// since the baseline, the trailing window, the episode under way) is checkpointed with the batch,
// under a series id no channel can take, so a restart, a retry or a rebalance continues it exactly.
import { decodeMachineModel, episodeDrivers, initialStreamState, streamMachine, type MachineModel, type MachineStreamState } from '@adp/machine';
import { channelSeriesId, type ResultRow } from '@adp/streaming';

/** The checkpoint series of a machine's stream: `<machine>:#machine` (a channel name cannot start with '#'). */
export function machineStateSeriesId(machineId: string): string {
  return channelSeriesId(machineId, '#machine');
}

/** One point of a multi-channel machine: its time and its readings by channel. */
export interface ChannelPoint {
  readonly tsMs: number;
  readonly readings: ReadonlyMap<string, number>;
}

/** What the worker keeps of a machine's stream between batches. */
export interface MachineCheckpoint {
  /** The baseline the stream was judged against (its update time): a new baseline starts afresh. */
  readonly baselineUpdatedAtMs: number;
  /** The newest point judged (null: none yet): later points only (replays are skipped). */
  readonly lastTsMs: number | null;
  readonly stream: MachineStreamState;
}

export function encodeMachineCheckpoint(checkpoint: MachineCheckpoint): Buffer {
  return Buffer.from(JSON.stringify({ version: 1, ...checkpoint }));
}

/** The checkpoint, or null when there is none or it cannot be read (the stream then starts afresh). */
export function decodeMachineCheckpoint(bytes: Buffer | undefined): MachineCheckpoint | null {
  if (bytes === undefined) return null;
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as Partial<MachineCheckpoint> & { version?: unknown };
    if (parsed.version !== 1 || typeof parsed.baselineUpdatedAtMs !== 'number' || (parsed.lastTsMs !== null && typeof parsed.lastTsMs !== 'number')) return null;
    const stream = parsed.stream;
    if (!stream || !Number.isSafeInteger(stream.judged) || !Array.isArray(stream.distances) || !Array.isArray(stream.parts)) return null;
    return { baselineUpdatedAtMs: parsed.baselineUpdatedAtMs, lastTsMs: parsed.lastTsMs ?? null, stream };
  } catch {
    return null;
  }
}

function latestDrivers(model: MachineModel, step: ReturnType<typeof streamMachine>): string[] {
  const open = step.state.episode;
  if (open !== null) return episodeDrivers(model, open.totals, open.sum).map(({ channel }) => channel);
  const closed = step.closed.at(-1);
  return closed ? closed.episode.channels.map(({ channel }) => channel) : [];
}

/** A machine's joint model as the worker's baseline cache holds it. */
export interface MachineModelOf {
  readonly model: MachineModel;
  readonly updatedAtMs: number;
  readonly sensitivity: number | null;
}

export function machineModelOf(text: string | null | undefined, updatedAtMs: number, sensitivity: number | null): MachineModelOf | null {
  const model = decodeMachineModel(text ?? null);
  return model === null ? null : { model, updatedAtMs, sensitivity };
}

export interface MachineJudged {
  readonly rows: ResultRow[];
  readonly checkpoint: MachineCheckpoint;
  /** Points skipped: at or before the newest judged, or lacking one of the model's channels. */
  readonly skipped: number;
  /** The channels that drove the latest episode (under way, else the last closed in this batch), largest share first; empty: none. */
  readonly drivers: string[];
}

/**
 * Judges a machine's new points against its joint model, from its checkpoint (null: from the
 * baseline on). Points at or before the newest judged one are replays; a point that lacks one of
 * the model's channels cannot be placed in the joint state and is left to the channels' own rows.
 */
export function judgeMachinePoints(input: {
  readonly orgId: string;
  readonly machineId: string;
  readonly points: readonly ChannelPoint[];
  readonly machine: MachineModelOf;
  readonly checkpoint: MachineCheckpoint | null;
  readonly defaultSensitivity: number;
  readonly modelVersion: string;
  readonly writtenAtMs: number;
}): MachineJudged {
  const { model } = input.machine;
  const previous = input.checkpoint !== null && input.checkpoint.baselineUpdatedAtMs === input.machine.updatedAtMs ? input.checkpoint : null;
  let newest = previous?.lastTsMs ?? Number.NEGATIVE_INFINITY;
  const taken: ChannelPoint[] = [];
  for (const point of input.points) {
    if (point.tsMs <= newest || !model.channels.every((channel) => point.readings.has(channel))) continue;
    taken.push(point);
    newest = point.tsMs;
  }
  const state = previous?.stream ?? initialStreamState(model);
  const readings = model.channels.map((channel) => taken.map((point) => point.readings.get(channel)!));
  const step = streamMachine(model, state, readings, input.machine.sensitivity ?? input.defaultSensitivity);
  // Inside an episode (its flags and the dips between them, as far as known) the machine is ACTIVE.
  const episodeFrom = (index: number): boolean => {
    const open = step.state.episode;
    if (open !== null && index >= open.start && index <= open.end) return true;
    return step.closed.some(({ episode }) => index >= episode.start && index <= episode.end);
  };
  const rows = taken.map((point, k): ResultRow => {
    const judged = step.points[k]!;
    const index = state.judged + k;
    return {
      orgId: input.orgId,
      machineId: input.machineId,
      tsMs: point.tsMs,
      value: judged.score,
      expectedValue: 0,
      upperMargin: step.threshold,
      lowerMargin: 0,
      isAnomaly: judged.isAnomaly,
      isPositiveAnomaly: judged.isAnomaly,
      isNegativeAnomaly: false,
      severity: judged.severity,
      energy: null,
      zScore: null,
      regime: judged.isAnomaly || episodeFrom(index) ? 'ACTIVE' : 'HEALTHY',
      modelVersion: input.modelVersion,
      writtenAtMs: input.writtenAtMs,
    };
  });
  return {
    rows,
    checkpoint: { baselineUpdatedAtMs: input.machine.updatedAtMs, lastTsMs: Number.isFinite(newest) ? newest : null, stream: step.state },
    skipped: input.points.length - taken.length,
    drivers: latestDrivers(model, step),
  };
}
