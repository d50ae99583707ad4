// Alerts where points are judged: each series' newly judged rows go through its episodes
// (@adp/alerts), with the series' feedback deciding which flags count; an episode opened or closed
// becomes an Alert record for the alerts topic. The feedback is read from the store on first
// sight, kept per series for `refreshMs`, and dropped at once when the API announces a change.
import { feedbackVerdict, followEpisodes, judgedPointOfRow, type EpisodeEvent, type EpisodeState, type JudgedPoint, type PointVerdict } from '@adp/alerts';
import type { AlertingStore } from '@adp/store';
import { CHANNEL_SEPARATOR, GenerationalCache, type Alert, type ResultRow } from '@adp/streaming';

type Verdict = (point: JudgedPoint) => PointVerdict;

interface Entry {
  readonly verdict: Verdict | null;
  readonly loadedAtMs: number;
}

export class FeedbackCache {
  private readonly entries: GenerationalCache<Entry>;

  constructor(
    private readonly store: Pick<AlertingStore, 'listFeedback'> | null,
    maxEntries: number,
    private readonly refreshMs: number,
    private readonly now: () => number,
  ) {
    this.entries = new GenerationalCache(maxEntries);
  }

  /** How the series' points count (null: as the engine flags them). Store failures reject (the batch is retried). */
  async verdictOf(orgId: string, seriesId: string): Promise<Verdict | null> {
    if (this.store === null) return null;
    const key = `${orgId}/${seriesId}`;
    const entry = this.entries.peek(key);
    if (entry && this.now() - entry.loadedAtMs < this.refreshMs) return this.entries.get(key)!.verdict;
    const generation = this.entries.generation(key);
    const feedback = await this.store.listFeedback(orgId, seriesId);
    const verdict = feedback.length === 0 ? null : feedbackVerdict(feedback);
    this.entries.setIfCurrent(key, generation, { verdict, loadedAtMs: this.now() });
    return verdict;
  }

  drop(orgId: string, machineId: string): void {
    const key = `${orgId}/${machineId}`;
    this.entries.drop(key, (cached) => cached.startsWith(`${key}${CHANNEL_SEPARATOR}`));
  }
}

/** Follows the series' episodes over its new rows; the alerts they raise and the state to keep. */
export function raiseAlerts(
  orgId: string,
  seriesId: string,
  state: EpisodeState,
  rows: readonly ResultRow[],
  options: { quietPoints: number; verdict: Verdict | null; raisedAtMs: number },
): { state: EpisodeState; alerts: Alert[] } {
  const followed = followEpisodes(state, rows.map(judgedPointOfRow), {
    quietPoints: options.quietPoints,
    ...(options.verdict ? { verdict: options.verdict } : {}),
  });
  return { state: followed.state, alerts: followed.events.map((event) => alertOf(orgId, seriesId, event, options.raisedAtMs)) };
}

function alertOf(orgId: string, seriesId: string, event: EpisodeEvent, raisedAtMs: number): Alert {
  const separator = seriesId.indexOf(CHANNEL_SEPARATOR);
  const machineId = separator < 0 ? seriesId : seriesId.slice(0, separator);
  const channels = separator < 0 ? [] : [seriesId.slice(separator + 1)];
  const { episode } = event;
  const kind = event.kind === 'opened' ? 'EPISODE_OPENED' : 'EPISODE_CLOSED';
  return {
    // The same episode and event always get the same id: a replayed batch raises a duplicate the dispatcher skips.
    event_id: `${orgId}/${seriesId}/${episode.startedMs}/${event.kind}`,
    event: kind,
    organization: orgId,
    machine_id: machineId,
    series_id: seriesId,
    channels,
    started_at: episode.startedMs,
    ended_at: event.kind === 'closed' ? event.endedMs : null,
    flagged_points: episode.flaggedPoints,
    peak_at: episode.peak.tsMs,
    peak_severity: episode.peak.severity,
    peak_value: episode.peak.value,
    expected_value: episode.peak.expectedValue,
    upper_margin: episode.peak.upperMargin,
    lower_margin: episode.peak.lowerMargin,
    regime: episode.peak.regime,
    raised_at: raisedAtMs,
  };
}
