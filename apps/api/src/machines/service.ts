// Per-machine baselines: fine-tuning orchestration, persistence and the predictor cache.
//
// Baseline writes (and deletes) for one machine run one at a time, in arrival order, so two
// concurrent calls end in one whole baseline (the later one's) instead of a mix of weights from
// one and statistics from the other. Fine-tuning runs in the model's worker thread; the event
// loop only waits for it. Detection never waits for a baseline write: it reads the last committed
// baseline.
//
// The machine inventory (list and status) merges two sources: the platform store (baselines,
// detection counters) and, where one is injected, the streaming ResultStore (machines that sent
// telemetry, with per-machine aggregates of their stored results). The list holds the machines
// with a baseline unless asked for the rest too; a status answers for either. If the ResultStore
// cannot answer, the inventory answers 503 rather than leave its summaries out. Deleting a
// machine reaches both sources, the workers' checkpoints and, through the notifier, their memory.
import { baselineLevelModel, decodeMachineModel, encodeMachineModel, fitMachineModel, type MachineModel } from '@adp/machine';
import type { BaselineFineTuneStats, BaselineRecord, BaselineStats, MachineDetection, MachineStatusRecord, MachineSummary, ShapeReference, Store } from '@adp/store';
import { shapeReferenceInSlices } from '@adp/detection';
import { nextTurn } from './next-turn.js';
import { decodePredictorWeights, encodePredictorWeights, WINDOW_POINTS, type FineTuneOptions, type Normalisation, type PredictorWeights } from '@adp/model';
import { AppError, ERRORS } from '../errors.js';
import { givenEnergyStats, heldOutEnergyStats } from './energy-stats.js';
import { KeyedSerialiser } from './keyed-serialiser.js';
import type { ModelHolder } from './model.js';
import {
  channelSeriesId,
  GenerationalCache,
  channelPrefixOf,
  isSeriesOfMachine,
  type CheckpointStore,
  type ResultStore,
  type StoredMachineSummary,
} from '@adp/streaming';

export interface BaselineServiceOptions {
  readonly store: Store;
  readonly model: ModelHolder;
  /** Most machines whose predictors stay loaded; 0 disables the cache. */
  readonly cacheSize: number;
  /**
   * Called after a baseline is created, replaced or deleted (once the store has it), so the other
   * replicas can drop their cached predictor. Awaited inside the write, so it runs before the next
   * write of the same machine; it must not reject (log instead).
   */
  readonly onChanged?: (orgId: string, machineId: string, change?: { readonly deleted: boolean }) => Promise<void>;
  /**
   * The streaming results, for the telemetry part of the inventory. Absent: no machine has a
   * telemetry summary (`telemetry` null everywhere) and only the store's machines are listed.
   */
  readonly results?: Pick<ResultStore, 'machines' | 'deleteMachine'>;
  /** The workers' checkpoints, so a deleted machine's trailing windows go too. Absent: none kept here. */
  readonly checkpoints?: Pick<CheckpointStore, 'deleteMachine'>;
}

/** What a deletion removed. */
export interface MachineDeletion {
  /** False when nothing of the machine was found. */
  readonly deleted: boolean;
  /** A baseline of the machine or of one of its channels was removed. */
  readonly baselineDeleted: boolean;
  /** Stored streaming results of the machine or of its channels were removed. */
  readonly resultsDeleted: boolean;
}

/** One machine of the inventory: what the store knows (nulls when it knows nothing) plus its telemetry summary. */
export interface MachineListing {
  readonly machineId: string;
  readonly baselineCreatedAt: Date | null;
  readonly numWindows: number | null;
  readonly label: string | null;
  /** A multivariate machine's channels (absent for a single series). */
  readonly channels?: readonly string[];
  /** Aggregates of the machine's stored streaming results; null when it has none. */
  readonly telemetry: StoredMachineSummary | null;
}

