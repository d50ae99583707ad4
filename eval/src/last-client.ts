// Row (b) of the headline: a client of the vendor's last/detect as our docs tell it to be one
// (docs/api.md, "Last-point detection"): for every new point it sends the window the service
// suggested in its previous answer, plus the past range of the points it keeps before that
// window. Judged by `detectLastPoint`, the function the route calls with the parsed request.
import type { DetectOptions, LastResult, PastRange, SeriesInput } from '@adp/detection';
import type { StreamingDetector } from './detectors.js';

/** The engine's function behind POST .../timeseries/last/detect. */
export type DetectLastPoint = (input: SeriesInput, opts: DetectOptions) => LastResult;

export interface LastClientSettings {
  readonly sensitivity: number;
  readonly maxAnomalyRatio: number;
  /** Points the client keeps, the newest included; those before its window are the past range. */
  readonly memoryPoints: number;
  /** Fewest points a request may carry (the API answers 400 below it). */
  readonly minPoints: number;
  /** Most points a request may carry (the API answers 400 above it). */
  readonly maxPoints: number;
}

/** What the client sent for one point: the window's first row and the past range. */
export interface LastClientRequest {
  readonly from: number;
  readonly to: number;
  readonly pastRange: PastRange | undefined;
}

/**
 * The request the client sends for row `i`. It starts at the first row where it holds
 * `minPoints` points and sends all it holds (up to `maxPoints`); from then on it sends the newest
 * `suggested` points (the previous answer's suggestedWindow), never more than it holds nor fewer
 * than `minPoints`, and the lowest and highest of the points it keeps older than that window
 * (the newest `memoryPoints` up to row i) as `pastRange`, when there are any.
 */
export function lastClientRequest(
  values: readonly number[],
  i: number,
  suggested: number | undefined,
  settings: LastClientSettings,
): LastClientRequest | undefined {
  const held = i + 1;
  if (held < settings.minPoints) return undefined;
  const points = Math.max(settings.minPoints, Math.min(suggested ?? held, held, settings.maxPoints));
  const from = i - points + 1;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let k = Math.max(0, held - settings.memoryPoints); k < from; k += 1) {
    const v = values[k] as number;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { from, to: i, pastRange: min <= max ? { min, max } : undefined };
}

/** The client as a streaming detector: one last/detect call per row, flags = isAnomaly. */
export function lastDetectClient(detect: DetectLastPoint, settings: LastClientSettings, name: string): StreamingDetector & {
  lastPlan(): { windows: Readonly<Record<number, number>> } | undefined;
} {
  let plan: { windows: Record<number, number> } | undefined;
  return {
    name,
    lastPlan: () => plan,
    flags(values) {
      const windows: Record<number, number> = {};
      let suggested: number | undefined;
      const flags = values.map((_, i) => {
        const request = lastClientRequest(values, i, suggested, settings);
        if (request === undefined) return false;
        const input: SeriesInput = {
          timestampsMs: null,
          values: values.slice(request.from, request.to + 1),
          granularity: 'none',
          customInterval: 1,
          imputeMode: 'auto',
        };
        const answer = detect(input, {
          sensitivity: settings.sensitivity,
          maxAnomalyRatio: settings.maxAnomalyRatio,
          ...(request.pastRange === undefined ? {} : { pastRange: request.pastRange }),
        });
        const size = request.to - request.from + 1;
        windows[size] = (windows[size] ?? 0) + 1;
        suggested = answer.suggestedWindow;
        return answer.isAnomaly;
      });
      // The three window sizes sent most often, for the per-file record.
      const top = Object.entries(windows)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3);
      plan = { windows: Object.fromEntries(top.map(([k, v]) => [Number(k), v])) };
      return flags;
    },
  };
}
