// A machine's episodes with their alerts (GET /v1/machines/{id}/episodes: each alert's deliveries
// and what became of them), a "Not an anomaly" button per episode (POST .../feedback over the
// episode's span), and the machine's feedback (GET .../feedback), each removable (DELETE).
// Reference: docs/webhooks.md.
import { ApiError, apiRequest, describeError } from '../api.js';
import type { EpisodeBody, EpisodesResponse, FeedbackList, FeedbackView } from '../api-types.js';
import { el, errorBox, formatNumber } from '../dom.js';

/** Episodes the card lists at most (the newest). */
const MAX_EPISODES = 100;

const when = (timestamp: string): string => timestamp.replace('T', ' ').replace(/\.000Z$|Z$/, ' UTC');

function plainError(error: unknown): string {
  if (error instanceof ApiError && error.code === 'FeedbackNotFound') return 'This feedback was already removed. Reload the page.';
  return describeError(error);
}

/** What became of an alert's deliveries, in words: "delivered to 2 of 2", "no webhook wanted it". */
function deliveriesText(alert: EpisodeBody['alerts'][number]): string {
  const { deliveries } = alert;
  if (deliveries.length === 0) return 'no webhook wanted it';
  const delivered = deliveries.filter((d) => d.status === 'delivered').length;
  const failed = deliveries.filter((d) => d.status === 'failed');
  const parts = [`delivered to ${delivered} of ${deliveries.length}`];
  if (failed.length > 0) parts.push(`${failed.length} failed (${failed.map((d) => (d.last_status_code === null ? (d.last_error ?? 'no answer') : `HTTP ${d.last_status_code}`)).join(', ')})`);
  const pending = deliveries.length - delivered - failed.length;
  if (pending > 0) parts.push(`${pending} pending`);
  return parts.join(', ');
}

/**
 * The span a "Not an anomaly" on the episode marks: its first to its last flagged point (an open
 * episode: to now, or just past its peak for points stamped in the future).
 */
function spanOf(episode: EpisodeBody): { from: string; to: string } {
  const startMs = Date.parse(episode.started_at);
  const endMs = episode.ended_at === null ? Math.max(Date.now(), Date.parse(episode.peak.at)) : Date.parse(episode.ended_at);
  return { from: new Date(startMs).toISOString(), to: new Date(endMs + 1).toISOString() };
}

/**
 * The two cards of a machine's page: its episodes and its feedback. `machineId` may be a channel
 * series (`<machine>:<channel>`): its episodes are those of that series on the machine's log.
 */
