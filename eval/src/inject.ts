// Injected events on synthetic series: what NAB's labels do not cover.
//
//   npm run eval:inject
//
// Three suites, each a clean series and events injected into it one at a time: a
// tweet-volume-like series (5-minute points, a daily cycle from 20 to 80 with half-height
// weekends, noise with a spread of √level), a machine temperature (minutely, continuous) and a
// CPU percentage reported as whole numbers (minutely). Each series is streamed through what
// ships, NAB's row (a): the worker's following judge with its defaults (`SHIPPED_STREAM`), once
// clean and once per event. For each event: the first flagged row from the event's start (or none
// within its length plus 250 rows), and the flags over the whole series. Deterministic (seeded).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as engine from '@adp/detection';
import type { ChangePointOptions, DetectOptions, SeriesInput } from '@adp/detection';
import { engineStreamingDetector, granularityOfSpacing, SHIPPED_STREAM, type EngineApi } from './engine.js';
import { ENGINE_VARIANTS } from './variants.js';

/** Points per day at 5-minute steps. */
export const DAY = 288;
const STEP_MS = 300_000;

/** Park–Miller generator and a Box–Muller normal draw: the same series on every run. */
export function gaussian(seed: number): () => number {
  let state = seed;
  const uniform = (): number => (state = (state * 16807) % 2147483647) / 2147483647;
  return () => Math.sqrt(-2 * Math.log(uniform() + 1e-12)) * Math.cos(2 * Math.PI * uniform());
}

/** The clean series: `days` days from a Monday midnight. */
export function seasonalCounts(days: number, seed = 11): number[] {
  const draw = gaussian(seed);
  return Array.from({ length: days * DAY }, (_, i) => {
    const weekend = Math.floor(i / DAY) % 7 >= 5;
    const phase = (i % DAY) / DAY;
    const level = 20 + (weekend ? 25 : 60) * Math.max(0, Math.sin(2 * Math.PI * (phase - 0.25)));
    return Math.max(0, level + Math.sqrt(level) * draw());
  });
}

export interface InjectedEvent {
  readonly name: string;
  /** First row of the event. */
  readonly at: number;
  /** Rows the event lasts. */
  readonly length: number;
  /** The value the event puts in place of the clean value v, `k` rows into the event. */
  readonly apply: (v: number, k: number) => number;
}

/** A clean series, its rows' spacing and the events injected into it one at a time. */
export interface InjectionSuite {
  readonly name: string;
  readonly clean: readonly number[];
  readonly stepMs: number;
  readonly events: readonly InjectedEvent[];
}

/**
 * Events on day 30 (a Wednesday): from its night (midnight: the level is 20 from 18:00 to 06:00)
 * or its peak (noon: 80).
 */
export function injectedEvents(): readonly InjectedEvent[] {
  const trough = 30 * DAY;
  const peak = 30 * DAY + DAY / 2;
  return [
    { name: 'spike at night: 3x + 30 for 1 point', at: trough, length: 1, apply: (v) => 3 * v + 30 },
    { name: 'burst at night: 2x + 10 for 12 points', at: trough, length: 12, apply: (v) => 2 * v + 10 },
    { name: 'spike at noon: 1.5x for 1 point', at: peak, length: 1, apply: (v) => 1.5 * v },
    { name: 'doubling for 2 days', at: trough, length: 2 * DAY, apply: (v) => 2 * v },
    { name: 'zero for 150 points, at night', at: trough, length: 150, apply: () => 0 },
    { name: 'zero for 150 points, from noon', at: peak, length: 150, apply: () => 0 },
    { name: '30 % for 200 points, at night', at: trough, length: 200, apply: (v) => 0.3 * v },
    { name: '30 % for 288 points, from noon', at: peak, length: DAY, apply: (v) => 0.3 * v },
    { name: 'half for 2 days', at: trough, length: 2 * DAY, apply: (v) => 0.5 * v },
    { name: 'flat at 25 for 178 points, from noon', at: peak, length: 178, apply: () => 25 },
    { name: 'flat at 18 for 150 points, at night', at: trough, length: 150, apply: () => 18 },
  ];
}

/** The tweet-volume-like series of `days` days (5-minute points) with `injectedEvents`. */
export function seasonalSuite(days = 40): InjectionSuite {
  return { name: 'daily counts (5-minute points)', clean: seasonalCounts(days), stepMs: STEP_MS, events: injectedEvents() };
}

