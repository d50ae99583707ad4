// The steps every detector shares before modelling: align, settle the period, impute.
import {
  buildGrid,
  fillRule,
  inputSlots,
  MAX_FILL_LENGTH,
  periodProblem,
  tooSparseForSeasonality,
  type FillSettings,
  type PreparedSeries,
} from './alignment.js';
import { detectPeriod } from './period.js';
import { SeriesError, type Granularity, type SeriesInput } from './types.js';

/** Fewest points any detector takes: the vendor API's minimum. */
export const MIN_SERIES_POINTS = 12;

/** Throws the API's InvalidSeries error for a series shorter than MIN_SERIES_POINTS. */
export function requireMinimumLength(count: number): void {
  if (count < MIN_SERIES_POINTS) throw new SeriesError('InvalidSeries', 'Series must contain at least 12 points');
}

/** A validated series whose points can be modelled by range (the streaming windows). */
export interface SeriesContext {
  readonly values: readonly number[];
  /** Absolute grid slot per input point, or null without a grid. */
  readonly slots: Float64Array | null;
  readonly granularity: Granularity;
  readonly customInterval: number;
  readonly fill: FillSettings;
}

/** Validates the timestamps (sorted, unique, aligned) once and keeps what modelling needs. */
export function seriesContext(input: SeriesInput): SeriesContext {
  return {
    values: input.values,
    slots: inputSlots(input),
    granularity: input.granularity,
    customInterval: input.customInterval,
    fill: { imputeMode: input.imputeMode, imputeFixedValue: input.imputeFixedValue },
  };
}

/** Slots a gap-free grid over points from..to-1 would have. */
export function expectedLengthOf(ctx: SeriesContext, from: number, to: number): number {
  if (ctx.slots === null || to <= from) return to - from;
  return ctx.slots[to - 1]! - ctx.slots[from]! + 1;
}

/** The client-supplied period's problem with points from..to-1, if any (§5.2 #16, #17). */
export function rangePeriodProblem(
  ctx: SeriesContext,
  from: number,
  to: number,
  period: number | undefined,
): SeriesError | null {
  const expectedLength = expectedLengthOf(ctx, from, to);
  const fills = expectedLength <= MAX_FILL_LENGTH && fillRule(ctx.fill.imputeMode, period) !== 'none';
  return periodProblem(period, expectedLength, to - from, fills);
}

/** A range ready to model, with the period it is modelled with. */
export interface ModelInput {
  readonly prepared: PreparedSeries;
  readonly period: number;
}

/**
 * Aligns and imputes points from..to-1 with the requested period, or with the detected one when
 * none is requested. Detection runs on a provisionally (linearly) filled grid; a series with more
 * than half its slots missing is non-seasonal without looking (the vendor's rule). `auto`
 * imputation is then redone with the period found, since it fills seasonally only when there is one.
 * `minDataCycles`: fewest full cycles a data-driven period needs in the range (`detectPeriod`).
 */
export function prepareRange(
  ctx: SeriesContext,
  from: number,
  to: number,
  requestedPeriod: number | undefined,
  stabilisePeriod = true,
  minDataCycles = 3,
): ModelInput {
  if (requestedPeriod !== undefined) {
    return { prepared: buildGrid(ctx.values, ctx.slots, from, to, ctx.fill, requestedPeriod), period: requestedPeriod };
  }
  if (tooSparseForSeasonality(expectedLengthOf(ctx, from, to), to - from)) {
    return { prepared: buildGrid(ctx.values, ctx.slots, from, to, ctx.fill, 0), period: 0 };
  }
  const provisional = buildGrid(ctx.values, ctx.slots, from, to, ctx.fill, undefined);
  const period = detectPeriod(provisional.values, ctx.granularity, ctx.customInterval, stabilisePeriod, minDataCycles);
  const dependsOnPeriod = provisional.missingCount > 0 && ctx.fill.imputeMode === 'auto';
  return {
    prepared: dependsOnPeriod ? buildGrid(ctx.values, ctx.slots, from, to, ctx.fill, period) : provisional,
    period,
  };
}

/** Whole-series preparation for the batch detectors: validates, then `prepareRange`. */
export function prepareSeries(input: SeriesInput, requestedPeriod: number | undefined): ModelInput {
  const n = input.values.length;
  requireMinimumLength(n);
  const ctx = seriesContext(input);
  const problem = rangePeriodProblem(ctx, 0, n, requestedPeriod);
  if (problem !== null) throw problem;
  return prepareRange(ctx, 0, n, requestedPeriod);
}
