// MaxScore-pruned BM25 against the exhaustive scorer (`rankBm25`, the oracle): the same ids and
// the same scores (===) in the same order, for the pure algorithm with exact and loose bounds,
// and for both backends after random writes, a reopen, and a migration from the version-1
// disk layout (postings without term bounds).
import fc from 'fast-check';
import path from 'node:path';
import { rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import { decodeKey, encodeKey, prefixRange } from '../../src/core/keys.js';
import { COLUMN_FAMILIES, Store } from '../../src/storage/db.js';
import { unpackOps } from '../../src/storage/write-worker.js';
import { type Posting, type ScoredId, byScoreThenId, rankBm25, sumQueryStats } from '../../src/vector/bm25.js';
import { type MaxScoreRun, type PostingColumns, type PostingRead, type QueryTerm, exactBound, rankBm25MaxScore } from '../../src/vector/bm25-maxscore.js';
import { type Bm25Index, POSTING_CACHE_BYTES, SPENT_ORDINALS_SLACK, bm25ShardRange, byGroupOrder, decodeBoundDeltas, gallopTo, newPostingCache, openBm25 } from '../../src/vector/bm25-index.js';
import type { CollectionConfig } from '../../src/vector/collection-config.js';
import { fcParams } from '../support/fc.js';
import { tempDir } from '../support/node.js';
import { DEFAULT_BM25, exactBm25, fullPostings } from '../support/bm25-oracle.js';

const params = DEFAULT_BM25;
const VOCABULARY = Array.from({ length: 14 }, (_, i) => `w${i}`);

/** A word, skewed towards the first ones (Zipf-like), so lists differ in length a lot. */
const arbWord = fc.integer({ min: 0, max: 999 }).map((x) => VOCABULARY[Math.floor(VOCABULARY.length * (x / 1000) ** 3)]!);
const arbText = fc.array(arbWord, { maxLength: 14 }).map((w) => w.join(' '));
/** Ids that sort differently by code unit and code point, and repeat texts (equal scores). */
const arbId = fc.string({ minLength: 1, maxLength: 3, unit: fc.constantFrom('a', 'b', 'Z', 'é', '\u{1F600}', '\uFB01') });
const arbQuery = fc.array(fc.oneof(arbWord, fc.constant('absent')), { minLength: 1, maxLength: 4 }).map((w) => w.join(' '));

/** The columns of `postings`, aligned with `docIds` (undefined: that document lacks the term). */
function columnsOf(docIds: readonly string[], postings: readonly (Posting | undefined)[]): PostingColumns {
  const tfs = new Uint32Array(postings.length);
  const docLengths = new Uint32Array(postings.length);
  for (let i = 0; i < postings.length; i++) {
    const p = postings[i];
    if (p === undefined) continue;
    tfs[i] = p.tf;
    docLengths[i] = p.docLength;
  }
  return { docIds, tfs, docLengths };
}

/** A whole list's columns. */
function listColumns(list: readonly Posting[]): PostingColumns {
  return columnsOf(
    list.map((p) => p.docId),
    list,
  );
}


/** Runs a MaxScore run against a synchronous reader. */
function driveSync(run: MaxScoreRun, read: (request: PostingRead) => PostingColumns): ScoredId[] {
  let step = run.next();
  while (step.done !== true) step = run.next(read(step.value));
  return step.value;
}

/** A reader over full lists that counts the postings it hands out. */
function memoryReader(byTerm: ReadonlyMap<string, readonly Posting[]>) {
  const counter = { postings: 0 };
  const read = (r: PostingRead) => {
    const list = byTerm.get(r.term)!;
    if (r.kind === 'list') {
      counter.postings += list.length;
      return listColumns(list);
    }
    counter.postings += r.docIds.length;
    return columnsOf(
      r.docIds,
      r.docIds.map((id) => list.find((p) => p.docId === id)),
    );
  };
  return { read, counter };
}

t.test('pure: pruned top-k equals exhaustive top-k, with exact and loosened bounds', async (t) => {
  const arbCorpus = fc.array(fc.tuple(arbId, arbText), { maxLength: 40 }).map((pairs) => new Map(pairs));
  fc.assert(
    fc.property(arbCorpus, arbQuery, fc.integer({ min: 1, max: 12 }), fc.nat(3), fc.nat(5), (corpus, query, k, tfSlack, lengthSlack) => {
      const { byTerm, stats } = fullPostings(corpus, query);
      const terms: QueryTerm[] = [...byTerm].map(([term, list]) => {
        const exact = exactBound(listColumns(list));
        return { term, bound: { df: exact.df, tfMax: exact.tfMax + tfSlack, docLengthMin: Math.max(0, exact.docLengthMin - lengthSlack) } };
      });
      const pruned = driveSync(rankBm25MaxScore(terms, stats, params, k), memoryReader(byTerm).read);
      t.strictSame(pruned, rankBm25(byTerm, stats, params, k));
    }),
    fcParams(500),
  );
});

t.test('pure: a rare term makes a common one a lookup, not a scan', async (t) => {
  const corpus = new Map<string, string>();
  for (let i = 0; i < 2000; i++) corpus.set(`c${i}`, `common filler filler ${i % 7 === 0 ? 'common' : 'filler'}`);
  for (let i = 0; i < 3; i++) corpus.set(`r${i}`, 'rare rare common');
  const { byTerm, stats } = fullPostings(corpus, 'rare common');
  const terms = [...byTerm].map(([term, list]) => ({ term, bound: exactBound(listColumns(list)) }));
  const { read, counter } = memoryReader(byTerm);
  const pruned = driveSync(rankBm25MaxScore(terms, stats, params, 2), read);
  t.strictSame(pruned, rankBm25(byTerm, stats, params, 2));
  t.strictSame(pruned.map((h) => h.id), ['r0', 'r1']);
  t.equal(counter.postings, 3 + 3, 'the 3 postings of "rare", then "common" looked up for those 3 only');
});

t.test('pure: a document whose bound only equals the k-th score still wins on its id', async (t) => {
  // "a" and "b" have equal bounds; "a" (first in the query) is read first, so z is scored,
  // then y's best possible score equals z's exactly, and y sorts first on the id.
  const corpus = new Map([
    ['z', 'a x'],
    ['y', 'b x'],
  ]);
  const { byTerm, stats } = fullPostings(corpus, 'a b');
  const terms = [...byTerm].map(([term, list]) => ({ term, bound: exactBound(listColumns(list)) }));
  const pruned = driveSync(rankBm25MaxScore(terms, stats, params, 1), memoryReader(byTerm).read);
  t.strictSame(pruned.map((h) => h.id), ['y']);
  t.strictSame(pruned, rankBm25(byTerm, stats, params, 1));
});

/** A store in a temp dir, closed and removed when `t` ends. */
async function openTestStore(t: Test): Promise<Store> {
  const dir = tempDir('firkin-bm25-');
  const store = await Store.open(path.join(dir, 'db'));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

function bm25Config(backend: 'memory' | 'disk'): CollectionConfig {
  return { bm25_backend: backend, bm25: { k1: params.k1, b: params.b, stopwords: 'none' } } as CollectionConfig;
}

type Op = { kind: 'put'; id: string; text: string } | { kind: 'del'; id: string };
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('put' as const), id: arbId, text: arbText }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('del' as const), id: arbId }) },
);
/** Batches of writes, each id once per batch (as a shard's group commit guarantees). */
const arbBatches = fc.array(fc.array(arbOp, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 8 }).map((batches) =>
  batches.map((ops) => [...new Map(ops.map((op) => [op.id, op])).values()]),
);

