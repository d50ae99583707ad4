import type { StreamSettings } from './engine.js';

// Engine configurations the harness compares (the ablation). One row of the table per variant.
//
// A variant only overrides options; everything else is the service's defaults. When the engine
// grows switches for its components (as extra fields of its option objects), an ablation is a
// variant per switch, e.g. { name: 'no-sr', detect: { components: { spectralResidual: false } } }.

export interface EngineVariant {
  readonly name: string;
  /** What the variant changes, for the README and results.json. */
  readonly description: string;
  /** Overrides of the harness's streaming rule (window, period handling, sensitivity) for NAB. */
  readonly stream?: Partial<StreamSettings>;
  /** Extra fields of the engine's detectStream options for NAB (component switches). */
  readonly detect?: Readonly<Record<string, unknown>>;
  /** Merged over the changepoint endpoint's defaults (no options) for TCPD. */
  readonly changePoint?: Readonly<Record<string, unknown>>;
}

export const ENGINE_VARIANTS: readonly EngineVariant[] = [
  { name: 'default', description: "the service's defaults" },
];
