// Reading the tables of a Markdown file (the README's evaluation and benchmark tables, which tests
// compare with the committed results files).

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
