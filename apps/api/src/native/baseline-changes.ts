// Baseline changes between API replicas: the BASELINE_CHANGED_CHANNEL message, its reader and the
// publisher the native routes hand to the baseline service.
import type { FastifyBaseLogger } from 'fastify';
import { BASELINE_CHANGED_CHANNEL, type Notifier } from '@adp/streaming';

/**
 * The BASELINE_CHANGED_CHANNEL message: `{orgId, machineId}` as the contract says, plus `origin`
 * (the publishing replica) so a replica skips its own messages and keeps the predictor it just
 * cached. Readers ignore fields they do not know.
 */
export interface BaselineChangedMessage {
  readonly orgId: string;
  readonly machineId: string;
  readonly origin?: string;
  /** The machine was deleted: workers forget its series' windows too. */
  readonly deleted?: boolean;
}

export function parseBaselineChanged(message: string): BaselineChangedMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { orgId, machineId, origin } = value as Record<string, unknown>;
  if (typeof orgId !== 'string' || typeof machineId !== 'string') return null;
  return typeof origin === 'string' ? { orgId, machineId, origin } : { orgId, machineId };
}

/** Publishes baseline changes; a failure is logged loudly (other replicas keep a stale predictor). */
export function baselinePublisher(notifier: Notifier, origin: string, log: FastifyBaseLogger) {
  return async (orgId: string, machineId: string, change?: { readonly deleted: boolean }): Promise<void> => {
    const message: BaselineChangedMessage = { orgId, machineId, origin, ...(change?.deleted ? { deleted: true } : {}) };
    try {
      await notifier.publish(BASELINE_CHANGED_CHANNEL, JSON.stringify(message));
    } catch (err) {
      log.error({ err, orgId, machineId }, 'could not publish a baseline change: other replicas keep their cached predictor');
    }
  };
}