async function applyBatches(index: Bm25Index, store: Store, model: Map<string, string>, batches: readonly Op[][]): Promise<void> {
  for (const ops of batches) {
    const changes = ops
      .filter((op) => op.kind === 'put' || model.has(op.id))
      .map((op) => ({ id: op.id, oldText: model.get(op.id), newText: op.kind === 'put' ? op.text : undefined }));
    const prepared = index.prepare(changes);
    await store.batch(prepared.ops, { sync: false }, prepared.packed);
    prepared.apply();
    for (const op of ops) {
      if (op.kind === 'put') model.set(op.id, op.text);
      else model.delete(op.id);
    }
  }
}

async function expectOracle(t: Test, index: Bm25Index, model: ReadonlyMap<string, string>, queries: readonly [string, number][], label: string): Promise<void> {
  for (const [query, k] of queries) {
    const got = await index.search(query, k);
    const want = exactBm25(model, query, k);
    if (JSON.stringify(got) !== JSON.stringify(want) || got.some((h, i) => h.score !== want[i]!.score)) {
      t.strictSame(got, want, `${label}: ${JSON.stringify(query)} k=${k}`);
      throw new Error('pruned search differs from the exhaustive oracle');
    }
  }
}

/**
 * Which reads go on the event loop's thread and which through the pool: all, none, a mix; how
 * many slots a shard keeps (0: dealt anew at every search); how many bound deltas between two
 * folds (1: every change folds, as version 2 wrote every bound).
 */
