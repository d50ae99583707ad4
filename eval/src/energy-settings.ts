// Settings of the energy detector (energy-detector.ts), apart from it so that the command line
// can name them without loading the model runtime (onnxruntime-node).

/**
 * How the predictor is fitted to a file: `ridge` fine-tunes its output layer on the learning
 * prefix, as `POST /v1/baseline` does on a machine's healthy data (the runtime's default mode);
 * `generic` keeps the pretrained predictor. Either way the normalisation is the prefix's.
 */
export type EnergyFit = 'ridge' | 'generic';

export const ENERGY_FITS = ['ridge', 'generic'] as const satisfies readonly EnergyFit[];

/**
 * How an energy becomes a z-score against the learning prefix: `mean-std`, (e - mean) / std of the
 * prefix's energies, as the native API's z_scores; `log-robust`, (ln e - median) / (1.4826 MAD) of
 * the prefix's log energies (energies are positive and heavy-tailed).
 */
export type EnergyScale = 'mean-std' | 'log-robust';

export const ENERGY_SCALES = ['mean-std', 'log-robust'] as const satisfies readonly EnergyScale[];

export interface EnergySettings {
  readonly fit: EnergyFit;
  readonly scale: EnergyScale;
  /** A point is flagged when its energy z-score is at least this (chosen on the dev split, docs/experiments.md). */
  readonly threshold: number;
  /**
   * Refractory stretch in points: no flag while a point among the previous `refractoryPoints` had
   * z >= threshold (the event is still under way). Default the model's window, 64 points
   * (@adp/model WINDOW_POINTS; a test checks they agree): a deviation stays in the windows of the
   * next 63 points, and its leaving the window moves the embeddings again; both belong to the
   * event that already fired.
   */
  readonly refractoryPoints: number;
  /**
   * A row whose z is at least this multiple of the ongoing event's largest z is a new event and is
   * flagged (Infinity: never). 16 costs next to nothing on NAB (docs/experiments.md, "Learned
   * energy"), and without it a spike of z 30,000 on a clean sine was hidden by the sine's own
   * chain of z ~3 rows.
   */
  readonly escalation: number;
}

/** Threshold chosen by the dev-split sweep (docs/experiments.md, "Learned energy"). */
export const ENERGY_DEFAULTS: EnergySettings = Object.freeze({ fit: 'ridge', scale: 'mean-std', threshold: 3, refractoryPoints: 64, escalation: 16 });

/** Default z the energy must reach, at the flagged row or shortly before, for an engine flag to be confirmed. */
export const DEFAULT_CONFIRM_Z = 2;
