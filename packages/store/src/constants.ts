// Values every Store implementation shares, so the embedded and the ClickHouse store agree on them.

/** The organization a first start creates and bootstraps. */
export const DEFAULT_ORGANIZATION_ID = 'org_default';
export const DEFAULT_ORGANIZATION_NAME = 'Default organization';
/** How many of a machine's most recent detections the status keeps. */
export const RECENT_DETECTIONS_KEPT = 20;

/** The longest machine model text a baseline keeps (a 64-channel model is about 100 KB of JSON). */
export const MACHINE_MODEL_MAX_CHARS = 1_000_000;