const arbReadLimits = fc.record({ syncListPostingsMax: fc.constantFrom(0, 1, 3, 4_096), syncLookupsMax: fc.constantFrom(0, 1, 256), slotsMax: fc.constantFrom(0, 2, 1 << 20), boundDeltasMax: fc.constantFrom(1, 2, 3, 64), goneTermsSlack: fc.constantFrom(0, 4_096) });

/** The shared list cache's bound: nothing fits, a few short lists fit (evictions), the default. */
const arbCacheBytes = fc.constantFrom(1, 4_000, POSTING_CACHE_BYTES);

/** When the memory backend renumbers its documents (and the disk backend deals its slots anew): after every write that removes one, sometimes, or as a node does. */
const arbSpentSlack = fc.constantFrom(0, 3, SPENT_ORDINALS_SLACK);

const arbQueries = fc.array(fc.tuple(arbQuery, fc.integer({ min: 1, max: 10 })), { minLength: 1, maxLength: 6 });

t.test('both backends: search equals the oracle after random writes; disk also after a reopen and a migration', async (t) => {
  const store = await openTestStore(t);
  let shard = 1;
  await fc.assert(
    fc.asyncProperty(arbBatches, arbQueries, arbReadLimits, arbCacheBytes, arbSpentSlack, async (batches, queries, limits, cacheBytes, spentSlack) => {
      // One cache for every index of the run, as a node shares one between its shards.
      const cache = newPostingCache(cacheBytes);
      const memoryModel = new Map<string, string>();
      const memory = (await openBm25(bm25Config('memory'), store, 0, cache, undefined, spentSlack))!;
      await applyBatches(memory, store, memoryModel, batches);
      await expectOracle(t, memory, memoryModel, queries, 'memory');
      // Written after the searches cached their lists (new documents, then the old ones
      // rewritten): every touched term's list is rebuilt.
      await applyBatches(memory, store, memoryModel, batches.map((ops) => ops.map((op) => ({ ...op, id: `${op.id}b` }))));
      await expectOracle(t, memory, memoryModel, queries, 'memory, new documents after searches');
      await applyBatches(memory, store, memoryModel, [[...memoryModel.keys()].filter((_, i) => i % 2 === 0).map((id) => ({ kind: 'del' as const, id }))]);
      await expectOracle(t, memory, memoryModel, queries, 'memory, deletions after searches');
      await applyBatches(memory, store, memoryModel, [...batches].reverse());
      await expectOracle(t, memory, memoryModel, queries, 'memory, written after searches');

      const id = shard++;
      const model = new Map<string, string>();
      const disk = (await openBm25(bm25Config('disk'), store, id, cache, limits, spentSlack))!;
      await applyBatches(disk, store, model, batches);
      await expectOracle(t, disk, model, queries, 'disk');
      // The same queries again: now answered from cached lists and tightened bounds.
      await expectOracle(t, disk, model, queries, 'disk, cached');
      // Deletions after the lists were cached: the slots of removed documents pile up until dealt anew.
      await applyBatches(disk, store, model, [[...model.keys()].filter((_, i) => i % 2 === 0).map((id) => ({ kind: 'del' as const, id }))]);
      await expectOracle(t, disk, model, queries, 'disk, deletions after searches');
      await applyBatches(disk, store, model, batches.slice(0, 3).map((ops) => ops.map((op) => ({ ...op, id: `${op.id}c` }))));
      await expectOracle(t, disk, model, queries, 'disk, new documents after deletions');
      await expectOracle(t, disk, model, queries, 'disk, new documents after deletions, cached');
      await expectOracle(t, (await openBm25(bm25Config('disk'), store, id, cache, limits, spentSlack))!, model, queries, 'disk, reopened');

      // Version 1 had exactly these keys minus the term bounds (and their deltas) and the version.
      const v2Keys: Buffer[] = [];
      for await (const key of store.keys('bm25', prefixRange([id]))) if (['f', 'g', 'v'].includes(decodeKey(key)[1] as string)) v2Keys.push(key);
      await store.batch(v2Keys.map((key) => ({ type: 'del' as const, cf: 'bm25' as const, key })), { sync: false });
      const migrated = (await openBm25(bm25Config('disk'), store, id, cache, limits, spentSlack))!;
      t.ok(await store.get('bm25', encodeKey([id, 'v'])), 'the migration writes the layout version');
      await expectOracle(t, migrated, model, queries, 'disk, migrated from version 1');
      // A migrated shard keeps taking writes.
      await applyBatches(migrated, store, model, batches.slice(0, 2));
      await expectOracle(t, migrated, model, queries, 'disk, migrated then written');
    }),
    fcParams(60),
  );
});