/** A machine's status: the store's record (null for a machine known only from its results) and its telemetry summary. */
export interface MachineInventoryStatus {
  readonly record: MachineStatusRecord | null;
  readonly telemetry: StoredMachineSummary | null;
}

/** What a baseline request carries besides its data. */
export interface BaselineSettings {
  readonly machineId: string;
  /** Null: not given, so a replaced baseline keeps the label it had. */
  readonly label: string | null;
  readonly granularity: string | null;
  readonly sensitivity: number | null;
}

/** One channel's healthy values for a multivariate baseline. */
export interface ChannelValues {
  readonly channel: string;
  readonly values: readonly number[];
}

/** A channel's stored baseline (under `<machine_id>:<channel>`). */
export interface ChannelBaseline {
  readonly channel: string;
  readonly record: BaselineRecord;
}

/** A multivariate machine's record and its channels' baselines. */
export interface MultivariateBaseline {
  readonly record: BaselineRecord;
  readonly channels: readonly ChannelBaseline[];
}

interface TunedSeries {
  readonly weights: PredictorWeights;
  readonly normalisation: Normalisation;
  readonly energyStats: BaselineStats;
  /** The held-out tail's energies (the statistics' input). */
  readonly heldOut: number[];
  readonly stats: BaselineFineTuneStats;
  /** The healthy values' shapes (null for a series too short to have any). */
  readonly shapeReference: ShapeReference | null;
}

/** A channel's failure names the channel; the code stays. */
function inChannel(error: unknown, channel: string): unknown {
  if (!(error instanceof AppError)) return error;
  const definition = Object.values(ERRORS).find((candidate) => candidate.code === error.code);
  return definition ? new AppError(definition, `Channel '${channel}': ${error.message}`, { cause: error }) : error;
}

/** A baseline without its weight bytes, plus the decoded predictor (null: statistics only). */
export interface MachinePredictor {
  readonly baseline: Omit<BaselineRecord, 'predictorWeights'>;
  readonly weights: PredictorWeights | null;
  readonly normalisation: Normalisation | null;
  /** A multivariate machine's joint model of its channels; null for a single series or a machine baselined before it was kept. */
  readonly machineModel: MachineModel | null;
  /**
   * A single series' model of its healthy level and spread, fitted on the healthy values its
   * baseline keeps for its shapes, over the shapes' length (its cycle); null for a multivariate
   * record or without kept values.
   */
  readonly levelModel: MachineModel | null;
}

export function baselineIdOf(machineId: string): string {
  return `bl_${machineId}`;
}

function cacheKey(orgId: string, machineId: string): string {
  // JSON keeps the pair unambiguous whatever characters either part holds.
  return JSON.stringify([orgId, machineId]);
}

const SKIPPED_FINE_TUNE: BaselineFineTuneStats = Object.freeze({
  status: 'skipped',
  finalLoss: null,
  epochsRun: 0,
  epochsMax: 0,
  earlyStopped: false,
  windows: 0,
  durationSeconds: 0,
});

/** A multivariate machine's channels: the ridge solved over the training pairs where that is the cheaper form. */
const CHANNEL_FINE_TUNE: FineTuneOptions = Object.freeze({ ridgeForm: 'auto' });

export class BaselineService {
  private readonly writes = new KeyedSerialiser();
  private readonly cache: GenerationalCache<MachinePredictor>;

  constructor(private readonly options: BaselineServiceOptions) {
    this.cache = new GenerationalCache(options.cacheSize);
  }

  /**
   * Fine-tunes on healthy `values`, measures the fine-tuned energies on the held-out tail the fit
   * did not train on, and stores the baseline.
   */
  fromSeries(orgId: string, settings: BaselineSettings, values: readonly number[]): Promise<BaselineRecord> {
    return this.writes.run(cacheKey(orgId, settings.machineId), async () => {
      const labelled = await this.keepingLabel(orgId, settings);
      const tuned = await this.tune(values);
      return this.writeTuned(orgId, labelled, tuned);
    });
  }

