// A VDB's listing (docdb/all-docs.ts mergedListing, no I/O of its own): shards read a page at a
// time, merged by id and cut to skip and limit, equal listing the union of the shards, also when
// the map changes under the listing (another shard count, ids moved between shards) and the
// old map's shards answer stale_epoch from then on, as fenced shard leaders do.
import fc from 'fast-check';
import assert from 'node:assert/strict';
import t from 'tap';
import { FirkinError } from '../../../src/core/errors.js';
import { compareStrings } from '../../../src/core/keys.js';
import { type ListingShards, mergedListing } from '../../../src/docdb/all-docs.js';
import { fcParams } from '../../support/fc.js';

t.test('mergedListing lists the union of the shards once, in order, across map changes', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.uniqueArray(fc.string({ unit: 'binary', maxLength: 4 }), { maxLength: 60 }),
      fc.array(fc.record({ shards: fc.integer({ min: 1, max: 5 }), salt: fc.nat(), atRead: fc.integer({ min: 1, max: 30 }) }), { maxLength: 3 }),
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 7 }),
      fc.boolean(),
      fc.nat(12),
      fc.option(fc.nat(20), { nil: undefined }),
      async (ids, switches, firstShards, pageRows, descending, skip, limit) => {
        const order = (a: string, b: string) => (descending ? -compareStrings(a, b) : compareStrings(a, b));
        const maps = [{ shards: firstShards, salt: 0, atRead: 0 }, ...switches.sort((a, b) => a.atRead - b.atRead)];
        let version = 0;
        let reads = 0;
        const shardOf = (id: string, m: { shards: number; salt: number }) => [...id].reduce((h, c) => h * 31 + c.charCodeAt(0), m.salt) % m.shards;
        const shardsNow = (): ListingShards => {
          const at = version;
          const m = maps[at]!;
          return {
            version: at,
            readers: Array.from({ length: m.shards }, (_, i) => async (after: string | undefined, n: number) => {
              reads++;
              // A switch lands during this read: it and every later read of the old map are fenced.
              while (version + 1 < maps.length && reads >= maps[version + 1]!.atRead) version++;
              if (version !== at) throw new FirkinError('stale_epoch', 'the map moved');
              return ids
                .filter((id) => shardOf(id, m) === i && (after === undefined || order(id, after) > 0))
                .sort(order)
                .slice(0, n)
                .map((id) => ({ id, key: id }));
            }),
          };
        };
        const got: string[] = [];
        for await (const row of mergedListing(async () => shardsNow(), { descending, skip, limit, pageRows })) got.push(row.id!);
        assert.deepStrictEqual(got, [...ids].sort(order).slice(skip, limit === undefined ? undefined : skip + limit));
      },
    ),
    fcParams(200),
  );
  t.pass('200 runs');
});

t.test('a map that keeps changing ends the listing with unavailable', async (t) => {
  let version = 0;
  const shardsNow = async (): Promise<ListingShards> => ({
    version: version,
    readers: [async () => {
      version++;
      throw new FirkinError('stale_epoch', 'the map moved');
    }],
  });
  await t.rejects(async () => {
    for await (const _ of mergedListing(shardsNow, { descending: false, skip: 0 }));
  }, { code: 'unavailable' });
});