t.test('disk: changes prepared on pending ones, searched meanwhile, then applied in order or abandoned, equal the oracle, and so does a reopen', async (t) => {
  const store = await openTestStore(t);
  let shard = 1_000;
  // Each round prepares up to three batches on each other; the first `applied` are written and
  // applied in order (searches between), the rest abandoned in the order given.
  const arbRound = fc.record({ batches: arbBatches.map((b) => b.slice(0, 3)), applied: fc.nat(3), abandonOrder: fc.constantFrom('newest first' as const, 'oldest first' as const) });
  await fc.assert(
    fc.asyncProperty(fc.array(arbRound, { minLength: 1, maxLength: 5 }), arbQueries, arbReadLimits, arbCacheBytes, async (rounds, queries, limits, cacheBytes) => {
      const cache = newPostingCache(cacheBytes);
      const id = shard++;
      const index = (await openBm25(bm25Config('disk'), store, id, cache, limits))!;
      const model = new Map<string, string>();
      for (const [r, round] of rounds.entries()) {
        const ahead = new Map(model);
        const prepared = round.batches.map((ops) => {
          const changes = ops
            .filter((op) => op.kind === 'put' || ahead.has(op.id))
            .map((op) => ({ id: op.id, oldText: ahead.get(op.id), newText: op.kind === 'put' ? op.text : undefined }));
          for (const op of ops) {
            if (op.kind === 'put') ahead.set(op.id, op.text);
            else ahead.delete(op.id);
          }
          return { ops, change: index.prepare(changes) };
        });
        // Searches see none of the pending changes, and may cache and tighten while they wait.
        await expectOracle(t, index, model, queries, `round ${r}, prepared`);
        const applied = Math.min(round.applied, prepared.length);
        for (const { ops, change } of prepared.slice(0, applied)) {
          await store.batch(change.ops, { sync: false }, change.packed);
          change.apply();
          for (const op of ops) {
            if (op.kind === 'put') model.set(op.id, op.text);
            else model.delete(op.id);
          }
          await expectOracle(t, index, model, queries, `round ${r}, applied`);
        }
        const abandoned = prepared.slice(applied);
        for (const { change } of round.abandonOrder === 'newest first' ? abandoned.reverse() : abandoned) change.abandon();
        await expectOracle(t, index, model, queries, `round ${r}, abandoned`);
      }
      // Writes after the rounds build on what was applied only (a wrong bound left by an
      // abandoned change shows as a wrong df or a failed assertion here).
      await applyBatches(index, store, model, rounds.map((round) => round.batches.flat()).slice(0, 3).map((ops) => [...new Map(ops.map((op) => [op.id, op])).values()]));
      await expectOracle(t, index, model, queries, 'written after the rounds');
      expectDf(index, model, queries, 'written after the rounds');
      await expectOracle(t, (await openBm25(bm25Config('disk'), store, id, cache, limits))!, model, queries, 'reopened');
    }),
    fcParams(60),
  );
});

/** The index's statistics for each query are `model`'s. */
function expectDf(index: Bm25Index, model: ReadonlyMap<string, string>, queries: readonly [string, number][], label: string): void {
  for (const [query] of queries) {
    const { byTerm, stats } = fullPostings(model, query);
    const got = index.queryStats(query);
    const want = { docCount: stats.docCount, totalLength: stats.totalLength, df: Object.fromEntries(Object.keys(got.df).map((term) => [term, byTerm.get(term)?.length ?? 0])) };
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${label}: statistics of ${JSON.stringify(query)} are ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
  }
}

