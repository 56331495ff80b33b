import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import t from 'tap';
import {
  type HashRange, assertTiling, hashId, initialRanges, mergeRanges, phash2, rangeRouting, routeId, shardFor, splitRanges, xxh32,
} from '../../src/core/shard-hash.js';
import { fcParams } from '../support/fc.js';

t.test('phash2 matches the Erlang test vectors', (t) => {
  const vectors: [string, number][] = [
    ['', 147926629], ['a', 1589197455], ['ab', 261815530], ['abc', 1306188027], ['abcd', 3219329547],
    ['abcde', 504217779], ['abcdefghijklm', 3501102500], ['doc1', 3988098649], ['doc2', 3068482438],
    ['user1', 3577399572], ['user2', 1706859671], ['user3', 1720660493], ['user123', 2149142609],
    ['mydoc', 434793591], ['hello world', 2583687111], ['0123456789abcdef', 3208154133], ['ééé', 2829836831],
  ];
  for (const [id, h] of vectors) t.equal(hashId(id, 'phash2'), h, JSON.stringify(id));
  t.end();
});

t.test('XXH32 seed 0 known values', (t) => {
  const enc = new TextEncoder();
  t.equal(xxh32(enc.encode('')), 0x02cc5d05);
  t.equal(xxh32(enc.encode('a')), 0x550d7456);
  t.equal(xxh32(enc.encode('abc')), 0x32d153ff);
  t.equal(xxh32(enc.encode('Nobody inspects the spammish repetition')), 0xe2293b2f);
  t.end();
});

t.test('ranges from the spec and routing examples', (t) => {
  t.same(initialRanges(2).map((r) => [r.start, r.end]), [[0, 2147483647], [2147483648, 4294967295]]);
  t.same(initialRanges(4).map((r) => [r.start, r.end]), [[0, 1073741823], [1073741824, 2147483647], [2147483648, 3221225471], [3221225472, 4294967295]]);
  t.same(initialRanges(3).map((r) => [r.start, r.end]), [[0, 1431655764], [1431655765, 2863311529], [2863311530, 4294967295]]);
  const four = initialRanges(4);
  for (const [id, shard] of [['doc1', 3], ['doc2', 2], ['user123', 2], ['a', 1], ['mydoc', 0], ['user1', 3], ['user2', 1]] as const) {
    t.equal(shardFor(four, hashId(id, 'phash2')), shard, id);
  }
  t.end();
});

t.test('after any sequence of splits and merges the ranges tile the space and route every id once', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 8 }),
      fc.array(fc.tuple(fc.boolean(), fc.nat(), fc.nat()), { maxLength: 30 }),
      fc.array(fc.string({ unit: 'binary', maxLength: 16 }), { maxLength: 20 }),
      (n, ops, ids) => {
        let ranges: HashRange[] = initialRanges(n);
        for (const [split, x, y] of ops) {
          const ids = ranges.map((r) => r.shardId);
          if (split) {
            const r = ranges[x % ranges.length]!;
            if (r.end > r.start) ranges = splitRanges(ranges, r.shardId, Math.max(...ids) + 1);
          } else if (ranges.length > 1) {
            const sorted = [...ranges].sort((a, b) => a.start - b.start);
            const i = x % (sorted.length - 1);
            const [a, b] = y % 2 ? [sorted[i]!, sorted[i + 1]!] : [sorted[i + 1]!, sorted[i]!];
            ranges = mergeRanges(ranges, a.shardId, b.shardId);
          }
          assertTiling(ranges);
        }
        for (const id of ids) {
          const h = hashId(id, 'phash2');
          const holders = ranges.filter((r) => h >= r.start && h <= r.end);
          if (holders.length !== 1 || holders[0]!.shardId !== shardFor(ranges, h)) return false;
        }
        return true;
      },
    ),
    fcParams(300),
  );
  t.end();
});

t.test('merging non-adjacent shards is refused', (t) => {
  t.throws(() => mergeRanges(initialRanges(4), 0, 2), /not adjacent/);
  t.end();
});

// Placement on disk must never change: the hashes and ranges were recorded from the modules
// before they moved here (vdb/hash.ts and the hash embedder's hash32), for 500 seeded ids.
t.test('every id routes exactly as before the move (golden table)', (t) => {
  const golden = JSON.parse(readFileSync(new URL('./fixtures/shard-hash-golden.json', import.meta.url), 'utf8')) as {
    counts: number[];
    rows: { id: string; phash2: number; xxhash: number; phash2Shards: number[]; xxhashShards: number[]; legacyVector: number[] }[];
  };
  t.equal(golden.rows.length, 500);
  let mismatches = 0;
  for (const row of golden.rows) {
    const p = hashId(row.id, 'phash2');
    const x = hashId(row.id, 'xxhash');
    const same =
      p === row.phash2 &&
      x === row.xxhash &&
      golden.counts.every((n, i) => shardFor(initialRanges(n), p) === row.phash2Shards[i] && shardFor(initialRanges(n), x) === row.xxhashShards[i]) &&
      golden.counts.every((n, i) => {
        const shards = Array.from({ length: n }, (_, s) => 100 + s);
        return routeId({ scheme: 'legacy_modulo', shards }, row.id) === 100 + row.legacyVector[i]!;
      });
    if (!same) mismatches++;
  }
  t.equal(mismatches, 0);
  t.end();
});

t.test('range routing of a collection: shard ids in order, every id to the shard whose range holds its xxhash', (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 64 }), fc.string(), (shards, id) => {
      const routing = rangeRouting(shards);
      if (routing.scheme !== 'ranges') return false;
      assertTiling(routing.ranges);
      const position = initialRanges(shards.length).findIndex((r) => r.start <= hashId(id, 'xxhash') && hashId(id, 'xxhash') <= r.end);
      return routeId(routing, id) === shards[position];
    }),
    fcParams(),
  );
  t.end();
});
