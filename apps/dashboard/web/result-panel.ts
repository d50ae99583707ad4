// The chart, its legend and the table of flagged points, shared by the detect and machine pages.
import { renderChart, chartLegend, type ChartHandle } from './chart.js';
import { append, el, formatNumber } from './dom.js';
import type { ResultView } from './results.js';

/** Rows the flagged-points table shows at most; the downloads have them all. */
const MAX_TABLE_ROWS = 500;

let current: ChartHandle | null = null;

/**
 * Marks a flagged point (the machine page's stored results): resolves with what to say. Given,
 * each flagged anomaly with a timestamp gets a "Not an anomaly" button, in a last column.
 */
export type FeedbackAction = (row: ResultView['rows'][number]) => Promise<string>;

function feedbackCell(row: ResultView['rows'][number], onFeedback: FeedbackAction): HTMLElement {
  const cell = el('td', { class: 'actions' });
  if (!row.isAnomaly || row.timestamp === null) return cell;
  const button = el('button', { type: 'button', class: 'secondary', 'data-testid': 'not-anomaly' }, 'Not an anomaly');
  button.addEventListener('click', () => {
    button.disabled = true;
    onFeedback(row).then(
      (said) => cell.replaceChildren(el('span', { class: 'notice', role: 'status' }, said)),
      (error: unknown) => {
        button.disabled = false;
        cell.append(el('span', { class: 'error', role: 'alert' }, error instanceof Error ? error.message : String(error)));
      },
    );
  });
  cell.append(button);
  return cell;
}

export function renderResultPanel(target: HTMLElement, view: ResultView, summary: string, onFeedback?: FeedbackAction): void {
  current?.destroy();
  const chart = el('div', { class: 'chart', 'data-testid': 'chart' });
  const flagged = view.rows.filter((row) => row.isAnomaly || row.isChangePoint);
  const shown = flagged.slice(0, MAX_TABLE_ROWS);
  const table = el(
    'table',
    { 'data-testid': 'flagged' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...['#', 'timestamp', 'value', 'expected', 'band', 'kind', 'severity', 'regime', 'z-score', ...(onFeedback ? ['feedback'] : [])].map((name) => el('th', {}, name)),
      ),
    ),
    el(
      'tbody',
      {},
      ...shown.map((row) =>
        el(
          'tr',
          { 'data-index': row.index },
          el('td', { class: 'num' }, row.index),
          el('td', {}, row.timestamp ?? '—'),
          el('td', { class: 'num' }, formatNumber(row.value)),
          el('td', { class: 'num' }, formatNumber(row.expected)),
          el('td', { class: 'num' }, row.lower === null || row.upper === null ? '—' : `${formatNumber(row.lower)} … ${formatNumber(row.upper)}`),
          el('td', {}, kindOf(row)),
          el('td', { class: 'num' }, formatNumber(row.isChangePoint ? row.confidence : row.severity, 3)),
          el('td', {}, row.regime ?? '—'),
          el('td', { class: 'num' }, formatNumber(row.zScore, 2)),
          onFeedback ? feedbackCell(row, onFeedback) : null,
        ),
      ),
    ),
  );
  target.replaceChildren();
  append(
    target,
    el('p', { 'data-testid': 'summary' }, summary),
    chartLegend(view),
    chart,
    el('h3', {}, `Flagged points (${flagged.length})`),
    flagged.length === 0 ? el('p', { class: 'notice' }, 'No point was flagged.') : el('div', { class: 'table-scroll' }, table),
    flagged.length > shown.length && el('p', { class: 'notice' }, `The first ${MAX_TABLE_ROWS} are listed; the downloads have every row.`),
  );
  current = renderChart(chart, view);
}

function kindOf(row: ResultView['rows'][number]): string {
  if (row.isChangePoint) return 'changepoint';
  if (row.isPositiveAnomaly) return 'anomaly (high)';
  if (row.isNegativeAnomaly) return 'anomaly (low)';
  return 'anomaly';
}