  /**
   * A multivariate machine: fine-tunes every channel (in parallel) on its healthy values,
   * then stores each channel's baseline under `<machineId>:<channel>` (where the streaming
   * workers look for a channel's baseline) and the machine's record listing the channels. Nothing
   * is written unless every channel fine-tuned. Channels of the machine's previous record that
   * this one leaves out lose their baselines.
   */
  fromChannels(orgId: string, settings: BaselineSettings, channels: readonly ChannelValues[]): Promise<MultivariateBaseline> {
    return this.writes.run(cacheKey(orgId, settings.machineId), async () => {
      const labelled = await this.keepingLabel(orgId, settings);
      // All at once: the model's threads share them out (one per core); a failure names the first
      // failing channel in the request's order, whichever failed first in time. A channel's ridge is
      // solved over its training pairs where they are fewer than the predictor's features (a
      // machine's healthy start of a few hundred rows): the same solution, solved closer to exactly,
      // in a fraction of the time (docs/machine-model.md).
      const tuning = Promise.allSettled(channels.map(({ values }) => this.tune(values, CHANNEL_FINE_TUNE)));
      // The joint model of the channels: pure (no model runs), fitted on the same healthy rows on
      // this thread while the model's threads fine-tune (after a turn, so the fine-tunes are sent first).
      // A failing fit is reported after the channels' failures, as when it ran after them.
      await nextTurn();
      let fitted: { readonly model: MachineModel } | { readonly error: unknown };
      try {
        fitted = { model: fitMachineModel({ channels: channels.map(({ channel }) => channel), values: channels.map(({ values }) => values) }) };
      } catch (error) {
        fitted = { error };
      }
      const settled = await tuning;
      const tunedChannels = settled.map((outcome, index) => {
        const channel = channels[index]!.channel;
        if (outcome.status === 'rejected') throw inChannel(outcome.reason, channel);
        return { channel, tuned: outcome.value };
      });
      if ('error' in fitted) throw fitted.error;
      const machineModel = fitted.model;
      const previous = (await this.options.store.getBaseline(orgId, settings.machineId))?.channels ?? [];
      const written: ChannelBaseline[] = [];
      for (const { channel, tuned } of tunedChannels) {
        const seriesId = channelSeriesId(settings.machineId, channel);
        written.push({ channel, record: await this.writeTuned(orgId, { ...labelled, machineId: seriesId }, tuned) });
      }
      for (const channel of previous.filter((name) => !channels.some((given) => given.channel === name))) {
        const seriesId = channelSeriesId(settings.machineId, channel);
        await this.options.store.deleteMachine(orgId, seriesId);
        this.cache.replace(cacheKey(orgId, seriesId), undefined);
        await this.options.onChanged?.(orgId, seriesId);
      }
      const tunes = tunedChannels.map(({ tuned }) => tuned.stats);
      const losses = tunes.map((tune) => tune.finalLoss).filter((loss): loss is number => loss !== null);
      const record = await this.options.store.upsertBaseline(orgId, {
        ...labelled,
        baselineId: baselineIdOf(settings.machineId),
        // The channels' held-out energies pooled: each channel is scaled by its own normalisation,
        // so their energies are comparable; detection judges each channel by its own statistics.
        stats: { ...givenEnergyStats(tunedChannels.flatMap(({ tuned }) => tuned.heldOut)), seriesLength: channels[0]?.values.length ?? 0 },
        fineTuneStats: {
          status: 'completed',
          finalLoss: losses.length === 0 ? null : losses.reduce((sum, loss) => sum + loss, 0) / losses.length,
          epochsRun: Math.max(...tunes.map((tune) => tune.epochsRun)),
          epochsMax: Math.max(...tunes.map((tune) => tune.epochsMax)),
          earlyStopped: tunes.some((tune) => tune.earlyStopped),
          windows: tunes.reduce((sum, tune) => sum + tune.windows, 0),
          durationSeconds: tunes.reduce((sum, tune) => sum + tune.durationSeconds, 0),
        },
        predictorWeights: null,
        normalisation: null,
        channels: channels.map(({ channel }) => channel),
        machineModel: encodeMachineModel(machineModel),
      });
      this.cache.replace(cacheKey(orgId, settings.machineId), toPredictor(record, null));
      await this.options.onChanged?.(orgId, settings.machineId);
      return { record, channels: written };
    });
  }

