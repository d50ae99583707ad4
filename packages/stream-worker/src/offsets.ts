// Offset and checkpoint bookkeeping. The bus commits a batch's offsets once its handler resolves,
// which the worker lets happen only after the batch's rows and checkpoints are stored; so each
// partition's next batch normally starts where the last stored one ended, and when it does not
// (a rebalance moved the partition away and back, or a failed batch is delivered again) the
// windows in memory may be behind their checkpoints. The checkpoint keys live here too: every
// piece of a series' state is saved under the consumer group, so two groups never share state.
import { machineStateSeriesId } from './machine-verdicts.js';

/** Where each partition (`<topic>:<partition>`) resumes after its last stored batch. */
export class PartitionOffsets {
  private readonly next = new Map<string, bigint>();

  /** Whether a batch starting at `firstOffset` continues where the partition's last stored batch ended. */
  continues(partitionKey: string, firstOffset: string): boolean {
    return this.next.get(partitionKey) === BigInt(firstOffset);
  }

  /** The batch ending at `lastOffset` is stored: the next one should start after it. */
  stored(partitionKey: string, lastOffset: string): void {
    this.next.set(partitionKey, BigInt(lastOffset) + 1n);
  }
}

/** Checkpoint keys of one consumer group. */
export class CheckpointKeys {
  constructor(private readonly groupId: string) {}

  /** A series' window, `<group>/<org>/<series>`. */
  window(seriesKey: string): string {
    return `${this.groupId}/${seriesKey}`;
  }

  /**
   * A series' (or a multi-channel machine's) alert episode: its own key beside the window's
   * (`<group>.episodes/<org>/<series>`), so a machine's deletion finds it.
   */
  episode(seriesKey: string): string {
    return `${this.groupId}.episodes/${seriesKey}`;
  }

  /** A multi-channel machine's joint stream state. */
  machine(orgId: string, machineId: string): string {
    return `${this.groupId}/${orgId}/${machineStateSeriesId(machineId)}`;
  }
}
