// The virtual list's window against a row-by-row oracle: every row that meets the viewport
// is rendered, nothing further than the overscan is, and the spacers keep the full height.
import fc from 'fast-check';
import t from 'tap';
import { type WindowInput, rowWindow } from '../../console/src/windowing.js';
import { fcParams } from '../support/fc.js';

/** Naive: test each row for overlap with the (clamped) viewport; an empty viewport still shows the row under its top. */
function naiveWindow(input: WindowInput): { start: number; end: number } {
  const { count, rowPx, viewportPx, overscanRows } = input;
  if (count === 0) return { start: 0, end: 0 };
  const top = Math.min(Math.max(0, input.scrollTopPx), Math.max(0, count * rowPx - viewportPx));
  const visible: number[] = [];
  for (let i = 0; i < count; i++) if (i * rowPx < top + viewportPx && (i + 1) * rowPx > top) visible.push(i);
  if (visible.length === 0) visible.push(Math.min(count - 1, Math.floor(top / rowPx)));
  return { start: Math.max(0, visible[0]! - overscanRows), end: Math.min(count, visible[visible.length - 1]! + 1 + overscanRows) };
}

const arbInput = fc.record({
  count: fc.integer({ min: 0, max: 2_000 }),
  rowPx: fc.integer({ min: 1, max: 60 }),
  viewportPx: fc.integer({ min: 0, max: 1_200 }),
  scrollTopPx: fc.oneof(fc.integer({ min: -100, max: 150_000 }), fc.double({ min: 0, max: 150_000, noNaN: true })),
  overscanRows: fc.integer({ min: 0, max: 10 }),
});

t.test('the window matches the row-by-row oracle', (t) => {
  fc.assert(
    fc.property(arbInput, (input) => {
      const w = rowWindow(input);
      const naive = naiveWindow(input);
      return w.start === naive.start && w.end === naive.end;
    }),
    fcParams(),
  );
  t.end();
});

t.test('spacers and rendered rows add up to the whole list', (t) => {
  fc.assert(
    fc.property(arbInput, (input) => {
      const w = rowWindow(input);
      return w.padTopPx + (w.end - w.start) * input.rowPx + w.padBottomPx === input.count * input.rowPx && w.start <= w.end;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a few cases by hand', (t) => {
  t.same(rowWindow({ count: 0, rowPx: 28, viewportPx: 300, scrollTopPx: 0, overscanRows: 4 }), { start: 0, end: 0, padTopPx: 0, padBottomPx: 0 });
  t.same(rowWindow({ count: 1_000, rowPx: 20, viewportPx: 200, scrollTopPx: 0, overscanRows: 2 }), { start: 0, end: 12, padTopPx: 0, padBottomPx: 988 * 20 });
  t.same(rowWindow({ count: 1_000, rowPx: 20, viewportPx: 200, scrollTopPx: 1_010, overscanRows: 2 }), { start: 48, end: 63, padTopPx: 960, padBottomPx: 937 * 20 });
  // Scrolled past the end while the list shrank: the last page of rows, not nothing.
  t.same(rowWindow({ count: 10, rowPx: 20, viewportPx: 100, scrollTopPx: 5_000, overscanRows: 0 }), { start: 5, end: 10, padTopPx: 100, padBottomPx: 0 });
  t.end();
});
