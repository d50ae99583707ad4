// A series chart with uPlot (canvas; stays smooth at 8,640 points and more): values, the expected
// band (expected ± margins), anomalies as red points, changepoints as vertical markers, regimes
// as coloured bands behind. The container's data attributes repeat what is drawn (point count,
// anomaly and changepoint indices), for the browser tests and anyone reading the page's DOM.
import uPlot from 'uplot';
import { el } from './dom.js';
import { regimeSpans, type ResultView } from './results.js';

export const REGIME_COLOURS: Readonly<Record<string, string>> = {
  ACTIVE: 'rgba(255, 193, 7, 0.18)',
  TRANSITION: 'rgba(123, 97, 255, 0.18)',
  SHOCK: 'rgba(229, 57, 53, 0.16)',
};
const ANOMALY = '#c62828';
const CHANGEPOINT = '#ef6c00';

/**
 * Rows drawn at most. A longer series (a detection job's, up to a million points) is drawn as
 * each bucket's lowest and highest value plus every anomaly, so peaks and flags stay visible;
 * this is for drawing only: the series was judged on every point.
 */
export const DRAWN_POINTS_MAX = 20_000;

/** The row indices drawn: all of them up to `max`, else each bucket's extremes and every flagged row, ascending. */
export function drawnIndices(values: readonly number[], flagged: readonly boolean[], max = DRAWN_POINTS_MAX): number[] {
  const n = values.length;
  if (n <= max) return Array.from({ length: n }, (_, index) => index);
  const size = Math.ceil(n / Math.max(1, Math.floor(max / 2)));
  const drawn: number[] = [];
  for (let start = 0; start < n; start += size) {
    const end = Math.min(n, start + size);
    let low = start;
    let high = start;
    const picked = new Set<number>();
    for (let index = start; index < end; index++) {
      if (values[index]! < values[low]!) low = index;
      if (values[index]! > values[high]!) high = index;
      if (flagged[index]) picked.add(index);
    }
    picked.add(low).add(high);
    drawn.push(...[...picked].sort((a, b) => a - b));
  }
  return drawn;
}

export interface ChartHandle {
  destroy(): void;
}

