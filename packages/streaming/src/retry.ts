// How long the streaming pieces wait between attempts to reach a server again: one backoff policy
// (exponential, jittered, capped). The Kafka bus paces the rebuilding of its consumers with it;
// whether a failure is worth another attempt is the error's `retriable` (./errors.ts).

export interface BackoffPolicy {
  /** Wait before the first retry, ms. */
  readonly initialDelayMs: number;
  /** Growth of the wait per attempt (2 doubles it). At least 1. */
  readonly multiplier: number;
  /** Longest wait, ms, jitter included: bounds how late a recovered server is noticed. */
  readonly maxDelayMs: number;
  /**
   * Share of each wait drawn at random, 0..1 (0.2: the wait lies within ±20 % of its nominal
   * value). Replicas that lost a server together then do not come back in lockstep.
   */
  readonly jitter: number;
}

/** Reconnecting to Kafka: quick first tries, then every 5 s at most while the broker stays down. */
export const RECONNECT_BACKOFF: BackoffPolicy = { initialDelayMs: 250, multiplier: 2, maxDelayMs: 5_000, jitter: 0.2 };

/**
 * The wait before retry number `attempt` (1 for the first retry), ms. `random` returns [0, 1)
 * (Math.random by default; tests pass a fixed one).
 */
export function backoffDelayMs(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  const nominal = Math.min(policy.initialDelayMs * Math.max(1, policy.multiplier) ** exponent, policy.maxDelayMs);
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  const spread = nominal * jitter * (2 * random() - 1);
  return Math.round(Math.min(policy.maxDelayMs, Math.max(0, nominal + spread)));
}
