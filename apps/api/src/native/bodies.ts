// The native API's wire bodies built from stored records and model output: baselines (one series
// or a multivariate machine), the telemetry summary, and the number arrays of a detection.
import { seriesEpisodes, type SeriesVerdicts } from '@adp/alerts';
import { decodeMachineModel, machineThreshold } from '@adp/machine';
import type { BaselineRecord } from '@adp/store';
import type { StoredMachineSummary } from '@adp/streaming';
import { AppError, ERRORS } from '../errors.js';
import type { ChannelBaseline } from '../machines/service.js';
import { DEFAULT_SENSITIVITY } from '../vendor/request.js';
import type { BaselineResponse as BaselineBody } from './schemas.js';

/** Embedding components are float32; 6 decimals keep them exact enough and the body a third the size. */
const EMBEDDING_SCALE = 1e6;

export function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}

/** The wire `telemetry` object of GET /v1/machines and GET /v1/status/{machine_id}. */
export function telemetryBody(summary: StoredMachineSummary | null) {
  if (summary === null) return null;
  const counts = summary.regimeCounts;
  return {
    points: summary.points,
    anomalies: summary.anomalies,
    first_point_at: new Date(summary.firstTsMs).toISOString(),
    last_point_at: new Date(summary.lastTsMs).toISOString(),
    regime_counts: {
      HEALTHY: counts.HEALTHY,
      ACTIVE: counts.ACTIVE,
      TRANSITION: counts.TRANSITION,
      SHOCK: counts.SHOCK,
      UNKNOWN: counts.UNKNOWN,
    },
  };
}

export function baselineBody(record: BaselineRecord): BaselineBody {
  const { stats, fineTuneStats: tune } = record;
  return {
    machine_id: record.machineId,
    baseline_id: record.baselineId,
    created_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
    label: record.label,
    granularity: record.granularity,
    sensitivity: record.sensitivity,
    stats: {
      energy_mean: stats.energyMean,
      energy_std: stats.energyStd,
      energy_p99: stats.energyP99,
      num_windows: stats.numWindows,
      series_length: stats.seriesLength,
    },
    finetune_stats: {
      status: tune.status,
      final_loss: tune.finalLoss,
      epochs_run: tune.epochsRun,
      epochs_max: tune.epochsMax,
      early_stopped: tune.earlyStopped,
      windows: tune.windows,
      duration_seconds: tune.durationSeconds,
    },
    shape:
      record.shapeReference == null
        ? null
        : {
            length: record.shapeReference.length,
            reference_points: record.shapeReference.values.length,
            usual_distance: record.shapeReference.center,
            spread: record.shapeReference.spread,
          },
    status: 'active',
  };
}

/** A multivariate machine's record with its channels' baselines. */
export function multivariateBaselineBody(record: BaselineRecord, channels: readonly ChannelBaseline[]): BaselineBody {
  const model = decodeMachineModel(record.machineModel ?? null);
  return {
    ...baselineBody(record),
    machine_model:
      model === null
        ? null
        : {
            kind: model.kind,
            channels: [...model.channels],
            rows: model.rows,
            drifting_channels: model.channels.filter((_, c) => (model.drift[c]?.[c] ?? 0) > 0),
            threshold: machineThreshold(model, record.sensitivity ?? DEFAULT_SENSITIVITY),
          },
    channels: channels.map(({ channel, record: channelRecord }) => {
      const { stats, finetune_stats, shape, baseline_id, machine_id } = baselineBody(channelRecord);
      return { channel, series_id: machine_id, baseline_id, stats, finetune_stats, shape };
    }),
  };
}

export function finiteOrFail(values: ArrayLike<number>, what: string): number[] {
  const out = new Array<number>(values.length);
  for (let index = 0; index < values.length; index++) {
    const value = values[index] ?? Number.NaN;
    if (!Number.isFinite(value)) {
      throw new AppError(ERRORS.InvalidSeries, `The series' values are out of the learned model's range (${what} overflow at index ${index}).`);
    }
    out[index] = value;
  }
  return out;
}

export function roundedEmbeddings(embeddings: readonly Float32Array[]): number[][] {
  return embeddings.map((embedding) => {
    const out = new Array<number>(embedding.length);
    for (let index = 0; index < embedding.length; index++) {
      out[index] = Math.round((embedding[index] ?? 0) * EMBEDDING_SCALE) / EMBEDDING_SCALE;
    }
    return out;
  });
}


/** A series' episodes on the wire: the stream's rule (@adp/alerts seriesEpisodes) over the answer's flags. */
export function episodesBody(verdicts: SeriesVerdicts, timestampsMs: ArrayLike<number> | null | undefined) {
  const at = (index: number): string | null => (timestampsMs ? new Date(timestampsMs[index] ?? 0).toISOString() : null);
  return seriesEpisodes(verdicts).map(({ start, end, peak, severity, flaggedPoints, direction, closed }) => ({
    start,
    end,
    start_timestamp: at(start),
    end_timestamp: at(end),
    peak,
    severity,
    flagged_points: flaggedPoints,
    direction,
    closed,
  }));
}
