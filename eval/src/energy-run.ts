// The energy rows of the evaluation (--energy): which rows, and the model pass that feeds them.
// harness.ts imports this module only when the rows are asked for (--energy), so a run without
// them never loads the model package (onnxruntime-node).
import type { StreamingDetector } from './detectors.js';
import {
  type Combination,
  combinedDetectorName,
  computeEnergyTraces,
  ENERGY_DEFAULTS,
  energyDetectorName,
  type EnergyFit,
  type EnergyScale,
  type EnergySettings,
  type EnergyTraces,
  energyStreamingDetector,
  combinedStreamingDetector,
  type TraceDetector,
} from './energy-detector.js';
import type { NabCorpus } from './nab-data.js';

export { memoisedDetector } from './energy-detector.js';

export type EnergyTracesByFit = ReadonlyMap<EnergyFit, EnergyTraces>;

export interface EnergyRow {
  readonly id: string;
  readonly name: string;
  readonly settings: EnergySettings & { readonly combination?: Combination };
  /** The row's detector; undefined when it needs the engine and the engine is not loaded. */
  detector(traces: EnergyTracesByFit, engine: StreamingDetector | undefined): TraceDetector | undefined;
}

/** Confirmation looks at the flagged row and this many before it (a quarter of the model's window). */
const CONFIRM_LOOKBACK_POINTS = 16;

/** Energy alone and engine OR energy per fit and threshold; the engine confirmed by the energy per fit and z. */
export function energyRows(options: {
  readonly thresholds: readonly number[];
  readonly fits: readonly EnergyFit[];
  readonly scales: readonly EnergyScale[];
  readonly escalations: readonly number[];
  readonly confirmZ: readonly number[];
}): EnergyRow[] {
  const rows: EnergyRow[] = [];
  const tracesFor = (traces: EnergyTracesByFit, fit: EnergyFit): EnergyTraces => {
    const t = traces.get(fit);
    if (t === undefined) throw new RangeError(`no energy traces for fit ${fit}`);
    return t;
  };
  for (const fit of options.fits) for (const scale of options.scales) {
    for (const escalation of options.escalations) for (const threshold of options.thresholds) {
      const settings: EnergySettings = { ...ENERGY_DEFAULTS, fit, scale, threshold, escalation };
      rows.push({
        id: `energy:${fit}:${scale}:${threshold}:${escalation}`,
        name: energyDetectorName(settings),
        settings,
        detector: (traces) => energyStreamingDetector(tracesFor(traces, fit), settings),
      });
    }
    for (const escalation of options.escalations) for (const threshold of options.thresholds) {
      const settings: EnergySettings = { ...ENERGY_DEFAULTS, fit, scale, threshold, escalation };
      const combination: Combination = { kind: 'or' };
      rows.push({
        id: `engine+energy:${fit}:${scale}:${threshold}:${escalation}`,
        name: combinedDetectorName(settings, combination),
        settings: { ...settings, combination },
        detector: (traces, engine) =>
          engine === undefined ? undefined : combinedStreamingDetector(engine, tracesFor(traces, fit), settings, combination),
      });
    }
    for (const minZ of options.confirmZ) {
      const settings: EnergySettings = { ...ENERGY_DEFAULTS, fit, scale };
      const combination: Combination = { kind: 'confirmed', minZ, lookbackPoints: CONFIRM_LOOKBACK_POINTS };
      rows.push({
        id: `engine-confirmed:${fit}:${scale}:${minZ}`,
        name: combinedDetectorName(settings, combination),
        settings: { ...settings, combination },
        detector: (traces, engine) =>
          engine === undefined ? undefined : combinedStreamingDetector(engine, tracesFor(traces, fit), settings, combination),
      });
    }
  }
  return rows;
}

/** Loads the model runtime, computes every file's trace for each fit, and releases the runtime. */
export async function prepareEnergy(
  corpus: NabCorpus,
  fits: readonly EnergyFit[],
  progress: (line: string) => void,
): Promise<EnergyTracesByFit> {
  const { createModelRuntime } = await import('@adp/model');
  // One intra-op thread: measured faster than two on the shared 2-core machine (packages/model/README.md).
  const runtime = await createModelRuntime({ intraOpThreads: 1 });
  try {
    const out = new Map<EnergyFit, EnergyTraces>();
    for (const fit of fits) {
      const started = performance.now();
      progress(`NAB · energy model pass (${fit})`);
      out.set(fit, await computeEnergyTraces(runtime, corpus.series, fit));
      progress(`NAB · energy model pass (${fit}) · ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    return out;
  } finally {
    await runtime.close();
  }
}