/** Points of the machine suites (minutely: a little over four days). */
export const MACHINE_POINTS = 6000;
/** Where the machine suites' events begin. */
const MACHINE_EVENT_AT = 5000;

/**
 * A machine temperature: 60 plus a slow wander (AR(1), φ = 0.995, innovations 0.05) plus noise
 * with a spread of 0.5, one point a minute, seeded; continuous (no value repeats). Events from
 * point 5000: a sensor that hangs at its last reading, a feed that drops to zero, a step of 3
 * (6 noise spreads), a drift of 4 over 300 points, a flutter of ±2 around the signal.
 */
export function machineSuite(seed = 17): InjectionSuite {
  const draw = gaussian(seed);
  let wander = 0;
  const clean = Array.from({ length: MACHINE_POINTS }, () => {
    wander = 0.995 * wander + 0.05 * draw();
    return 60 + wander + 0.5 * draw();
  });
  return minutelySuite('machine temperature (minutely, continuous)', clean, [
    { name: 'zero for 60 points', length: 60, apply: () => 0 },
    { name: 'step up by 3 (6 noise spreads) for 300 points', length: 300, apply: (v) => v + 3 },
    { name: 'drift up by 4 over 300 points', length: 300, apply: (v, k) => v + (4 * (k + 1)) / 300 },
    { name: 'flutter of ±2 for 60 points', length: 60, apply: (v, k) => v + (k % 2 === 0 ? 2 : -2) },
  ]);
}

/**
 * A CPU percentage reported as whole numbers: 30 plus a daily cycle of ±10 plus noise with a
 * spread of 3, rounded, one point a minute, seeded; values repeat now and then. Events from
 * point 5000: the feed hangs at its last reading, or pins at 100.
 */
export function counterSuite(seed = 19): InjectionSuite {
  const draw = gaussian(seed);
  const clean = Array.from({ length: MACHINE_POINTS }, (_, i) =>
    Math.min(100, Math.max(0, Math.round(30 + 10 * Math.sin((2 * Math.PI * i) / 1440) + 3 * draw()))),
  );
  return minutelySuite('CPU percentage (minutely, whole numbers)', clean, [
    { name: 'pinned at 100 for 60 points', length: 60, apply: () => 100 },
  ]);
}

/**
 * A machine suite of minutely points: a reading that hangs at the one before point
 * MACHINE_EVENT_AT for 60 points, then `others`, every event from that point.
 */
function minutelySuite(name: string, clean: readonly number[], others: readonly Omit<InjectedEvent, 'at'>[]): InjectionSuite {
  const last = clean[MACHINE_EVENT_AT - 1]!;
  const hang = { name: 'frozen at its last reading for 60 points', length: 60, apply: () => last };
  return { name, clean, stepMs: 60_000, events: [hang, ...others].map((event) => ({ ...event, at: MACHINE_EVENT_AT })) };
}

export interface InjectionResult {
  readonly name: string;
  readonly at: number;
  /** Rows from the event's start to the first flag within its length + 250 rows; null: none. */
  readonly delay: number | null;
  /** Flags over the whole series. */
  readonly flags: number;
  /** The batch endpoints over the series' last BATCH_POINTS rows (when asked for). */
  readonly batch?: BatchOutcome;
}

/** What the batch endpoints make of an event. */
export interface BatchOutcome {
  /** entire/detect: flagged rows within the event (for the clean series: in the whole request). */
  readonly flagged: number;
  /** changepoint/detect: changepoints within BATCH_EDGE_ROWS of the event's start or end (clean series: all). */
  readonly changes: number;
}

/** The batch endpoints' functions (`@adp/detection`). */
export interface BatchApi {
  detectEntireSeries(input: SeriesInput, opts: DetectOptions): { readonly isAnomaly: readonly boolean[] };
  detectChangePointSeries(input: SeriesInput, opts: ChangePointOptions): { readonly isChangePoint: readonly boolean[] };
}

/** Rows one batch request holds: the vendor API's limit. */
export const BATCH_POINTS = 8640;
/** How near an event's start or end a changepoint must lie to count. */
export const BATCH_EDGE_ROWS = 12;

