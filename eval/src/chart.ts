// A line chart drawn by hand on an RGB raster: axes, grid, ticks, lines, markers, a legend and
// labels in a 5x7 bitmap font. Used for docs/sensitivity-sweep.png.
import { createImage, encodePng, setPixel, type Rgb, type RgbImage } from './png.js';

// 5x7 glyphs, top row first, '#' = ink. Upper case only; lower case is drawn as upper case.
const GLYPHS: Readonly<Record<string, readonly string[]>> = {
  A: ['.###.', '#...#', '#...#', '#####', '#...#', '#...#', '#...#'],
  B: ['####.', '#...#', '#...#', '####.', '#...#', '#...#', '####.'],
  C: ['.###.', '#...#', '#....', '#....', '#....', '#...#', '.###.'],
  D: ['####.', '#...#', '#...#', '#...#', '#...#', '#...#', '####.'],
  E: ['#####', '#....', '#....', '####.', '#....', '#....', '#####'],
  F: ['#####', '#....', '#....', '####.', '#....', '#....', '#....'],
  G: ['.###.', '#...#', '#....', '#.###', '#...#', '#...#', '.####'],
  H: ['#...#', '#...#', '#...#', '#####', '#...#', '#...#', '#...#'],
  I: ['.###.', '..#..', '..#..', '..#..', '..#..', '..#..', '.###.'],
  J: ['..###', '...#.', '...#.', '...#.', '...#.', '#..#.', '.##..'],
  K: ['#...#', '#..#.', '#.#..', '##...', '#.#..', '#..#.', '#...#'],
  L: ['#....', '#....', '#....', '#....', '#....', '#....', '#####'],
  M: ['#...#', '##.##', '#.#.#', '#.#.#', '#...#', '#...#', '#...#'],
  N: ['#...#', '#...#', '##..#', '#.#.#', '#..##', '#...#', '#...#'],
  O: ['.###.', '#...#', '#...#', '#...#', '#...#', '#...#', '.###.'],
  P: ['####.', '#...#', '#...#', '####.', '#....', '#....', '#....'],
  Q: ['.###.', '#...#', '#...#', '#...#', '#.#.#', '#..#.', '.##.#'],
  R: ['####.', '#...#', '#...#', '####.', '#.#..', '#..#.', '#...#'],
  S: ['.####', '#....', '#....', '.###.', '....#', '....#', '####.'],
  T: ['#####', '..#..', '..#..', '..#..', '..#..', '..#..', '..#..'],
  U: ['#...#', '#...#', '#...#', '#...#', '#...#', '#...#', '.###.'],
  V: ['#...#', '#...#', '#...#', '#...#', '#...#', '.#.#.', '..#..'],
  W: ['#...#', '#...#', '#...#', '#.#.#', '#.#.#', '#.#.#', '.#.#.'],
  X: ['#...#', '#...#', '.#.#.', '..#..', '.#.#.', '#...#', '#...#'],
  Y: ['#...#', '#...#', '.#.#.', '..#..', '..#..', '..#..', '..#..'],
  Z: ['#####', '....#', '...#.', '..#..', '.#...', '#....', '#####'],
  '0': ['.###.', '#...#', '#..##', '#.#.#', '##..#', '#...#', '.###.'],
  '1': ['..#..', '.##..', '..#..', '..#..', '..#..', '..#..', '.###.'],
  '2': ['.###.', '#...#', '....#', '...#.', '..#..', '.#...', '#####'],
  '3': ['#####', '...#.', '..#..', '...#.', '....#', '#...#', '.###.'],
  '4': ['...#.', '..##.', '.#.#.', '#..#.', '#####', '...#.', '...#.'],
  '5': ['#####', '#....', '####.', '....#', '....#', '#...#', '.###.'],
  '6': ['..##.', '.#...', '#....', '####.', '#...#', '#...#', '.###.'],
  '7': ['#####', '....#', '...#.', '..#..', '.#...', '.#...', '.#...'],
  '8': ['.###.', '#...#', '#...#', '.###.', '#...#', '#...#', '.###.'],
  '9': ['.###.', '#...#', '#...#', '.####', '....#', '...#.', '.##..'],
  '.': ['.....', '.....', '.....', '.....', '.....', '.##..', '.##..'],
  ',': ['.....', '.....', '.....', '.....', '.##..', '..#..', '.#...'],
  '-': ['.....', '.....', '.....', '.###.', '.....', '.....', '.....'],
  ':': ['.....', '.##..', '.##..', '.....', '.##..', '.##..', '.....'],
  '(': ['...#.', '..#..', '.#...', '.#...', '.#...', '..#..', '...#.'],
  ')': ['.#...', '..#..', '...#.', '...#.', '...#.', '..#..', '.#...'],
  '/': ['.....', '....#', '...#.', '..#..', '.#...', '#....', '.....'],
  '%': ['##...', '##..#', '...#.', '..#..', '.#...', '#..##', '...##'],
  '=': ['.....', '.....', '#####', '.....', '#####', '.....', '.....'],
  ' ': ['.....', '.....', '.....', '.....', '.....', '.....', '.....'],
};

const GLYPH_WIDTH = 5;

/** Width in pixels of `text` drawn at `scale` (one blank column between glyphs). */
export function textWidth(text: string, scale: number): number {
  return text.length === 0 ? 0 : (text.length * (GLYPH_WIDTH + 1) - 1) * scale;
}

