// The memory backend's ranking (`rankBm25Accumulate`) against the exhaustive scorer
// (`rankBm25`, the oracle): the same ids and the same scores (===) in the same order, with
// exact and loosened bounds, documents under any keys, and one scratch reused across searches.
// The backend itself is checked against the oracle after random writes in bm25-maxscore.test.ts.
import fc from 'fast-check';
import t from 'tap';
import { type Posting, rankBm25 } from '../../src/vector/bm25.js';
import { type KeyedColumns, newAccumulator, rankBm25Accumulate } from '../../src/vector/bm25-accumulate.js';
import { type QueryTerm, exactBound } from '../../src/vector/bm25-maxscore.js';
import { fcParams } from '../support/fc.js';
import { DEFAULT_BM25, fullPostings } from '../support/bm25-oracle.js';

const params = DEFAULT_BM25;
const VOCABULARY = Array.from({ length: 10 }, (_, i) => `w${i}`);
const arbWord = fc.integer({ min: 0, max: 999 }).map((x) => VOCABULARY[Math.floor(VOCABULARY.length * (x / 1000) ** 3)]!);
const arbText = fc.array(arbWord, { maxLength: 12 }).map((w) => w.join(' '));
/** Ids that sort differently by code unit and code point, and repeat texts (equal scores). */
const arbId = fc.string({ minLength: 1, maxLength: 3, unit: fc.constantFrom('a', 'b', 'Z', 'é', '\u{1F600}') });
const arbQuery = fc.array(fc.oneof(arbWord, fc.constant('absent')), { minLength: 1, maxLength: 4 }).map((w) => w.join(' '));

/** A term's list keyed by `keyOf`, in key order (as the memory backend keeps its lists). */
function keyed(list: readonly Posting[], keyOf: ReadonlyMap<string, number>): KeyedColumns {
  const sorted = [...list].sort((a, b) => keyOf.get(a.docId)! - keyOf.get(b.docId)!);
  return {
    docIds: sorted.map((p) => p.docId),
    keys: sorted.map((p) => keyOf.get(p.docId)!),
    tfs: Uint32Array.from(sorted, (p) => p.tf),
    docLengths: Uint32Array.from(sorted, (p) => p.docLength),
  };
}

t.test('pure: the accumulated top-k equals the exhaustive top-k, with exact and loosened bounds, under any keys', async (t) => {
  const arbCorpus = fc.array(fc.tuple(arbId, arbText), { maxLength: 40 }).map((pairs) => new Map(pairs));
  // One scratch for every run, as the backend keeps one: each run must leave it clean.
  const scratch = newAccumulator();
  fc.assert(
    fc.property(arbCorpus, arbQuery, fc.integer({ min: 1, max: 12 }), fc.nat(3), fc.nat(5), fc.nat(60), fc.integer(), (corpus, query, k, tfSlack, lengthSlack, spare, keySeed) => {
      const { byTerm, stats } = fullPostings(corpus, query);
      // Distinct keys in [0, universe), in an order unrelated to the ids.
      const universe = corpus.size + spare;
      const ids = [...corpus.keys()];
      const keyOf = new Map(ids.map((id, i) => [id, (i * 7919 + (keySeed >>> 0)) % Math.max(1, universe)]));
      if (new Set(keyOf.values()).size !== ids.length) keyOf.forEach((_, id) => keyOf.set(id, ids.indexOf(id)));
      const terms: QueryTerm[] = [...byTerm].map(([term, list]) => {
        const exact = exactBound(keyed(list, keyOf));
        return { term, bound: { df: exact.df, tfMax: exact.tfMax + tfSlack, docLengthMin: Math.max(0, exact.docLengthMin - lengthSlack) } };
      });
      const lists = [...byTerm.values()].map((list) => keyed(list, keyOf));
      const got = rankBm25Accumulate(terms, lists, stats, params, k, universe, scratch);
      t.strictSame(got, rankBm25(byTerm, stats, params, k));
      if (got.some((h, i) => h.score !== rankBm25(byTerm, stats, params, k)[i]!.score)) throw new Error('a score differs');
      if (scratch.scores.some((s) => s !== 0)) throw new Error('the scratch scores are left zero');
    }),
    fcParams(500),
  );
});