export function renderChart(container: HTMLElement, view: ResultView): ChartHandle {
  container.replaceChildren();
  const rows = view.rows;
  const timed = rows.length > 0 && rows.every((row) => row.timestamp !== null);
  const xs = rows.map((row) => (timed ? Date.parse(row.timestamp ?? '') / 1000 : row.index));
  const hasBand = rows.some((row) => row.expected !== null);
  const spans = regimeSpans(rows);

  const drawn = drawnIndices(
    rows.map((row) => row.value),
    rows.map((row) => row.isAnomaly || row.isChangePoint),
  );
  const pick = <T>(values: readonly T[]): T[] => drawn.map((index) => values[index]!);
  container.dataset['points'] = String(rows.length);
  container.dataset['drawn'] = String(drawn.length);
  container.dataset['anomalies'] = view.anomalyIndices.join(',');
  container.dataset['changepoints'] = view.changePointIndices.join(',');
  container.dataset['regimeSpans'] = spans.map((span) => `${span.regime}:${span.start}-${span.end}`).join(',');
  const yRange = valueRange(rows);
  container.dataset['yRange'] = yRange.join(',');

  const series: uPlot.Series[] = [{ label: timed ? 'time (UTC)' : 'index' }, { label: 'value', stroke: '#2456c9', width: 1 }];
  const data: (number | null)[][] = [pick(xs), pick(rows.map((row) => row.value))];
  if (hasBand) {
    series.push(
      { label: 'expected', stroke: '#6b7a90', width: 1, dash: [4, 4] },
      { label: 'lower', stroke: 'rgba(107, 122, 144, 0.35)', width: 1 },
      { label: 'upper', stroke: 'rgba(107, 122, 144, 0.35)', width: 1 },
    );
    data.push(
      pick(rows.map((row) => row.expected)),
      pick(rows.map((row) => row.lower)),
      pick(rows.map((row) => row.upper)),
    );
  }
  series.push({
    label: 'anomaly',
    stroke: ANOMALY,
    width: 0,
    paths: () => null,
    points: { show: true, size: 7, fill: ANOMALY, stroke: ANOMALY },
  });
  data.push(pick(rows.map((row) => (row.isAnomaly ? row.value : null))));

  const xOf = (index: number): number => xs[index] ?? 0;
  const options: uPlot.Options = {
    width: Math.max(320, container.clientWidth || 1100),
    height: 340,
    series,
    scales: { x: { time: timed }, y: { range: () => yRange } },
    // Ticks at least 90 px apart: time labels are wide.
    axes: [{ space: 90 }, { size: 60 }],
    ...(hasBand ? { bands: [{ series: [4, 3], fill: 'rgba(36, 86, 201, 0.08)' }] } : {}),
    ...(timed ? { tzDate: (seconds: number) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC') } : {}),
    hooks: {
      drawClear: [
        (u) => {
          const { ctx, bbox } = u;
          ctx.save();
          for (const span of spans) {
            const left = u.valToPos(xOf(span.start), 'x', true);
            const right = u.valToPos(xOf(span.end), 'x', true);
            ctx.fillStyle = REGIME_COLOURS[span.regime] ?? 'rgba(0, 0, 0, 0.05)';
            ctx.fillRect(left, bbox.top, Math.max(2, right - left), bbox.height);
          }
          ctx.restore();
        },
      ],
      draw: [
        (u) => {
          const { ctx, bbox } = u;
          ctx.save();
          ctx.strokeStyle = CHANGEPOINT;
          ctx.lineWidth = 2;
          ctx.setLineDash([6, 4]);
          for (const index of view.changePointIndices) {
            const x = u.valToPos(xOf(index), 'x', true);
            ctx.beginPath();
            ctx.moveTo(x, bbox.top);
            ctx.lineTo(x, bbox.top + bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
  const plot = new uPlot(options, data as uPlot.AlignedData, container);
  const resize = (): void => plot.setSize({ width: Math.max(320, container.clientWidth || 1100), height: 340 });
  window.addEventListener('resize', resize);
  return {
    destroy() {
      window.removeEventListener('resize', resize);
      plot.destroy();
    },
  };
}

/**
 * The y range: the values, and the band where it stays near them. A band far wider than the data
 * (a model's warm-up, before it knows the series) would squash the values into a strip; it is
 * clipped at one data range beyond them.
 */
export function valueRange(rows: ResultView['rows']): [number, number] {
  let low = Number.POSITIVE_INFINITY;
  let high = Number.NEGATIVE_INFINITY;
  for (const row of rows) {
    if (!Number.isFinite(row.value)) continue;
    low = Math.min(low, row.value);
    high = Math.max(high, row.value);
  }
  if (!Number.isFinite(low)) return [0, 1];
  const span = Math.max(high - low, Math.abs(high) * 1e-6, 1e-9);
  let bandLow = low;
  let bandHigh = high;
  for (const row of rows) {
    for (const edge of [row.lower, row.upper]) {
      if (edge === null || !Number.isFinite(edge)) continue;
      bandLow = Math.min(bandLow, Math.max(edge, low - span));
      bandHigh = Math.max(bandHigh, Math.min(edge, high + span));
    }
  }
  const pad = 0.05 * (bandHigh - bandLow || span);
  return [bandLow - pad, bandHigh + pad];
}

/** The legend for what the chart draws besides the lines. */
export function chartLegend(view: ResultView): HTMLElement {
  const swatch = (colour: string): HTMLElement => el('span', { class: 'swatch', style: `background:${colour}` });
  const regimes = new Set(regimeSpans(view.rows).map((span) => span.regime));
  // A changepoint answer has no band and no anomalies: its legend does not speak of them.
  const hasBand = view.rows.some((row) => row.expected !== null);
  const flags = view.rows.some((row) => row.isAnomaly) || hasBand;
  return el(
    'div',
    { class: 'legend', 'data-testid': 'legend' },
    hasBand && el('span', {}, swatch('rgba(36, 86, 201, 0.25)'), 'expected band'),
    flags && el('span', {}, swatch(ANOMALY), `anomalies (${view.anomalyIndices.length})`),
    view.changePointIndices.length > 0 && el('span', {}, swatch(CHANGEPOINT), `changepoint (${view.changePointIndices.length})`),
    ...[...regimes].map((regime) => el('span', {}, swatch(REGIME_COLOURS[regime] ?? '#eee'), regime)),
  );
}
