// Alerts where points are judged: each series' newly judged rows go through its episodes
// (@adp/alerts), with the series' feedback deciding which flags count; an episode opened or closed
// becomes an Alert record for the alerts topic. The feedback is read from the store on first
// sight, kept per series for `refreshMs`, and dropped at once when the API announces a change.
import { NO_REGIME, feedbackVerdict, followEpisodes, followRegimes, judgedPointOfRow, type RegimeChange, type EpisodeEvent, type EpisodeState, type JudgedPoint, type PointVerdict } from '@adp/alerts';
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

/**
 * Follows the series' episodes and regime over its new rows; the alerts they raise (in the rows'
 * order: episodes first within a batch) and the state to keep. A regime holds once `quietPoints`
 * points in a row have it.
 */
export function raiseAlerts(
  orgId: string,
  seriesId: string,
  state: EpisodeState,
  rows: readonly ResultRow[],
  options: { quietPoints: number; verdict: Verdict | null; raisedAtMs: number },
): { state: EpisodeState; alerts: Alert[] } {
  const points = rows.map(judgedPointOfRow);
  const followed = followEpisodes(state, points, {
    quietPoints: options.quietPoints,
    ...(options.verdict ? { verdict: options.verdict } : {}),
  });
  const regimes = followRegimes(state.regime ?? NO_REGIME, points, { holdPoints: options.quietPoints });
  const alerts = followed.events.map((event) => alertOf(orgId, seriesId, event, options.raisedAtMs));
  for (const change of regimes.changes) alerts.push(regimeAlertOf(orgId, seriesId, change, options.raisedAtMs));
  const regimeUnchanged = regimes.state === (state.regime ?? NO_REGIME);
  const next = followed.state === state && regimeUnchanged ? state : { ...followed.state, ...(regimeUnchanged ? {} : { regime: regimes.state }) };
  return { state: next, alerts };
}

function seriesParts(seriesId: string): { machineId: string; channels: string[] } {
  const separator = seriesId.indexOf(CHANNEL_SEPARATOR);
  return separator < 0 ? { machineId: seriesId, channels: [] } : { machineId: seriesId.slice(0, separator), channels: [seriesId.slice(separator + 1)] };
}

function regimeAlertOf(orgId: string, seriesId: string, change: RegimeChange, raisedAtMs: number): Alert {
  const { machineId, channels } = seriesParts(seriesId);
  return {
    event_id: `${orgId}/${seriesId}/${change.sinceMs}/regime`,
    event: 'REGIME_CHANGED',
    organization: orgId,
    machine_id: machineId,
    series_id: seriesId,
    channels,
    started_at: change.sinceMs,
    ended_at: null,
    flagged_points: 0,
    peak_at: change.point.tsMs,
    peak_severity: change.point.severity,
    peak_value: change.point.value,
    expected_value: change.point.expectedValue,
    upper_margin: change.point.upperMargin,
    lower_margin: change.point.lowerMargin,
    regime: change.to,
    raised_at: raisedAtMs,
    previous_regime: change.from,
  };
}

function alertOf(orgId: string, seriesId: string, event: EpisodeEvent, raisedAtMs: number): Alert {
  const { machineId, channels } = seriesParts(seriesId);
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
    previous_regime: null,
  };
}
