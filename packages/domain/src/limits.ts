// Defaults and limits of detection requests, shared by the API (which enforces them), the
// stream worker and the CLI (which judge as the API would), the engine's streaming defaults and the
// dashboard (which checks a file before sending it).

/** The vendor's default `sensitivity` (0..99), and the native API's without a baseline's own. */
export const DEFAULT_SENSITIVITY = 95;
/** The vendor's default `maxAnomalyRatio`. */
export const DEFAULT_MAX_ANOMALY_RATIO = 0.25;

/** Fewest points of a synchronous detection (the vendor's limit). */
export const MIN_SERIES_POINTS = 12;
/** Most points of a synchronous detection or baseline (the vendor's limit); longer series go to POST /v1/jobs. */
export const MAX_SERIES_POINTS = 8640;
/** Fewest points of a baseline (POST /v1/baseline). */
export const MIN_BASELINE_POINTS = 100;
/** Longest baseline label. */
export const MAX_LABEL_LENGTH = 200;
/** Largest |value| a series may hold (the vendor's limit). */
export const MAX_VALUE_MAGNITUDE = 1e100;

/** Most channels of one multivariate baseline or detection (each is a fine-tune or a model run). */
export const MAX_MULTIVARIATE_CHANNELS = 16;
/** Most channels of one telemetry point. */
export const MAX_TELEMETRY_CHANNELS = 64;

/** Most points of one detection job by default (the API's `JOBS_MAX_POINTS`). */
export const DEFAULT_JOB_MAX_POINTS = 1_000_000;
/** Most series of one detection job by default (the API's `JOBS_MAX_SERIES`). */
export const DEFAULT_JOB_MAX_SERIES = 1000;