t.test('pure: once the documents met outscore what the terms left could give, those terms only add to them', async (t) => {
  // "rare" (3 documents, each scoring far above anything "common" can give) comes first in the
  // query; "common" and "filler" are in thousands of documents.
  const corpus = new Map<string, string>();
  for (let i = 0; i < 2000; i++) corpus.set(`c${i}`, `common filler ${i % 7 === 0 ? 'common' : 'filler'}`);
  for (let i = 0; i < 3; i++) corpus.set(`r${i}`, 'rare rare common filler');
  const keyOf = new Map([...corpus.keys()].map((id, i) => [id, i]));
  const rank = (query: string, k: number) => {
    const { byTerm, stats } = fullPostings(corpus, query);
    const terms = [...byTerm].map(([term, list]) => ({ term, bound: exactBound(keyed(list, keyOf)) }));
    const scratch = newAccumulator();
    const got = rankBm25Accumulate(terms, [...byTerm.values()].map((list) => keyed(list, keyOf)), stats, params, k, corpus.size, scratch);
    t.strictSame(got, rankBm25(byTerm, stats, params, k), `${query} k=${k}: the exhaustive answer`);
    return { ids: got.map((h) => h.id), met: scratch.met };
  };
  t.strictSame(rank('rare common filler', 2), { ids: ['r0', 'r1'], met: 3 }, 'only the 3 rare documents are met');
  t.equal(rank('rare common filler', 4).met, 2003, 'k 4: the rare ones cannot fill it, so every document is met');
  t.equal(rank('common rare filler', 2).met, 2003, 'common first: its documents are met before any bound closes');
});

t.test('pure: a document whose bound only equals the k-th score still wins on its id', async (t) => {
  // "a" and "b" have equal bounds: after "a" (z met), y's best possible score equals z's
  // exactly, and y sorts first on the id.
  const corpus = new Map([
    ['z', 'a x'],
    ['y', 'b x'],
  ]);
  const keyOf = new Map([
    ['z', 0],
    ['y', 1],
  ]);
  const { byTerm, stats } = fullPostings(corpus, 'a b');
  const terms = [...byTerm].map(([term, list]) => ({ term, bound: exactBound(keyed(list, keyOf)) }));
  const got = rankBm25Accumulate(terms, [...byTerm.values()].map((list) => keyed(list, keyOf)), stats, params, 1, 2, newAccumulator());
  t.strictSame(got.map((h) => h.id), ['y']);
  t.strictSame(got, rankBm25(byTerm, stats, params, 1));
});

t.test('pure: the scratch grows to a larger universe and stays clean', async (t) => {
  const scratch = newAccumulator();
  const corpus = new Map([
    ['a', 'w1 w2'],
    ['b', 'w2'],
  ]);
  const { byTerm, stats } = fullPostings(corpus, 'w1 w2');
  const terms = [...byTerm].map(([term, list]) => ({ term, bound: exactBound(keyed(list, new Map([['a', 0], ['b', 1]]))) }));
  for (const [universe, keys] of [[2, [0, 1]], [50_000, [49_999, 7]], [3, [2, 0]]] as const) {
    const keyOf = new Map([
      ['a', keys[0]],
      ['b', keys[1]],
    ]);
    const got = rankBm25Accumulate(terms, [...byTerm.values()].map((list) => keyed(list, keyOf)), stats, params, 2, universe, scratch);
    t.strictSame(got, rankBm25(byTerm, stats, params, 2), `universe ${universe}`);
    t.ok(scratch.scores.length >= universe && scratch.scores.every((s) => s === 0), `universe ${universe}: scratch large enough, left zero`);
  }
});