t.test('memory: a staged change is invisible to searches until applied, and an abandoned one leaves nothing behind', async (t) => {
  const arbFates = fc.array(fc.constantFrom('apply' as const, 'abandon' as const), { minLength: 8, maxLength: 8 });
  await fc.assert(
    fc.asyncProperty(arbBatches, arbFates, arbQueries, arbSpentSlack, async (batches, fates, queries, spentSlack) => {
      const index = (await openBm25(bm25Config('memory'), undefined as unknown as Store, 0, newPostingCache(), undefined, spentSlack))!;
      const model = new Map<string, string>();
      // Each batch twice: the second time its documents are there already (updates).
      for (const [b, ops] of [...batches, ...batches].entries()) {
        const changes = ops
          .filter((op) => op.kind === 'put' || model.has(op.id))
          .map((op) => ({ id: op.id, oldText: model.get(op.id), newText: op.kind === 'put' ? op.text : undefined }));
        const prepared = index.prepare(changes);
        // Searched before staging too, so cached columns must notice what becomes visible.
        await expectOracle(t, index, model, queries, `batch ${b}, before`);
        prepared.stage();
        await expectOracle(t, index, model, queries, `batch ${b}, staged`);
        expectDf(index, model, queries, `batch ${b}, staged`);
        if (fates[b % fates.length] === 'abandon') {
          prepared.abandon();
          await expectOracle(t, index, model, queries, `batch ${b}, abandoned`);
          continue;
        }
        prepared.apply();
        for (const op of ops) {
          if (op.kind === 'put') model.set(op.id, op.text);
          else model.delete(op.id);
        }
        await expectOracle(t, index, model, queries, `batch ${b}, applied`);
        expectDf(index, model, queries, `batch ${b}, applied`);
      }
    }),
    fcParams(100),
  );
});

t.test('disk: a change writes its postings term by term in order, each key\'s ops in the order made', async (t) => {
  const store = await openTestStore(t);
  const index = (await openBm25(bm25Config('disk'), store, 11, newPostingCache()))!;
  const model = new Map<string, string>();
  await applyBatches(index, store, model, [[{ kind: 'put', id: 'a', text: 'w9 w1 w5' }, { kind: 'put', id: 'b', text: 'w5 w2' }]]);
  // a rewritten (w1 and w5 go, w3 comes, w9 stays), c new, b deleted: a del and a put of one key.
  const prepared = index.prepare([
    { id: 'c', oldText: undefined, newText: 'w7 w1 w0' },
    { id: 'a', oldText: 'w9 w1 w5', newText: 'w9 w3' },
    { id: 'b', oldText: 'w5 w2', newText: undefined },
  ]);
  const written = [...prepared.ops, ...unpackOps(prepared.packed ?? new Uint8Array(0), COLUMN_FAMILIES)];
  t.ok(written.every((op) => op.cf === 'bm25'), 'only postings, bounds and stats');
  const kinds = (kind: string) => written.map((op) => ({ type: op.type, parts: decodeKey(op.key) })).filter((op) => op.parts[1] === kind);
  t.strictSame(
    kinds('p').map((op) => `${op.type} ${op.parts[2] as string} ${op.parts[3] as string}`),
    ['put w0 c', 'put w1 c', 'del w1 a', 'del w2 b', 'put w3 a', 'del w5 a', 'del w5 b', 'put w7 c', 'del w9 a', 'put w9 a'],
    'postings by term, then in the order the changes made them',
  );
  t.strictSame(kinds('f'), [], 'no bound key of its own');
  t.strictSame(
    kinds('g').map((op) => `${op.type} ${op.parts[2] as number}`),
    ['put 1'],
    'one bound delta, the second change’s',
  );
  const delta = written.find((op) => decodeKey(op.key)[1] === 'g')!;
  const bounds: string[] = [];
  decodeBoundDeltas((delta as { value: Buffer }).value, (term, bound) => bounds.push(`${term} ${bound?.df ?? 0}`));
  t.strictSame(bounds, ['w0 1', 'w1 1', 'w2 0', 'w3 1', 'w5 0', 'w7 1', 'w9 1'], 'each term it touched, in term order, with its df (0: gone)');
  await store.batch(prepared.ops, { sync: false }, prepared.packed);
  prepared.apply();
  model.set('c', 'w7 w1 w0').set('a', 'w9 w3').delete('b');
  await expectOracle(t, index, model, [['w9', 10], ['w1 w5', 10], ['w0 w3 w7 w2', 10]], 'after the change');
});