  /** The channels' current baselines of a multivariate record, in its order (a channel deleted on its own is left out). */
  async channelBaselines(orgId: string, record: BaselineRecord): Promise<ChannelBaseline[]> {
    const found: ChannelBaseline[] = [];
    for (const channel of record.channels ?? []) {
      const channelRecord = await this.options.store.getBaseline(orgId, channelSeriesId(record.machineId, channel));
      if (channelRecord) found.push({ channel, record: channelRecord });
    }
    return found;
  }

  /** Fine-tunes on healthy `values` and measures the fine-tuned energies on the held-out tail the fit did not train on. */
  private async tune(values: readonly number[], options?: FineTuneOptions): Promise<TunedSeries> {
    const model = await this.options.model.get();
    const tuned = await model.fineTune(values, options);
    const { energies } = await model.energies(values, { weights: tuned.weights, normalisation: tuned.normalisation });
    const stats = heldOutEnergyStats(energies, tuned.heldOutFrom);
    // Every energy, not only the held-out ones the statistics use: a series the model cannot
    // score anywhere is out of range as a whole.
    const finite = Array.prototype.every.call(energies, (energy: number) => Number.isFinite(energy));
    if (!finite || ![stats.energyMean, stats.energyStd, stats.energyP99].every(Number.isFinite)) {
      // As POST /v1/detect answers for such values: their energies overflow (a reading of 1e100
      // beside readings near 1 is 1e100 scales out).
      throw new AppError(ERRORS.InvalidSeries, "The series' values are out of the learned model's range (energy overflow).");
    }
    return {
      weights: tuned.weights,
      normalisation: tuned.normalisation,
      energyStats: stats,
      heldOut: Array.prototype.slice.call(energies, Math.max(WINDOW_POINTS, tuned.heldOutFrom)) as number[],
      stats: { ...tuned.stats, finalLoss: Number.isFinite(tuned.stats.finalLoss) ? tuned.stats.finalLoss : null },
      shapeReference: await shapeReferenceInSlices(values, nextTurn),
    };
  }

  private async writeTuned(orgId: string, settings: BaselineSettings, tuned: TunedSeries): Promise<BaselineRecord> {
    const record = await this.options.store.upsertBaseline(orgId, {
      ...settings,
      baselineId: baselineIdOf(settings.machineId),
      stats: tuned.energyStats,
      fineTuneStats: tuned.stats,
      predictorWeights: encodePredictorWeights(tuned.weights),
      normalisation: { center: tuned.normalisation.center, scale: tuned.normalisation.scale },
      shapeReference: tuned.shapeReference,
    });
    this.cache.replace(cacheKey(orgId, settings.machineId), toPredictor(record, tuned.weights));
    await this.options.onChanged?.(orgId, settings.machineId);
    return record;
  }

  /** Stores statistics of energies the caller computed; detection keeps the generic predictor. */
  fromEnergies(orgId: string, settings: BaselineSettings, energies: readonly number[]): Promise<BaselineRecord> {
    return this.writes.run(cacheKey(orgId, settings.machineId), async () => {
      const record = await this.options.store.upsertBaseline(orgId, {
        ...(await this.keepingLabel(orgId, settings)),
        baselineId: baselineIdOf(settings.machineId),
        stats: givenEnergyStats(energies),
        fineTuneStats: SKIPPED_FINE_TUNE,
        predictorWeights: null,
        normalisation: null,
      });
      this.cache.replace(cacheKey(orgId, settings.machineId), toPredictor(record, null));
      await this.options.onChanged?.(orgId, settings.machineId);
      return record;
    });
  }

