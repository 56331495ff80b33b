// Page arithmetic of the console's tables: every row lands on exactly one page, in order,
// and a page number out of range shows the nearest real page.
import fc from 'fast-check';
import t from 'tap';
import { pageCount, pageOf } from '../../console/src/paging.js';
import { fcParams } from '../support/fc.js';

t.test('pages partition the list in order', (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer(), { maxLength: 300 }), fc.integer({ min: 1, max: 50 }), (items, size) => {
      const count = pageCount(items.length, size);
      const joined = Array.from({ length: count }, (_, p) => pageOf(items, p, size)).flatMap((v) => [...v.rows]);
      const sizesOk = Array.from({ length: count }, (_, p) => pageOf(items, p, size).rows.length).every((n, p) => n <= size && (p === count - 1 || n === size));
      return JSON.stringify(joined) === JSON.stringify(items) && sizesOk;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a requested page out of range is clamped', (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer(), { maxLength: 300 }), fc.integer({ min: 1, max: 50 }), fc.integer({ min: -1_000, max: 1_000 }), (items, size, requested) => {
      const view = pageOf(items, requested, size);
      const expected = Math.min(Math.max(0, requested), view.pageCount - 1);
      return view.page === expected && view.offset === expected * size;
    }),
    fcParams(),
  );
  t.end();
});

t.test('an empty list is one empty page', (t) => {
  t.same(pageOf([], 3, 10), { page: 0, pageCount: 1, rows: [], offset: 0 });
  t.equal(pageCount(21, 10), 3);
  t.end();
});
