// Window state: each series' trailing window (and its alert episode) held in memory between
// batches, read from its checkpoint when it is not. A batch works on copies; what it judged is
// kept only once the batch is stored (`keep`), so a failed batch leaves the state as it was and its
// retry starts from the same windows. A deleted machine's series are forgotten, and a batch that
// was under way when the deletion arrived does not put them back.
import { decodeEpisodeState, NO_EPISODE, type EpisodeState } from '@adp/alerts';
import { isSeriesOfMachine, type CheckpointStore } from '@adp/streaming';
import type { CheckpointKeys } from './offsets.js';
import { cloneWindow, decodeWindow, emptyWindow, type SeriesWindow } from './series-window.js';
import type { WorkerLogger } from './worker-types.js';

interface HeldWindow {
  readonly window: SeriesWindow;
  /** The series' episode (alerts), checkpointed beside the window. */
  readonly episode: EpisodeState;
  /** `<topic>:<partition>` the series arrived on. */
  readonly partitionKey: string;
}

/** A batch's series as it found them: copies of their windows and their episodes. */
export interface LoadedState {
  readonly windows: Map<string, SeriesWindow>;
  readonly episodes: Map<string, EpisodeState>;
}

export interface WindowStateOptions {
  readonly checkpoints: Pick<CheckpointStore, 'load' | 'deleteMachine'>;
  readonly keys: CheckpointKeys;
  /** Points a window keeps (windowCapacity). */
  readonly capacity: number;
  /** Windows held in memory; the least recently stored go first (they reload from checkpoints). */
  readonly maxSeries: number;
  /** Whether alert episodes are kept (alerts on). */
  readonly episodes: boolean;
  readonly logger: WorkerLogger;
}

/** Deletions remembered for the batches under way when they arrived. */
const RECENT_DELETIONS_KEPT = 1024;

export class WindowState {
  private readonly held = new Map<string, HeldWindow>();
  /** Deleted machines, numbered: a batch compares the count at its start with the count at its end. */
  private deletionCount = 0;
  private readonly recentDeletions: { readonly seq: number; readonly orgId: string; readonly machineId: string }[] = [];

  constructor(private readonly options: WindowStateOptions) {}

  /** Taken at a batch's start and handed to `keep`: which deletions arrived while it ran. */
  mark(): number {
    return this.deletionCount;
  }

  /** Forgets the windows that arrived on `partitionKey` (they may be behind their checkpoints). */
  dropPartition(partitionKey: string): void {
    for (const [key, held] of this.held) if (held.partitionKey === partitionKey) this.held.delete(key);
  }

  /** Copies of the series' windows and their episodes, from memory or else from their checkpoints. */
  async load(seriesKeys: readonly string[], partitionKey: string): Promise<LoadedState> {
    const { keys, capacity, episodes: withEpisodes, logger } = this.options;
    const loaded: LoadedState = { windows: new Map(), episodes: new Map() };
    const missing: string[] = [];
    for (const key of seriesKeys) {
      const held = this.held.get(key);
      if (held) {
        loaded.windows.set(key, cloneWindow(held.window));
        loaded.episodes.set(key, held.episode);
      } else missing.push(key);
    }
    if (missing.length > 0) {
      const stored = await this.options.checkpoints.load(
        missing.flatMap((key) => (withEpisodes ? [keys.window(key), keys.episode(key)] : [keys.window(key)])),
      );
      for (const key of missing) {
        loaded.episodes.set(key, withEpisodes ? decodeEpisodeState(stored.get(keys.episode(key))) : NO_EPISODE);
        const bytes = stored.get(keys.window(key));
        let window = bytes ? decodeWindow(bytes, capacity) : null;
        if (bytes && !window) {
          logger.warn({ series: key, partition: partitionKey }, 'unreadable checkpoint ignored; the series starts afresh');
        }
        window ??= emptyWindow();
        loaded.windows.set(key, window);
      }
    }
    return loaded;
  }

  /**
   * A deleted machine: its series' windows go, and its checkpoints (the API removed them too; a
   * batch may have saved since). Returns how many windows were forgotten; the checkpoints are
   * deleted in the background (logged).
   */
  forgetMachine(orgId: string, machineId: string): number {
    this.recentDeletions.push({ seq: ++this.deletionCount, orgId, machineId });
    if (this.recentDeletions.length > RECENT_DELETIONS_KEPT) this.recentDeletions.shift();
    let forgotten = 0;
    for (const key of [...this.held.keys()]) {
      if (this.deletedSince(this.deletionCount - 1, key)) {
        this.held.delete(key);
        forgotten++;
      }
    }
    const { checkpoints, logger } = this.options;
    checkpoints
      .deleteMachine(orgId, machineId)
      .then((count) => logger.info({ orgId, machineId, windows: forgotten, checkpoints: count }, 'machine deleted: its series forgotten'))
      .catch((err: unknown) => logger.warn({ err, orgId, machineId }, 'machine deleted: could not delete its checkpoints'));
    return forgotten;
  }

  /**
   * A batch is stored: its series' new windows (`updated`) and episodes are kept, and the series
   * it loaded without anything new keep what they had; except for machines deleted since `mark`,
   * whose checkpoints this batch may have saved after the deletion's, so they are deleted again.
   */
  async keep(
    mark: number,
    partitionKey: string,
    seriesKeys: readonly string[],
    loaded: LoadedState,
    updated: ReadonlyMap<string, SeriesWindow>,
    episodesAfter: ReadonlyMap<string, EpisodeState>,
  ): Promise<void> {
    const deletedMeanwhile = (key: string): boolean => this.deletionCount !== mark && this.deletedSince(mark, key);
    for (const [key, window] of updated) {
      this.held.delete(key);
      if (!deletedMeanwhile(key)) {
        this.held.set(key, { window, partitionKey, episode: episodesAfter.get(key) ?? loaded.episodes.get(key) ?? NO_EPISODE });
      }
    }
    for (const key of seriesKeys) {
      if (updated.has(key) || this.held.has(key) || deletedMeanwhile(key)) continue;
      this.held.set(key, { window: loaded.windows.get(key)!, partitionKey, episode: loaded.episodes.get(key) ?? NO_EPISODE });
    }
    if (this.deletionCount !== mark) {
      for (const d of this.recentDeletions) {
        if (d.seq > mark) await this.options.checkpoints.deleteMachine(d.orgId, d.machineId);
      }
    }
    while (this.held.size > this.options.maxSeries) {
      const oldest = this.held.keys().next();
      if (oldest.done) break;
      this.held.delete(oldest.value);
    }
  }

  private deletedSince(seq: number, seriesKey: string): boolean {
    return this.recentDeletions.some(
      (d) => d.seq > seq && seriesKey.startsWith(`${d.orgId}/`) && isSeriesOfMachine(seriesKey.slice(d.orgId.length + 1), d.machineId),
    );
  }
}