t.test('disk: bounds go as one delta a change, folded into their keys every boundDeltasMax changes; versions 2 and 3 open, a later one does not', async (t) => {
  const store = await openTestStore(t);
  const limits = { syncListPostingsMax: 4_096, syncLookupsMax: 256, slotsMax: 1 << 20, boundDeltasMax: 3, goneTermsSlack: 4_096 };
  const keysOf = async (shard: number, kind: string) => {
    const out: string[] = [];
    for await (const key of store.keys('bm25', prefixRange([shard, kind]))) out.push(String(decodeKey(key)[2]));
    return out;
  };
  let index = (await openBm25(bm25Config('disk'), store, 21, newPostingCache(), limits))!;
  const model = new Map<string, string>();
  const queries: [string, number][] = [['w1', 10], ['w2 w3', 10], ['w0 w1 w2 w3 w4', 3]];
  await applyBatches(index, store, model, [[{ kind: 'put', id: 'a', text: 'w1 w2' }], [{ kind: 'put', id: 'b', text: 'w2 w3' }]]);
  t.strictSame(await keysOf(21, 'g'), ['0', '1'], 'two changes: two deltas');
  t.strictSame(await keysOf(21, 'f'), [], 'no bound key yet');
  await applyBatches(index, store, model, [[{ kind: 'del', id: 'a' }, { kind: 'put', id: 'c', text: 'w4' }]]);
  t.strictSame(await keysOf(21, 'g'), [], 'the third folds: the deltas go');
  t.strictSame(await keysOf(21, 'f'), ['w2', 'w3', 'w4'], 'every term changed since, w1 gone with its last posting');
  // A term of any length (no analyzer limit): 70,000 letters.
  const long = 'x'.repeat(70_000);
  await applyBatches(index, store, model, [[{ kind: 'put', id: 'd', text: `w1 w0 ${long}` }]]);
  t.strictSame(await keysOf(21, 'g'), ['3'], 'deltas again after the fold');
  queries.push([long, 3]);
  await expectOracle(t, index, model, queries, 'written');
  expectDf(index, model, queries, 'written');
  index = (await openBm25(bm25Config('disk'), store, 21, newPostingCache(), limits))!;
  await expectOracle(t, index, model, queries, 'reopened: the keys, then the delta over them');
  expectDf(index, model, queries, 'reopened');
  await applyBatches(index, store, model, [[{ kind: 'del', id: 'b' }], [{ kind: 'put', id: 'a', text: 'w3 w3 w1' }]]);
  t.strictSame(await keysOf(21, 'g'), [], 'reopened, it counts the delta it found toward the next fold');
  t.ok(JSON.stringify(await keysOf(21, 'f')) === JSON.stringify(['w0', 'w1', 'w3', 'w4', long]), 'w2 gone with b');

  // Version 2: bound keys only. It opens, and is marked 3 before a delta is written.
  const version = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n, 0);
    return b;
  };
  await store.batch([{ type: 'put', cf: 'bm25', key: encodeKey([21, 'v']), value: version(2) }], { sync: false });
  index = (await openBm25(bm25Config('disk'), store, 21, newPostingCache(), limits))!;
  t.equal((await store.get('bm25', encodeKey([21, 'v'])))?.readUInt32BE(0), 3, 'a version-2 shard is marked 3 at open');
  await expectOracle(t, index, model, queries, 'opened from version 2');
  await store.batch([{ type: 'put', cf: 'bm25', key: encodeKey([21, 'v']), value: version(4) }], { sync: false });
  await t.rejects(openBm25(bm25Config('disk'), store, 21, newPostingCache(), limits), /BM25 layout of shard 21: version 4/, 'a later layout is refused, not misread');
});

t.test('byGroupOrder: the items\' indexes, stably sorted by their group\'s place in the order', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 12 }).chain((groups) => fc.tuple(fc.shuffledSubarray([...Array(groups).keys()], { minLength: groups }), fc.array(fc.nat(groups - 1), { maxLength: 80 }))), ([order, groupOf]) => {
      const items = groupOf.map((group, i) => ({ group, i }));
      const want = [...items].sort((a, b) => order.indexOf(a.group) - order.indexOf(b.group));
      t.strictSame([...byGroupOrder(groupOf, order)], want.map((item) => item.i));
    }),
    fcParams(300),
  );
});

