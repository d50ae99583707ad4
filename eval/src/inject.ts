// Injected outages on a synthetic seasonal series: what NAB's labels do not cover.
//
//   npm run eval:inject
//
// A tweet-volume-like series (5-minute points, a daily cycle from 20 to 80 with half-height
// weekends, noise with a spread of √level) is streamed through the engine's default NAB row
// (`engineStreamingDetector`: the same window and options), once clean and once per injected
// event. For each event: the first flagged row from the event's start (or none within its
// length plus 250 rows), and the flags over the whole series. Deterministic (seeded).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as engine from '@adp/detection';
import { engineStreamingDetector, type EngineApi } from './engine.js';
import { ENGINE_VARIANTS } from './variants.js';

/** Points per day at 5-minute steps. */
export const DAY = 288;
const STEP_MS = 300_000;

/** Park–Miller generator and a Box–Muller normal draw: the same series on every run. */
function gaussian(seed: number): () => number {
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
  /** The value the event puts in place of the clean value v. */
  readonly apply: (v: number) => number;
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

export interface InjectionResult {
  readonly name: string;
  readonly at: number;
  /** Rows from the event's start to the first flag within its length + 250 rows; null: none. */
  readonly delay: number | null;
  /** Flags over the whole series. */
  readonly flags: number;
}

/** Streams the clean series and each injected one through the engine's default NAB row. */
export function runInjections(api: EngineApi, days = 40, events: readonly InjectedEvent[] = injectedEvents()): InjectionResult[] {
  const clean = seasonalCounts(days);
  const timestamps = clean.map((_, i) => i * STEP_MS);
  const variant = ENGINE_VARIANTS.find((v) => v.name === 'default')!;
  const count = (flags: readonly boolean[]): number => flags.filter(Boolean).length;
  const results: InjectionResult[] = [
    { name: 'none (the clean series)', at: 0, delay: null, flags: count(engineStreamingDetector(api, variant).flags(clean, timestamps)) },
  ];
  for (const event of events) {
    const values = clean.map((v, i) => (i >= event.at && i < event.at + event.length ? event.apply(v) : v));
    const flags = engineStreamingDetector(api, variant).flags(values, timestamps);
    let delay: number | null = null;
    for (let i = event.at; i < Math.min(values.length, event.at + event.length + 250); i++) {
      if (flags[i]) {
        delay = i - event.at;
        break;
      }
    }
    results.push({ name: event.name, at: event.at, delay, flags: count(flags) });
  }
  return results;
}

export function injectionTable(results: readonly InjectionResult[]): string {
  const lines = ['| event | first flag after (rows) | flags in the series |', '|---|---:|---:|'];
  for (const r of results) lines.push(`| ${r.name} | ${r.at === 0 ? '' : (r.delay ?? 'none')} | ${r.flags} |`);
  return lines.join('\n');
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(injectionTable(runInjections(engine as unknown as EngineApi)));
}
