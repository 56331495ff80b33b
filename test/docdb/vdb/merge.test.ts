// The VDB listing's merge (pure): shard pages, each sorted in the listing's direction and cut
// to skip + limit, merge to the page one database holding every document would list.
import fc from 'fast-check';
import assert from 'node:assert/strict';
import t from 'tap';
import { compareStrings } from '../../../src/core/keys.js';
import { mergeAllDocs } from '../../../src/docdb/vdb/merge.js';
import { fcParams } from '../../support/fc.js';

t.test('mergeAllDocs equals listing the union of the shards', (t) => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.string({ unit: 'binary', maxLength: 4 }), { maxLength: 40 }),
      fc.integer({ min: 1, max: 5 }),
      fc.boolean(),
      fc.nat(12),
      fc.option(fc.nat(12), { nil: undefined }),
      fc.nat(),
      (ids, shardCount, descending, skip, limit, salt) => {
        const order = (a: string, b: string) => (descending ? -compareStrings(a, b) : compareStrings(a, b));
        const shards: string[][] = Array.from({ length: shardCount }, () => []);
        ids.forEach((id, i) => shards[(i * 31 + salt) % shardCount]!.push(id));
        const cut = limit === undefined ? undefined : skip + limit;
        const pages = shards.map((s) => s.sort(order).slice(0, cut).map((id) => ({ id })));
        const want = [...ids].sort(order).slice(skip, limit === undefined ? undefined : skip + limit);
        assert.deepStrictEqual(mergeAllDocs(pages, { descending, skip, limit }).map((r) => r.id), want);
      },
    ),
    fcParams(200),
  );
  t.pass('200 runs');
  t.end();
});
