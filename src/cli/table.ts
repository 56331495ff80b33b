// Aligned text tables: each column as wide as its widest cell, columns two spaces apart,
// no trailing spaces. Widths count code points (no East Asian width tables: names and
// addresses are what we print).

const GAP = '  ';

/**
 * Node names and addresses come from the network: a control character (an escape sequence,
 * a newline) in one must not move the cursor or break a row, so it shows as U+FFFD. Edge
 * whitespace would be invisible in a table and is dropped.
 */
export function cleanCell(value: string): string {
  return value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD').trim();
}

export function widthOf(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

/** One line per row, without newlines; a short row is padded with empty cells. */
export function formatTable(rows: readonly (readonly string[])[]): string[] {
  const cells = rows.map((row) => row.map(cleanCell));
  const columns = Math.max(0, ...cells.map((row) => row.length));
  const widths: number[] = [];
  for (let c = 0; c < columns; c++) widths.push(Math.max(...cells.map((row) => widthOf(row[c] ?? ''))));
  return cells.map((row) =>
    widths
      .map((w, c) => {
        const cell = row[c] ?? '';
        return cell + ' '.repeat(w - widthOf(cell));
      })
      .join(GAP)
      .trimEnd(),
  );
}