t.test('disk: a shard reopened over dropped data never reads the old instance’s lists from the shared cache', async (t) => {
  const store = await openTestStore(t);
  const cache = newPostingCache();
  const before = new Map<string, string>();
  const old = (await openBm25(bm25Config('disk'), store, 7, cache))!;
  await applyBatches(old, store, before, [[{ kind: 'put', id: 'a', text: 'w1 w2' }, { kind: 'put', id: 'b', text: 'w1' }]]);
  await expectOracle(t, old, before, [['w1', 10]], 'old instance');
  t.ok(cache.size > 0, "the old instance's list of w1 is cached");
  // A replica's snapshot install: the shard's data dropped and written again from another
  // replica's keys (here: by an index with its own cache), then the shard opened again.
  await store.clearRange('bm25', bm25ShardRange(7));
  const after = new Map<string, string>();
  await applyBatches((await openBm25(bm25Config('disk'), store, 7, newPostingCache()))!, store, after, [[{ kind: 'put', id: 'c', text: 'w1 w3' }]]);
  const fresh = (await openBm25(bm25Config('disk'), store, 7, cache))!;
  await expectOracle(t, fresh, after, [['w1', 10], ['w1 w2', 10]], 'reopened over dropped data');
  t.strictSame((await fresh.search('w1', 10)).map((h) => h.id), ['c']);
});

t.test('disk: the shared cache counts a list by its postings and holds no more than its bound', async (t) => {
  const store = await openTestStore(t);
  const cache = newPostingCache(64 * 1024);
  const model = new Map<string, string>();
  const index = (await openBm25(bm25Config('disk'), store, 8, cache))!;
  // w0 in every document, wi in one in i: lists of 400, 200, 133, ... postings.
  const docs = Array.from({ length: 400 }, (_, n) => ({ kind: 'put' as const, id: `d${n}`, text: ['w0', ...[2, 3, 4, 5, 6].filter((i) => n % i === 0).map((i) => `w${i}`)].join(' ') }));
  await applyBatches(index, store, model, [docs]);
  await expectOracle(t, index, model, [['w0', 5], ['w2', 5], ['w3', 5]], 'first reads');
  t.ok(cache.calculatedSize > 400 * 36, `a list of 400 postings counts at least 36 bytes each (${cache.calculatedSize})`);
  for (let round = 0; round < 3; round++) await expectOracle(t, index, model, [['w4', 5], ['w5', 5], ['w6', 5], ['w0 w6', 5]], `round ${round}`);
  t.ok(cache.calculatedSize <= 64 * 1024, `never above the bound (${cache.calculatedSize})`);
});

t.test('disk: a term only ever looked up is read whole and cached once its lookups add up to its length', async (t) => {
  const store = await openTestStore(t);
  const cache = newPostingCache();
  const model = new Map<string, string>();
  const index = (await openBm25(bm25Config('disk'), store, 9, cache))!;
  // "w1" in 400 documents; "w2" (rarer, so read first) in 3 of them: each query looks "w1" up for 3 ids.
  const docs = Array.from({ length: 400 }, (_, n) => ({ kind: 'put' as const, id: `d${n}`, text: n < 3 ? 'w1 w2 w2' : 'w1 w3' }));
  await applyBatches(index, store, model, [docs]);
  await expectOracle(t, index, model, [['w2 w1', 2]], 'first query');
  t.equal(cache.size, 1, 'only the rare list is cached: the common one was looked up by key');
  // 3 ids a query, 4 per id: 400 postings' worth after 34 queries in all.
  for (let q = 1; q < 33; q++) await expectOracle(t, index, model, [['w2 w1', 2]], `query ${q + 1}`);
  t.equal(cache.size, 1, 'still looked up by key after 33 queries (99 ids)');
  await expectOracle(t, index, model, [['w2 w1', 2]], 'query 34');
  t.equal(cache.size, 2, 'the 34th query reads the common list whole and keeps it');
});