/** Draws `text` with its top-left corner at (x, y). Unknown characters draw as blanks. */
export function drawText(image: RgbImage, text: string, x: number, y: number, color: Rgb, scale = 1): void {
  let cursor = x;
  for (const ch of text.toUpperCase()) {
    const glyph = GLYPHS[ch] ?? GLYPHS[' '] ?? [];
    glyph.forEach((row, gy) => {
      for (let gx = 0; gx < row.length; gx += 1) {
        if (row[gx] !== '#') continue;
        fillRect(image, cursor + gx * scale, y + gy * scale, scale, scale, color);
      }
    });
    cursor += (GLYPH_WIDTH + 1) * scale;
  }
}

/** Draws `text` rotated a quarter turn counter-clockwise, reading bottom to top from (x, y). */
export function drawTextVertical(image: RgbImage, text: string, x: number, y: number, color: Rgb, scale = 1): void {
  let cursor = y;
  for (const ch of text.toUpperCase()) {
    const glyph = GLYPHS[ch] ?? GLYPHS[' '] ?? [];
    glyph.forEach((row, gy) => {
      for (let gx = 0; gx < row.length; gx += 1) {
        if (row[gx] !== '#') continue;
        fillRect(image, x + gy * scale, cursor - (gx + 1) * scale, scale, scale, color);
      }
    });
    cursor -= (GLYPH_WIDTH + 1) * scale;
  }
}

export function fillRect(image: RgbImage, x: number, y: number, w: number, h: number, color: Rgb): void {
  for (let dy = 0; dy < h; dy += 1) for (let dx = 0; dx < w; dx += 1) setPixel(image, x + dx, y + dy, color);
}

/** A line of the given thickness: Bresenham's walk, stamping a square at each step. */
export function drawLine(
  image: RgbImage,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  color: Rgb,
  thickness = 1,
): void {
  let x = Math.round(x0);
  let y = Math.round(y0);
  const xe = Math.round(x1);
  const ye = Math.round(y1);
  const dx = Math.abs(xe - x);
  const dy = -Math.abs(ye - y);
  const sx = x < xe ? 1 : -1;
  const sy = y < ye ? 1 : -1;
  let err = dx + dy;
  const half = Math.floor(thickness / 2);
  for (;;) {
    fillRect(image, x - half, y - half, thickness, thickness, color);
    if (x === xe && y === ye) break;
    const e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y += sy;
    }
  }
}

export function fillCircle(image: RgbImage, cx: number, cy: number, r: number, color: Rgb): void {
  for (let dy = -r; dy <= r; dy += 1) {
    for (let dx = -r; dx <= r; dx += 1) if (dx * dx + dy * dy <= r * r) setPixel(image, cx + dx, cy + dy, color);
  }
}

export interface ChartSeries {
  readonly name: string;
  readonly color: Rgb;
  /** null y = no value there; the line breaks. */
  readonly points: readonly { readonly x: number; readonly y: number | null }[];
}

export interface LineChartSpec {
  readonly width: number;
  readonly height: number;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xDomain: readonly [number, number];
  readonly yDomain: readonly [number, number];
  readonly xTicks: readonly number[];
  readonly yTicks: readonly number[];
  readonly series: readonly ChartSeries[];
}

const INK: Rgb = [30, 30, 30];
const GRID: Rgb = [225, 225, 225];

function tickLabel(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

export function drawLineChart(spec: LineChartSpec): RgbImage {
  const image = createImage(spec.width, spec.height);
  const left = 80;
  const right = spec.width - 190;
  const top = 60;
  const bottom = spec.height - 70;
  const [x0, x1] = spec.xDomain;
  const [y0, y1] = spec.yDomain;
  const px = (x: number): number => left + ((x - x0) / (x1 - x0)) * (right - left);
  const py = (y: number): number => bottom - ((y - y0) / (y1 - y0)) * (bottom - top);

  drawText(image, spec.title, Math.round((spec.width - textWidth(spec.title, 2)) / 2), 20, INK, 2);
  for (const t of spec.yTicks) {
    drawLine(image, left, py(t), right, py(t), GRID);
    const label = tickLabel(t);
    drawText(image, label, left - 10 - textWidth(label, 2), Math.round(py(t)) - 7, INK, 2);
  }
  for (const t of spec.xTicks) {
    drawLine(image, px(t), top, px(t), bottom, GRID);
    drawLine(image, px(t), bottom, px(t), bottom + 6, INK);
    const label = tickLabel(t);
    drawText(image, label, Math.round(px(t) - textWidth(label, 2) / 2), bottom + 12, INK, 2);
  }
  drawLine(image, left, top, left, bottom, INK, 2);
  drawLine(image, left, bottom, right, bottom, INK, 2);
  drawText(image, spec.xLabel, Math.round((left + right - textWidth(spec.xLabel, 2)) / 2), bottom + 40, INK, 2);
  drawTextVertical(image, spec.yLabel, 18, Math.round((top + bottom + textWidth(spec.yLabel, 2)) / 2), INK, 2);

  spec.series.forEach((s, index) => {
    let previous: { x: number; y: number } | undefined;
    for (const p of s.points) {
      if (p.y === null) {
        previous = undefined;
        continue;
      }
      const here = { x: px(p.x), y: py(p.y) };
      if (previous !== undefined) drawLine(image, previous.x, previous.y, here.x, here.y, s.color, 3);
      previous = here;
    }
    for (const p of s.points) if (p.y !== null) fillCircle(image, Math.round(px(p.x)), Math.round(py(p.y)), 5, s.color);
    const ly = top + 10 + index * 30;
    drawLine(image, right + 20, ly + 7, right + 50, ly + 7, s.color, 3);
    fillCircle(image, right + 35, ly + 7, 5, s.color);
    drawText(image, s.name, right + 60, ly, INK, 2);
  });
  return image;
}

export function lineChartPng(spec: LineChartSpec): Buffer {
  return encodePng(drawLineChart(spec));
}
