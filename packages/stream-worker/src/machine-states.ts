// The multi-channel machines of a batch that have a joint model of their channels: their stream
// state read from its checkpoint (each batch: it is small, and a rebalance or a retry then needs
// nothing else), and their verdict rows and next checkpoint (machine-verdicts.ts).
import { decodeEpisodeState, NO_EPISODE, type EpisodeState } from '@adp/alerts';
import type { CheckpointStore, ResultRow } from '@adp/streaming';
import type { BaselineCache } from './baselines.js';
import type { MachinePoints } from './decode.js';
import {
  decodeMachineCheckpoint,
  encodeMachineCheckpoint,
  judgeMachinePoints,
  type ChannelPoint,
  type MachineCheckpoint,
  type MachineModelOf,
} from './machine-verdicts.js';
import type { CheckpointKeys } from './offsets.js';

export interface MachineState {
  readonly orgId: string;
  readonly machineId: string;
  readonly points: ChannelPoint[];
  readonly machine: MachineModelOf;
  readonly checkpoint: MachineCheckpoint | null;
  /** The machine's own alert episode (its joint model's flags), under its own id. */
  readonly alertEpisode: EpisodeState;
}

/** The machines among `candidates` that have a joint model, with their stream state. */
export async function loadMachineStates(
  candidates: readonly MachinePoints[],
  deps: {
    readonly baselines: Pick<BaselineCache, 'get'>;
    readonly checkpoints: Pick<CheckpointStore, 'load'>;
    readonly keys: CheckpointKeys;
    /** Whether alert episodes are kept (alerts on). */
    readonly episodes: boolean;
  },
): Promise<MachineState[]> {
  if (candidates.length === 0) return [];
  const found = await Promise.all(
    candidates.map(async (candidate) => ({ ...candidate, machine: (await deps.baselines.get(candidate.orgId, candidate.machineId))?.machine ?? null })),
  );
  const modelled = found.filter((candidate): candidate is typeof candidate & { machine: MachineModelOf } => candidate.machine !== null);
  if (modelled.length === 0) return [];
  const { keys } = deps;
  const stateKey = (candidate: MachinePoints): string => keys.machine(candidate.orgId, candidate.machineId);
  const alertKey = (candidate: MachinePoints): string => keys.episode(`${candidate.orgId}/${candidate.machineId}`);
  const stored = await deps.checkpoints.load(modelled.flatMap((candidate) => (deps.episodes ? [stateKey(candidate), alertKey(candidate)] : [stateKey(candidate)])));
  return modelled.map((candidate) => ({
    ...candidate,
    checkpoint: decodeMachineCheckpoint(stored.get(stateKey(candidate))),
    alertEpisode: deps.episodes ? decodeEpisodeState(stored.get(alertKey(candidate))) : NO_EPISODE,
  }));
}

/** A judged machine: its rows, the channels that drove its flags, and its episode before them. */
export interface JudgedMachine {
  readonly orgId: string;
  readonly machineId: string;
  readonly rows: ResultRow[];
  readonly drivers: string[];
  readonly alertEpisode: EpisodeState;
}

/** Judges each machine's points; their rows, and their next checkpoints by key. */
export function judgeMachines(
  machines: readonly MachineState[],
  settings: { readonly defaultSensitivity: number; readonly writtenAtMs: number; readonly keys: CheckpointKeys },
): { judged: JudgedMachine[]; checkpoints: Map<string, Buffer> } {
  const judged: JudgedMachine[] = [];
  const checkpoints = new Map<string, Buffer>();
  for (const { orgId, machineId, points, machine, checkpoint, alertEpisode } of machines) {
    const result = judgeMachinePoints({
      orgId,
      machineId,
      points,
      machine,
      checkpoint,
      defaultSensitivity: settings.defaultSensitivity,
      modelVersion: `machine-${machine.model.kind}`,
      writtenAtMs: settings.writtenAtMs,
    });
    judged.push({ orgId, machineId, rows: result.rows, drivers: result.drivers, alertEpisode });
    checkpoints.set(settings.keys.machine(orgId, machineId), encodeMachineCheckpoint(result.checkpoint));
  }
  return { judged, checkpoints };
}
