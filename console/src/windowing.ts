// Which rows of a long list to render (a "virtualised" list): every row has the same height,
// so the rows that intersect the viewport follow from the scroll offset alone. Rows outside
// are replaced by two spacers whose heights keep the scrollbar true to the whole list.
//
//   0 ─┬─ padTopPx          rows [0, start) not rendered
//      ├─ rows [start, end)  rendered: the visible ones plus `overscanRows` on each side
//      └─ padBottomPx        rows [end, count) not rendered
//
// Pure: the component (ui.tsx `VirtualList`) feeds it the scroll offset it reads.
export interface WindowInput {
  readonly count: number;
  readonly rowPx: number;
  readonly viewportPx: number;
  readonly scrollTopPx: number;
  /** Rows rendered beyond each edge, so a fast scroll does not show blank space first. */
  readonly overscanRows: number;
}

export interface RowWindow {
  /** First rendered row (inclusive). */
  readonly start: number;
  /** Past the last rendered row (exclusive); `start === end` renders nothing. */
  readonly end: number;
  readonly padTopPx: number;
  readonly padBottomPx: number;
}

export function rowWindow(input: WindowInput): RowWindow {
  const { count, rowPx, viewportPx, overscanRows } = input;
  if (count <= 0 || rowPx <= 0) return { start: 0, end: 0, padTopPx: 0, padBottomPx: 0 };
  // A browser may report a scroll offset past the end for a moment while a list shrinks.
  const maxScrollPx = Math.max(0, count * rowPx - viewportPx);
  const scrollTopPx = Math.min(Math.max(0, input.scrollTopPx), maxScrollPx);
  const firstVisible = Math.min(count - 1, Math.floor(scrollTopPx / rowPx));
  // Rows whose top lies before the viewport's bottom edge intersect it (or touch it, when
  // the viewport is empty: then one row is still drawn so the list has something to focus).
  const pastLastVisible = Math.max(firstVisible + 1, Math.ceil((scrollTopPx + viewportPx) / rowPx));
  const start = Math.max(0, firstVisible - overscanRows);
  const end = Math.min(count, pastLastVisible + overscanRows);
  return { start, end, padTopPx: start * rowPx, padBottomPx: (count - end) * rowPx };
}
