// Episodes and their alerts for a stored batch: each series follows its episode over its new rows
// (its feedback decides which flags count), and each multi-channel machine over its joint model's
// rows, naming the channels that drove them. Pure: the worker publishes the alerts and
// checkpoints the episodes that changed.
import { NO_EPISODE, type EpisodeState } from '@adp/alerts';
import type { Alert, ResultRow } from '@adp/streaming';
import { raiseAlerts, type FeedbackCache } from './alerting.js';
import type { JudgedSeries } from './batch-judge.js';
import type { JudgedMachine } from './machine-states.js';

type Verdict = Awaited<ReturnType<FeedbackCache['verdictOf']>>;

export function batchAlerts(input: {
  /** The batch's series, in the order of `seriesRows` (each series' new rows in turn). */
  readonly series: readonly JudgedSeries[];
  readonly seriesRows: readonly ResultRow[];
  /** Each series' feedback verdict, in the same order (null: none). */
  readonly verdicts: readonly Verdict[] | null;
  /** The series' episodes before the batch, per `<org>/<series>`. */
  readonly episodes: ReadonlyMap<string, EpisodeState>;
  readonly machines: readonly JudgedMachine[];
  readonly quietPoints: number;
  readonly raisedAtMs: number;
}): { alerts: Alert[]; episodesAfter: Map<string, EpisodeState> } {
  const alerts: Alert[] = [];
  const episodesAfter = new Map<string, EpisodeState>();
  const options = { quietPoints: input.quietPoints, raisedAtMs: input.raisedAtMs };
  let from = 0;
  for (const [index, j] of input.series.entries()) {
    const rows = input.seriesRows.slice(from, from + j.newValues.length);
    from += j.newValues.length;
    if (rows.length === 0) continue;
    const key = `${j.pending.orgId}/${j.pending.seriesId}`;
    const before = input.episodes.get(key) ?? NO_EPISODE;
    const raised = raiseAlerts(j.pending.orgId, j.pending.seriesId, before, rows, { ...options, verdict: input.verdicts?.[index] ?? null });
    alerts.push(...raised.alerts);
    if (raised.state !== before) episodesAfter.set(key, raised.state);
  }
  for (const machine of input.machines) {
    if (machine.rows.length === 0) continue;
    const raised = raiseAlerts(machine.orgId, machine.machineId, machine.alertEpisode, machine.rows, { ...options, verdict: null });
    alerts.push(...raised.alerts.map((alert) => ({ ...alert, channels: machine.drivers })));
    if (raised.state !== machine.alertEpisode) episodesAfter.set(`${machine.orgId}/${machine.machineId}`, raised.state);
  }
  return { alerts, episodesAfter };
}