  /**
   * The settings with the current baseline's label when the request gave none. Runs inside the
   * machine's write queue, so no write of this replica lands between the read and the upsert.
   */
  private async keepingLabel(orgId: string, settings: BaselineSettings): Promise<BaselineSettings> {
    if (settings.label !== null) return settings;
    const current = await this.options.store.getBaseline(orgId, settings.machineId);
    return current?.label ? { ...settings, label: current.label } : settings;
  }

  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    return this.options.store.getBaseline(orgId, machineId);
  }

  /**
   * The machines with a baseline, ascending by id (code-unit order, as both stores sort). With
   * `includeTelemetry`, also the store's machines without one and the machines known only from
   * stored results, merged by id. Rejects with 503 ServiceUnavailable when the results store
   * cannot answer.
   */
  async listMachines(orgId: string, includeTelemetry = false): Promise<MachineListing[]> {
    const [all, stored] = await Promise.all([this.options.store.listMachines(orgId), this.storedMachines(orgId)]);
    // A multivariate machine is listed once: its channels' series are part of it.
    const channelSeries = new Set(
      all.flatMap((machine) => (machine.channels ?? []).map((channel) => channelSeriesId(machine.machineId, channel))),
    );
    const known = (includeTelemetry ? all : all.filter((machine) => machine.baselineCreatedAt !== null)).filter(
      (machine) => !channelSeries.has(machine.machineId),
    );
    const telemetry = new Map(stored.map((summary) => [summary.machineId, summary]));
    const listed: MachineListing[] = known.map((machine: MachineSummary) => ({
      machineId: machine.machineId,
      baselineCreatedAt: machine.baselineCreatedAt,
      numWindows: machine.numWindows,
      label: machine.label,
      ...(machine.channels ? { channels: machine.channels } : {}),
      telemetry: telemetry.get(machine.machineId) ?? null,
    }));
    const inStore = new Set(known.map((machine) => machine.machineId));
    for (const summary of includeTelemetry ? stored : []) {
      if (inStore.has(summary.machineId) || channelSeries.has(summary.machineId)) continue;
      listed.push({ machineId: summary.machineId, baselineCreatedAt: null, numWindows: null, label: null, telemetry: summary });
    }
    return listed.sort((a, b) => (a.machineId < b.machineId ? -1 : a.machineId > b.machineId ? 1 : 0));
  }

  /**
   * The store's status record and the telemetry summary of one machine; null when neither source
   * knows it. Rejects with 503 ServiceUnavailable when the results store cannot answer.
   */
  async machineStatus(orgId: string, machineId: string): Promise<MachineInventoryStatus | null> {
    const [record, stored] = await Promise.all([this.options.store.machineStatus(orgId, machineId), this.storedMachines(orgId)]);
    const telemetry = stored.find((summary) => summary.machineId === machineId) ?? null;
    if (record === null && telemetry === null) return null;
    return { record, telemetry };
  }

  /** The organization's machines with stored results (none without a results store). */
  private async storedMachines(orgId: string): Promise<readonly StoredMachineSummary[]> {
    const results = this.options.results;
    if (!results) return [];
    try {
      return await results.machines(orgId);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'The results store cannot be reached right now. Retry shortly.', { cause });
    }
  }

  /**
   * Forgets the machine's cached predictor because another replica changed its baseline. Bumps the
   * generation, so a load that started before this cannot put the old predictor back.
   */
  dropCached(orgId: string, machineId: string): void {
    this.cache.drop(cacheKey(orgId, machineId));
  }

  /** Whether the machine's predictor is loaded in memory now (for the status endpoint). */
  isLoaded(orgId: string, machineId: string): boolean {
    return this.cache.has(cacheKey(orgId, machineId));
  }

  /**
   * Removes the machine and its channels (`<machineId>:<channel>`, unless the id holds ':'): their
   * baselines, predictors and counters, stored streaming results, worker checkpoints, feedback and
   * alert log, then
   * tells the workers and the other replicas, which forget their windows and cached predictors.
   * Queued behind any baseline write in flight. Store and results-store failures reject (503);
   * what was removed before one stays removed and a retry finishes the rest.
   */
  deleteMachine(orgId: string, machineId: string): Promise<MachineDeletion> {
    const key = cacheKey(orgId, machineId);
    return this.writes.run(key, async () => {
      const store = this.options.store;
      const channels = (await store.listMachines(orgId))
        .map((machine) => machine.machineId)
        .filter((id) => id !== machineId && isSeriesOfMachine(id, machineId));
      let deleted = false;
      let baselineDeleted = false;
      for (const id of [machineId, ...channels]) {
        const result = await store.deleteMachine(orgId, id);
        deleted ||= result.deleted;
        baselineDeleted ||= result.baselineDeleted;
        this.cache.replace(cacheKey(orgId, id), undefined);
      }
      const resultsDeleted = await this.deleteStored(orgId, machineId);
      await this.options.checkpoints?.deleteMachine(orgId, machineId).catch((cause: unknown) => {
        throw new AppError(ERRORS.ServiceUnavailable, "The machine's checkpoints could not be deleted right now. Retry shortly.", { cause });
      });
      const alertingDeleted = await this.deleteAlerting(orgId, machineId);
      deleted ||= resultsDeleted || alertingDeleted;
      if (deleted) await this.options.onChanged?.(orgId, machineId, { deleted: true });
      return { deleted, baselineDeleted, resultsDeleted };
    });
  }

  /**
   * The feedback on the machine and its channels, and its alert log, go with it: feedback describes
   * stored results that are gone. Webhook targets naming the machine in `machine_ids` keep it: a
   * machine id is the organization's name for it, and telemetry sent under it again alerts them.
   */
  private async deleteAlerting(orgId: string, machineId: string): Promise<boolean> {
    const alerting = this.options.store.alerting;
    if (!alerting) return false;
    try {
      const feedback = await alerting.deleteMachineFeedback(orgId, machineId, channelPrefixOf(machineId));
      const alerts = await alerting.deleteAlerts(orgId, machineId);
      return feedback > 0 || alerts > 0;
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, "The machine's feedback and alerts could not be deleted right now. Retry shortly.", { cause });
    }
  }

  private async deleteStored(orgId: string, machineId: string): Promise<boolean> {
    const results = this.options.results;
    if (!results) return false;
    try {
      return await results.deleteMachine(orgId, machineId);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'The results store cannot be reached right now. Retry shortly.', { cause });
    }
  }

  /** The machine's predictor for detection, from the cache or the store; null without a baseline. */
  async predictorFor(orgId: string, machineId: string): Promise<MachinePredictor | null> {
    const key = cacheKey(orgId, machineId);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const generation = this.cache.generation(key);
    const record = await this.options.store.getBaseline(orgId, machineId);
    if (!record) return null;
    const weights = record.predictorWeights === null ? null : decodePredictorWeights(record.predictorWeights);
    const predictor = toPredictor(record, weights);
    this.cache.setIfCurrent(key, generation, predictor);
    return predictor;
  }

  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void> {
    return this.options.store.recordDetection(orgId, machineId, detection);
  }
}

function toPredictor(record: BaselineRecord, weights: PredictorWeights | null): MachinePredictor {
  const { predictorWeights: _bytes, ...baseline } = record;
  return {
    baseline,
    weights,
    normalisation: record.normalisation,
    machineModel: decodeMachineModel(record.machineModel ?? null),
    levelModel: baselineLevelModel(record),
  };
}