t.test('disk: lists cached before the slots are dealt anew take new slots when next ranked', async (t) => {
  const store = await openTestStore(t);
  const model = new Map<string, string>();
  // Slack 0: slots are dealt anew once removed documents' slots pass twice the live ones.
  const index = (await openBm25(bm25Config('disk'), store, 10, newPostingCache(), undefined, 0))!;
  const many = Array.from({ length: 20 }, (_, n) => `d${n}`);
  await applyBatches(index, store, model, [[{ kind: 'put', id: 'a', text: 'w1 w4' }, { kind: 'put', id: 'b', text: 'w2' }, ...many.map((id) => ({ kind: 'put' as const, id, text: 'w3' }))]]);
  await expectOracle(t, index, model, [['w1 w2', 5], ['w3', 5]], 'slots for a, b and the 20 w3 documents');
  await applyBatches(index, store, model, [many.map((id) => ({ kind: 'del' as const, id }))]);
  // 22 slots, 2 live documents: this search deals them anew, and w4's list takes new slots...
  await expectOracle(t, index, model, [['w4', 5]], 'after the deletions');
  // ...while w1's and w2's lists, still cached, were given theirs in the old deal.
  await expectOracle(t, index, model, [['w1 w2 w4', 5], ['w2 w4', 5]], 'cached lists of both deals');
  t.strictSame((await index.search('w1 w2 w4', 5)).map((h) => h.id).sort(), ['a', 'b']);
});

t.test('memory: postings too large to pack into a small integer score like the others', async (t) => {
  // tf 1023 packs, 1024 and more do not (an object instead); both kinds in one list and one lookup.
  const model = new Map([
    ['a', Array(1023).fill('w1').join(' ')],
    ['b', `${Array(1024).fill('w1').join(' ')} w2`],
    ['c', `${Array(1500).fill('w1').join(' ')} w2 w2`],
    ['d', 'w1 w2'],
  ]);
  const index = (await openBm25(bm25Config('memory'), undefined as unknown as Store, 0, newPostingCache()))!;
  index.prepare([...model].map(([id, text]) => ({ id, oldText: undefined, newText: text }))).apply();
  await expectOracle(t, index, model, [['w1', 4], ['w2', 4], ['w1 w2', 4], ['w2 w1', 2], ['w1', 1]], 'memory');
  t.strictSame((await index.search('w1', 4)).map((h) => h.id).sort(), ['a', 'b', 'c', 'd']);
});

t.test('both backends: shards ranking with the collection’s summed statistics answer as one index over all of it', async (t) => {
  const store = await openTestStore(t);
  let nextShard = 1_000;
  await fc.assert(
    fc.asyncProperty(arbBatches, arbQueries, fc.integer({ min: 1, max: 4 }), fc.constantFrom('memory' as const, 'disk' as const), async (batches, queries, shardCount, backend) => {
      // Documents spread over the shards by a hash of the id, as a collection routes them.
      const shardOf = (id: string) => [...id].reduce((h, c) => (h * 31 + c.codePointAt(0)!) >>> 0, 7) % shardCount;
      const cache = newPostingCache(POSTING_CACHE_BYTES);
      const shards = await Promise.all(Array.from({ length: shardCount }, async () => ({ index: (await openBm25(bm25Config(backend), store, nextShard++, cache))!, model: new Map<string, string>() })));
      for (const ops of batches) {
        for (let s = 0; s < shardCount; s++) await applyBatches(shards[s]!.index, store, shards[s]!.model, [ops.filter((op) => shardOf(op.id) === s)]);
      }
      const whole = new Map(shards.flatMap((s) => [...s.model]));
      for (const [query, k] of queries) {
        const collection = sumQueryStats(shards.map((s) => s.index.queryStats(query)));
        const merged = (await Promise.all(shards.map((s) => s.index.search(query, k, collection)))).flat().sort(byScoreThenId).slice(0, k);
        const want = exactBm25(whole, query, k);
        if (JSON.stringify(merged) !== JSON.stringify(want) || merged.some((h, i) => h.score !== want[i]!.score)) {
          t.strictSame(merged, want, `${backend}, ${shardCount} shards: ${JSON.stringify(query)} k=${k}`);
          throw new Error('sharded search differs from one index over the whole corpus');
        }
      }
    }),
    fcParams(60),
  );
});

t.test('gallopTo finds the first place at or after `from` holding at least the value', async (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.nat(200), { maxLength: 60 }), fc.integer({ min: -5, max: 210 }), fc.nat(70), (values, value, fromSeed) => {
      const sorted = [...values].sort((a, b) => a - b);
      const from = fromSeed % (sorted.length + 1);
      let want = from;
      while (want < sorted.length && sorted[want]! < value) want++;
      return gallopTo(sorted, value, from) === want;
    }),
    fcParams(500),
  );
  t.pass();
});
