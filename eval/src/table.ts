// The one markdown table `npm run eval` prints: our figures beside the published anchors.

export interface TableRow {
  readonly name: string;
  /** NAB normalised scores: standard, low FP, low FN. */
  readonly nab?: readonly [number, number, number] | undefined;
  readonly tcpdF1?: number | undefined;
  readonly tcpdCover?: number | undefined;
  /** NAB standard's leave-one-category-out folds, as `foldCell` prints them. */
  readonly folds?: string | undefined;
  readonly note?: string | undefined;
}

const HEADER = [
  'detector',
  'NAB standard',
  'NAB low FP',
  'NAB low FN',
  'NAB standard folds: mean (min–max)',
  'TCPD F1',
  'TCPD cover',
  'note',
] as const;

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);
}

export function markdownTable(rows: readonly TableRow[]): string {
  const cells = rows.map((r) => [
    r.name,
    fixed(r.nab?.[0], 1),
    fixed(r.nab?.[1], 1),
    fixed(r.nab?.[2], 1),
    r.folds ?? '—',
    fixed(r.tcpdF1, 3),
    fixed(r.tcpdCover, 3),
    r.note ?? '',
  ]);
  const line = (c: readonly string[]): string => `| ${c.join(' | ')} |`;
  return [line(HEADER), line(HEADER.map((_, i) => (i === 0 || i === HEADER.length - 1 ? '---' : '---:'))), ...cells.map(line)].join('\n');
}