/**
 * The batch endpoints' view of `values` (the last BATCH_POINTS rows, with their timestamps and
 * the granularity a client would declare for that spacing, the endpoints' default options):
 * entire/detect's flags within [at, at + length) and changepoint/detect's changepoints within
 * BATCH_EDGE_ROWS of `at` or `at + length` (length 0: over the whole request).
 */
export function batchOutcome(batch: BatchApi, values: readonly number[], stepMs: number, at: number, length: number): BatchOutcome {
  const from = Math.max(0, values.length - BATCH_POINTS);
  const slice = values.slice(from);
  const timestampsMs = slice.map((_, i) => (from + i) * stepMs);
  const { granularity, customInterval } = granularityOfSpacing(timestampsMs);
  const input: SeriesInput = { timestampsMs, values: slice, granularity, customInterval, imputeMode: 'auto' };
  const flags = batch.detectEntireSeries(input, { sensitivity: 95, maxAnomalyRatio: 0.25 }).isAnomaly;
  const changes = batch.detectChangePointSeries(input, {}).isChangePoint;
  const inEvent = (row: number): boolean => length === 0 || (row >= at && row < at + length);
  const nearEdge = (row: number): boolean =>
    length === 0 || Math.abs(row - at) <= BATCH_EDGE_ROWS || Math.abs(row - (at + length)) <= BATCH_EDGE_ROWS;
  let flagged = 0;
  let near = 0;
  for (let i = 0; i < slice.length; i++) {
    if (flags[i] === true && inEvent(from + i)) flagged++;
    if (changes[i] === true && nearEdge(from + i)) near++;
  }
  return { flagged, changes: near };
}

/**
 * Streams the suite's clean series and each injected one through the engine's default NAB row;
 * with `batch`, also sends each series' last BATCH_POINTS rows to the batch endpoints.
 */
export function runInjections(api: EngineApi, suite: InjectionSuite, batch?: BatchApi): InjectionResult[] {
  const { clean, events } = suite;
  const timestamps = clean.map((_, i) => i * suite.stepMs);
  const variant = ENGINE_VARIANTS.find((v) => v.name === 'default')!;
  const count = (flags: readonly boolean[]): number => flags.filter(Boolean).length;
  const results: InjectionResult[] = [
    {
      name: 'none (the clean series)',
      at: 0,
      delay: null,
      flags: count(engineStreamingDetector(api, variant, SHIPPED_STREAM).flags(clean, timestamps)),
      ...(batch === undefined ? {} : { batch: batchOutcome(batch, clean, suite.stepMs, 0, 0) }),
    },
  ];
  for (const event of events) {
    const values = clean.map((v, i) => (i >= event.at && i < event.at + event.length ? event.apply(v, i - event.at) : v));
    const flags = engineStreamingDetector(api, variant, SHIPPED_STREAM).flags(values, timestamps);
    let delay: number | null = null;
    for (let i = event.at; i < Math.min(values.length, event.at + event.length + 250); i++) {
      if (flags[i]) {
        delay = i - event.at;
        break;
      }
    }
    results.push({
      name: event.name,
      at: event.at,
      delay,
      flags: count(flags),
      ...(batch === undefined ? {} : { batch: batchOutcome(batch, values, suite.stepMs, event.at, event.length) }),
    });
  }
  return results;
}

export function injectionTable(results: readonly InjectionResult[]): string {
  const withBatch = results.some((r) => r.batch !== undefined);
  const lines = withBatch
    ? [
        '| event | first flag after (rows) | flags in the series | entire/detect: rows flagged in the event | changepoint/detect: changes at its edges |',
        '|---|---:|---:|---:|---:|',
      ]
    : ['| event | first flag after (rows) | flags in the series |', '|---|---:|---:|'];
  for (const r of results) {
    const batch = withBatch ? ` ${r.batch?.flagged ?? ''} | ${r.batch?.changes ?? ''} |` : '';
    lines.push(`| ${r.name} | ${r.at === 0 ? '' : (r.delay ?? 'none')} | ${r.flags} |${batch}`);
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const suite of [seasonalSuite(), machineSuite(), counterSuite()]) {
    console.log(`\n${suite.name}\n`);
    console.log(injectionTable(runInjections(engine as unknown as EngineApi, suite, engine)));
  }
}
