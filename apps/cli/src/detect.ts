// From a parsed series and command to one output record per point. Pure: calls the engine only.
import { MAX_SERIES_POINTS } from '@adp/domain';
import {
  SeriesError,
  detectChangePointSeries,
  detectEntireSeries,
  detectLastPoint,
  detectPeriod,
  detectStream,
  STREAM_DEFAULTS,
  suggestedWindow,
  type DetectOptions,
  type SeriesInput,
} from '@adp/detection';
import type { DetectCommand } from './args.js';
import type { CsvSeries } from './csv.js';
import { CliError } from './errors.js';

/**
 * Largest series `entire` and `changepoint` take: the API's limit. Those modes model the whole
 * series at once, so the CLI keeps to what the service would answer rather than give results no
 * API call can reproduce. `stream` reads any length (each point sees only its trailing window);
 * `last` reads any length and judges the last point from the trailing MAX_BATCH_POINTS.
 */
export const MAX_BATCH_POINTS = MAX_SERIES_POINTS;

/** One line of output: the fields of the vendor's per-point results, named in the singular. */
export interface PointRecord {
  readonly timestamp: string;
  readonly value: number;
  readonly expectedValue: number;
  readonly upperMargin: number;
  readonly lowerMargin: number;
  readonly isAnomaly: boolean;
  readonly isPositiveAnomaly: boolean;
  readonly isNegativeAnomaly: boolean;
  readonly severity: number;
  /** changepoint mode only. */
  readonly isChangePoint?: boolean;
  /** changepoint mode only. */
  readonly confidenceScore?: number;
}

/**
 * The fixed stream window of `--window suggested`: the service's suggested window for the whole
 * file's period (period*4+1, at least the worker's 720 points; 720 without a period).
 */
export function defaultStreamWindow(period: number): number {
  return suggestedWindow(period, 'none');
}

function seriesInput(series: CsvSeries, command: DetectCommand, from = 0): SeriesInput {
  const base = {
    // Timestamps only matter when they define a grid; with `none` the engine ignores them.
    timestampsMs: command.granularity === 'none' ? null : series.timestampsMs.slice(from),
    values: series.values.slice(from),
    granularity: command.granularity,
    customInterval: command.customInterval,
    imputeMode: command.imputeMode,
  };
  return command.imputeFixedValue === undefined ? base : { ...base, imputeFixedValue: command.imputeFixedValue };
}

function detectOptions(command: DetectCommand, period: number | undefined): DetectOptions {
  const base = { sensitivity: command.sensitivity, maxAnomalyRatio: command.maxAnomalyRatio };
  return period === undefined ? base : { ...base, period };
}

/** Runs the command's mode. Engine rejections become data errors with the engine's message. */
export function detectRecords(series: CsvSeries, command: DetectCommand): PointRecord[] {
  try {
    return runMode(series, command);
  } catch (err) {
    if (err instanceof SeriesError) throw new CliError('InvalidSeries', `${err.code}: ${err.message}`);
    throw err;
  }
}

function runMode(series: CsvSeries, command: DetectCommand): PointRecord[] {
  const n = series.values.length;
  switch (command.mode) {
    case 'entire':
    case 'changepoint': {
      if (n > MAX_BATCH_POINTS) {
        throw new CliError(
          'TooManyPoints',
          `the file has ${n} points; --mode ${command.mode} takes at most ${MAX_BATCH_POINTS} (the API's limit). ` +
            'Send it to the service as a detection job (--server URL --key KEY), use --mode stream, or split the file.',
        );
      }
      const input = seriesInput(series, command);
      const entire = detectEntireSeries(input, detectOptions(command, command.period));
      const changes =
        command.mode === 'changepoint'
          ? detectChangePointSeries(input, {
              ...(command.period === undefined ? {} : { period: command.period }),
              ...(command.threshold === undefined ? {} : { threshold: command.threshold }),
              ...(command.stableTrendWindow === undefined ? {} : { stableTrendWindow: command.stableTrendWindow }),
            })
          : undefined;
      const records: PointRecord[] = [];
      for (let i = 0; i < n; i++) {
        const record: PointRecord = {
          timestamp: series.timestamps[i] as string,
          value: series.values[i] as number,
          expectedValue: entire.expectedValues[i] as number,
          upperMargin: entire.upperMargins[i] as number,
          lowerMargin: entire.lowerMargins[i] as number,
          isAnomaly: entire.isAnomaly[i] as boolean,
          isPositiveAnomaly: entire.isPositiveAnomaly[i] as boolean,
          isNegativeAnomaly: entire.isNegativeAnomaly[i] as boolean,
          severity: entire.severity[i] as number,
        };
        records.push(
          changes === undefined
            ? record
            : { ...record, isChangePoint: changes.isChangePoint[i] as boolean, confidenceScore: changes.confidenceScores[i] as number },
        );
      }
      return records;
    }
    case 'last': {
      // What last/detect answers for the file's points; a longer file is cut to its trailing
      // MAX_BATCH_POINTS, which is all the API would take.
      const from = Math.max(0, n - MAX_BATCH_POINTS);
      const last = detectLastPoint(seriesInput(series, command, from), detectOptions(command, command.period));
      return [
        {
          timestamp: series.timestamps[n - 1] as string,
          value: series.values[n - 1] as number,
          expectedValue: last.expectedValue,
          upperMargin: last.upperMargin,
          lowerMargin: last.lowerMargin,
          isAnomaly: last.isAnomaly,
          isPositiveAnomaly: last.isPositiveAnomaly,
          isNegativeAnomaly: last.isNegativeAnomaly,
          severity: last.severity,
        },
      ];
    }
    case 'stream': {
      // `follow` (the default) judges as the streaming worker: from its window, grown to 4
      // periods + 1 whenever a verdict finds a longer period. `suggested` fixes the window the
      // whole file's period suggests; each window then detects its own period (as a client
      // sending no period would get), unless --period fixes it.
      const follow = command.windowPoints === 'follow';
      const windowPoints =
        command.windowPoints === 'follow'
          ? STREAM_DEFAULTS.windowPoints
          : command.windowPoints === 'suggested'
            ? defaultStreamWindow(command.period ?? detectPeriod(series.values, command.granularity, command.customInterval))
            : command.windowPoints;
      if (command.minHistory !== undefined && command.minHistory > windowPoints) {
        throw new CliError(
          'BadFlagValue',
          `--min-history ${command.minHistory} is larger than the window (${windowPoints} points): no point would be judged`,
        );
      }
      const results = detectStream(seriesInput(series, command), {
        ...detectOptions(command, command.period),
        windowPoints,
        memoryPoints: command.memoryPoints,
        ...(follow ? { followSuggestedWindow: true } : {}),
        ...(command.minHistory === undefined ? {} : { minHistory: command.minHistory }),
      });
      return results.map((r, i) => ({
        timestamp: series.timestamps[i] as string,
        value: series.values[i] as number,
        expectedValue: r.expectedValue,
        upperMargin: r.upperMargin,
        lowerMargin: r.lowerMargin,
        isAnomaly: r.isAnomaly,
        isPositiveAnomaly: r.isPositiveAnomaly,
        isNegativeAnomaly: r.isNegativeAnomaly,
        severity: r.severity,
      }));
    }
  }
}
