// What the API tells the workers over the notifier: a machine's baseline changed or the machine
// was deleted (`BASELINE_CHANGED_CHANNEL`), or a series' feedback changed
// (`FEEDBACK_CHANGED_CHANNEL`). Messages that are not what they should be are logged and ignored.
import { BASELINE_CHANGED_CHANNEL, FEEDBACK_CHANGED_CHANNEL, type Notifier } from '@adp/streaming';
import type { WorkerLogger } from './worker-types.js';

export interface NotificationHandlers {
  baselineChanged(orgId: string, machineId: string, deleted: boolean): void;
  feedbackChanged(orgId: string, machineId: string): void;
}

/** Subscribes to both channels; resolves to the unsubscribe of both. */
export async function subscribeNotifications(
  notifier: Notifier,
  handlers: NotificationHandlers,
  logger: WorkerLogger,
): Promise<() => Promise<void>> {
  const unsubscribeBaselines = await notifier.subscribe(BASELINE_CHANGED_CHANNEL, (message) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      logger.warn({ message: message.slice(0, 200) }, 'ignoring a baseline notification that is not JSON');
      return;
    }
    const { orgId, machineId, deleted } = (parsed ?? {}) as { orgId?: unknown; machineId?: unknown; deleted?: unknown };
    if (typeof orgId !== 'string' || typeof machineId !== 'string') {
      logger.warn({ message: message.slice(0, 200) }, 'ignoring a baseline notification without orgId and machineId');
      return;
    }
    handlers.baselineChanged(orgId, machineId, deleted === true);
  });
  let unsubscribeFeedback: () => Promise<void>;
  try {
    unsubscribeFeedback = await notifier.subscribe(FEEDBACK_CHANGED_CHANNEL, (message) => {
      try {
        const { orgId, machineId } = JSON.parse(message) as { orgId?: unknown; machineId?: unknown };
        if (typeof orgId === 'string' && typeof machineId === 'string') handlers.feedbackChanged(orgId, machineId);
      } catch {
        logger.warn({ message: message.slice(0, 200) }, 'ignoring a feedback notification that is not JSON');
      }
    });
  } catch (error) {
    await unsubscribeBaselines().catch(() => undefined);
    throw error;
  }
  return async () => {
    await unsubscribeBaselines().catch(() => undefined);
    await unsubscribeFeedback().catch(() => undefined);
  };
}
