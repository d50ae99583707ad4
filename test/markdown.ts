// Reading the tables and numbers of a Markdown file (the README's tables and example answers, which
// tests compare with the committed results files and with the running service).

/**
 * The body rows of the table whose header row starts with `header`: each row's cells trimmed, with
 * bold marks removed; throws when there is no such table.
 */
export function markdownTableRows(markdown: string, header: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.startsWith(header));
  if (start < 0) throw new Error(`no table with the header ${header}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|').slice(1, -1).map((cell) => cell.trim().replaceAll('**', '')));
  }
  return rows;
}

/**
 * Whether `measured` is the number printed as `text` (thousands commas allowed): rounded to the
 * decimals the text shows; a text with an exponent or 10 or more decimals must be that double
 * exactly.
 */
export function printedAs(text: string, measured: number): boolean {
  const plain = text.replaceAll(',', '');
  const printed = Number(plain);
  const decimals = /[eE]/.test(plain) ? Infinity : (plain.split('.')[1] ?? '').length;
  if (decimals >= 10) return measured === printed;
  return Math.abs(measured - printed) <= 0.5 * 10 ** -decimals + 1e-12 * Math.abs(printed);
}