export function machineAlertCards(machineId: string): { episodes: HTMLElement; feedback: HTMLElement; reloadFeedback: () => Promise<void> } {
  const separator = machineId.indexOf(':');
  const ownerId = separator < 0 ? machineId : machineId.slice(0, separator);
  const path = encodeURIComponent(machineId);
  const episodesCard = el('section', { class: 'card', 'data-testid': 'machine-episodes' }, el('h2', {}, 'Episodes and alerts'), el('p', { class: 'notice' }, 'Loading…'));
  const feedbackCard = el('section', { class: 'card', 'data-testid': 'machine-feedback' }, el('h2', {}, 'Feedback'), el('p', { class: 'notice' }, 'Loading…'));

  const reloadFeedback = async (): Promise<void> => {
    try {
      const { feedback } = await apiRequest<FeedbackList>('GET', `/v1/machines/${path}/feedback`);
      feedbackCard.replaceChildren(
        el('h2', {}, 'Feedback'),
        el('p', { class: 'notice' }, 'Spans marked not an anomaly: later points like their flagged ones no longer raise this machine’s alerts. The stored results keep the engine’s judgement.'),
        feedback.length === 0 ? el('p', { class: 'notice' }, 'No feedback yet.') : feedbackTable(feedback),
      );
    } catch (error) {
      feedbackCard.replaceChildren(el('h2', {}, 'Feedback'), errorBox(plainError(error)));
    }
  };

  function feedbackTable(feedback: readonly FeedbackView[]): HTMLElement {
    return el(
      'table',
      { 'data-testid': 'feedback' },
      el('thead', {}, el('tr', {}, ...['from', 'to', 'label', 'recognised values', 'given', ''].map((name) => el('th', {}, name)))),
      el(
        'tbody',
        {},
        ...feedback.map((f) => {
          const remove = el('button', { type: 'button', class: 'secondary' }, 'Remove');
          const actions = el('td', { class: 'actions' }, remove);
          remove.addEventListener('click', () => {
            remove.disabled = true;
            apiRequest('DELETE', `/v1/machines/${path}/feedback/${encodeURIComponent(f.feedback_id)}`).then(reloadFeedback, (error: unknown) => {
              remove.disabled = false;
              actions.append(el('span', { class: 'error', role: 'alert' }, plainError(error)));
            });
          });
          const pattern = f.pattern === null ? 'none (no stored points in the span)' : `${formatNumber(f.pattern.low)} to ${formatNumber(f.pattern.high)}, ${f.pattern.direction}`;
          return el(
            'tr',
            { 'data-feedback-id': f.feedback_id },
            el('td', {}, when(f.from)),
            el('td', {}, when(f.to)),
            el('td', {}, f.label === 'not_anomaly' ? 'not an anomaly' : 'anomaly'),
            el('td', {}, pattern),
            el('td', {}, when(f.created_at)),
            actions,
          );
        }),
      ),
    );
  }

  function episodeRow(episode: EpisodeBody): HTMLElement {
    const action = el('td', { class: 'actions' });
    const button = el('button', { type: 'button', class: 'secondary', 'data-testid': 'episode-not-anomaly' }, 'Not an anomaly');
    button.addEventListener('click', () => {
      button.disabled = true;
      apiRequest('POST', `/v1/machines/${encodeURIComponent(episode.series_id)}/feedback`, { ...spanOf(episode), label: 'not_anomaly' }).then(
        () => {
          action.replaceChildren(el('span', { class: 'notice', role: 'status' }, 'Marked: like points no longer alert.'));
          return reloadFeedback();
        },
        (error: unknown) => {
          button.disabled = false;
          action.append(el('span', { class: 'error', role: 'alert' }, plainError(error)));
        },
      );
    });
    action.append(button);
    const band = `${formatNumber(episode.peak.lower_bound)} to ${formatNumber(episode.peak.upper_bound)}`;
    return el(
      'tr',
      { 'data-series-id': episode.series_id, 'data-started-at': episode.started_at, 'data-state': episode.ended_at === null ? 'open' : 'closed' },
      el('td', {}, episode.series_id === ownerId ? 'machine' : episode.series_id.slice(ownerId.length + 1)),
      el('td', {}, when(episode.started_at)),
      el('td', {}, episode.ended_at === null ? 'open' : when(episode.ended_at)),
      el('td', { class: 'num' }, episode.flagged_points),
      el('td', { class: 'num' }, formatNumber(episode.peak.severity)),
      el('td', { class: 'num' }, formatNumber(episode.peak.value)),
      el('td', {}, band),
      el('td', {}, episode.channels.join(', ') || '—'),
      el(
        'td',
        { 'data-testid': 'episode-alerts' },
        ...episode.alerts.map((alert) =>
          el('div', { 'data-event': alert.event }, `${alert.event.replace('episode.', '')}: ${deliveriesText(alert)}`),
        ),
      ),
      action,
    );
  }

  const loadEpisodes = async (): Promise<void> => {
    try {
      const body = await apiRequest<EpisodesResponse>('GET', `/v1/machines/${encodeURIComponent(ownerId)}/episodes?limit=${MAX_EPISODES}`);
      const episodes = body.episodes.filter((e) => separator < 0 || e.series_id === machineId);
      episodesCard.replaceChildren(
        el('h2', {}, 'Episodes and alerts'),
        el('p', { class: 'notice' }, 'Each episode raised an alert when it opened and when it closed; here is what became of their webhook deliveries. The newest first.'),
        episodes.length === 0
          ? el('p', { class: 'notice' }, 'No episodes yet.')
          : el(
              'div',
              { class: 'table-scroll' },
              el(
                'table',
                { 'data-testid': 'episodes' },
                el('thead', {}, el('tr', {}, ...['series', 'started', 'ended', 'flagged points', 'peak severity', 'peak value', 'expected band at peak', 'channels', 'alerts', ''].map((name) => el('th', {}, name)))),
                el('tbody', {}, ...episodes.map(episodeRow)),
              ),
            ),
      );
    } catch (error) {
      episodesCard.replaceChildren(el('h2', {}, 'Episodes and alerts'), errorBox(describeError(error)));
    }
  };

  void loadEpisodes();
  void reloadFeedback();
  return { episodes: episodesCard, feedback: feedbackCard, reloadFeedback };
}
