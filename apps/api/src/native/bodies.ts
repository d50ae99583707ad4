// The native API's wire bodies built from stored records and model output: baselines (one series
// or a multivariate machine), the telemetry summary, and the number arrays of a detection.
import type { SeriesEpisode } from '@adp/alerts';
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

/**
 * Significant digits of an energy on the wire: the model computes in float32, and onnxruntime's
 * batching alone moves an energy by up to 1e-5 of itself, so a seventh digit says nothing.
 */
export const ENERGY_DIGITS = 6;
/**
 * Decimals of a z-score or shape score on the wire (to 5e-6): below what the float32 energies
 * behind a z-score can tell apart, and far below any threshold's resolution.
 */
export const SCORE_DECIMALS = 5;
/**
 * Data-unit numbers (expected values, margins) are written to this share of the series' range,
 * as a power of ten: 50 times finer than a pixel of a 2,000-pixel chart of the whole range, and
 * far finer than the expected values' own uncertainty (the series' noise).
 */
const DATA_RESOLUTION = 1e-5;

/** `values` rounded to `decimals` places after the point (negative: to tens, hundreds...). */
export function roundedDecimals(values: readonly number[], decimals: number): number[] {
  const out = new Array<number>(values.length);
  if (decimals >= 0) {
    const scale = 10 ** decimals;
    for (let index = 0; index < values.length; index++) out[index] = Math.round(values[index]! * scale) / scale;
  } else {
    // 10 ** -k is exact for integer k; 10 ** k for negative k is not.
    const step = 10 ** -decimals;
    for (let index = 0; index < values.length; index++) out[index] = Math.round(values[index]! / step) * step;
  }
  return out;
}

/** `values` rounded to `digits` significant digits each. */
export function roundedSignificant(values: readonly number[], digits: number): number[] {
  const out = new Array<number>(values.length);
  for (let index = 0; index < values.length; index++) {
    const value = values[index]!;
    if (value === 0) {
      out[index] = 0;
      continue;
    }
    const decimals = digits - 1 - Math.floor(Math.log10(Math.abs(value)));
    out[index] = decimals >= 0 ? Math.round(value * 10 ** decimals) / 10 ** decimals : Math.round(value / 10 ** -decimals) * 10 ** -decimals;
  }
  return out;
}

/**
 * Decimals that write a series' data-unit numbers to DATA_RESOLUTION of its range (of its largest
 * magnitude when flat): 4 decimals for values spanning 73 to 165.
 */
export function dataDecimals(values: ArrayLike<number>): number {
  let low = Number.POSITIVE_INFINITY;
  let high = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < values.length; index++) {
    const value = values[index]!;
    if (value < low) low = value;
    if (value > high) high = value;
  }
  let span = high - low;
  if (!(span > 0)) span = Math.max(Math.abs(low), Math.abs(high));
  // A flat series of zeros, or a range too small for a double: full precision is cheap there.
  if (!(span > 1e-300) || !Number.isFinite(span)) return 17;
  return Math.min(17, -Math.floor(Math.log10(span * DATA_RESOLUTION)));
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


/** A series' episodes on the wire (@adp/alerts seriesEpisodes over the answer's flags: the stream's rule). */
export function episodesBody(episodes: readonly SeriesEpisode[], timestampsMs: ArrayLike<number> | null | undefined) {
  const at = (index: number): string | null => (timestampsMs ? new Date(timestampsMs[index] ?? 0).toISOString() : null);
  return episodes.map(({ start, end, peak, severity, flaggedPoints, direction, closed }) => ({
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
