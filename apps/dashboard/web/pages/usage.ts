import { apiRequest, describeError } from '../api.js';
import type { DailyUsageResponse, UsageSummary } from '../api-types.js';
import { el, errorBox } from '../dom.js';
import { quotaView } from '../quota.js';

function planCard(summary: UsageSummary): HTMLElement {
  const view = quotaView(summary);
  const stat = (label: string, testId: string, text: string) => el('div', {}, el('dt', {}, label), el('dd', { 'data-testid': testId }, text));
  return el(
    'div',
    { 'data-testid': 'plan' },
    el(
      'dl',
      { class: 'stats' },
      stat('plan', 'quota-plan', view.plan),
      stat('used', 'quota-used', view.used),
      stat('remaining', 'quota-remaining', view.remaining),
      view.renews === null ? null : stat('renews', 'quota-renews', view.renews),
    ),
    view.bar === null
      ? null
      : el(
          'p',
          { class: 'progress' },
          el('progress', { 'data-testid': 'quota-bar', value: view.bar.value, max: view.bar.max, 'aria-label': 'points used this month' }),
        ),
  );
}

export async function renderUsage(main: HTMLElement): Promise<void> {
  const card = el('section', { class: 'card' }, el('h2', {}, 'Usage'), el('p', { class: 'notice' }, 'Loading…'));
  main.replaceChildren(card);
  try {
    const [summary, daily] = await Promise.all([
      apiRequest<UsageSummary>('GET', '/v1/usage/summary'),
      apiRequest<DailyUsageResponse>('GET', '/v1/usage/daily'),
    ]);
    const usage = summary.usage;
    const totalPoints = usage.reduce((sum, record) => sum + record.total_points, 0);
    const totalCalls = usage.reduce((sum, record) => sum + record.call_count, 0);
    card.replaceChildren(
      el('h2', {}, 'Usage'),
      el('h3', {}, 'Plan'),
      el('p', { class: 'notice' }, 'Points sent on live keys count toward the monthly quota; test keys never do.'),
      planCard(summary),
      el('h3', {}, 'Per endpoint'),
      el('p', { class: 'notice' }, "Your organization's successful calls and the points they carried, per endpoint."),
      el(
        'table',
        { 'data-testid': 'usage' },
        el('thead', {}, el('tr', {}, el('th', {}, 'endpoint'), el('th', {}, 'calls'), el('th', {}, 'points'))),
        el(
          'tbody',
          {},
          ...usage.map((record) =>
            el(
              'tr',
              { 'data-endpoint': record.endpoint },
              el('td', {}, record.endpoint),
              el('td', { class: 'num' }, record.call_count.toLocaleString('en-US')),
              el('td', { class: 'num' }, record.total_points.toLocaleString('en-US')),
            ),
          ),
          el('tr', {}, el('th', {}, 'total'), el('th', { class: 'num' }, totalCalls.toLocaleString('en-US')), el('th', { class: 'num' }, totalPoints.toLocaleString('en-US'))),
        ),
      ),
      el('h3', {}, `Per day, ${daily.from} to ${daily.to} (UTC)`),
      daily.days.length === 0
        ? el('p', { class: 'notice', 'data-testid': 'usage-daily' }, 'No calls in these days.')
        : el(
            'table',
            { 'data-testid': 'usage-daily' },
            el('thead', {}, el('tr', {}, el('th', {}, 'day'), el('th', {}, 'endpoint'), el('th', {}, 'calls'), el('th', {}, 'points'))),
            el(
              'tbody',
              {},
              ...[...daily.days].sort((a, b) => (a.day === b.day ? a.endpoint.localeCompare(b.endpoint) : b.day.localeCompare(a.day))).map((record) =>
                el(
                  'tr',
                  { 'data-day': record.day, 'data-endpoint': record.endpoint },
                  el('td', {}, record.day),
                  el('td', {}, record.endpoint),
                  el('td', { class: 'num' }, record.call_count.toLocaleString('en-US')),
                  el('td', { class: 'num' }, record.total_points.toLocaleString('en-US')),
                ),
              ),
            ),
          ),
    );
  } catch (error) {
    card.replaceChildren(el('h2', {}, 'Usage'), errorBox(describeError(error)));
  }
}
