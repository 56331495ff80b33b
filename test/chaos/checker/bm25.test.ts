// The keyword-index checker: cases by hand, no anomaly for the product's own memory index over
// random present sets, and each kind of broken index (a posting lost, a deleted document's
// postings kept, statistics counting a gone document, no answer) found on random sets.
import t from 'tap';
import fc from 'fast-check';
import { BM25_BUCKET_SIZE, type Bm25NodeRead, type Bm25Search, bucketToken, checkBm25, elementText, expectedScore } from '../../../chaos/checker/bm25.js';
import type { Store } from '../../../src/storage/db.js';
import { newPostingCache, openBm25 } from '../../../src/vector/bm25-index.js';
import type { CollectionConfig } from '../../../src/vector/collection-config.js';
import { fcParams } from '../../support/fc.js';

const params = { k1: 1.2, b: 0.75 };
const types = (reads: Bm25NodeRead[]) => checkBm25(reads, params).anomalies.map((a) => a.type);
/** What a correct index answers for one token over these present elements. */
function answer(present: readonly string[], query: string, k: number): Bm25Search {
  const holding = present.filter((e) => e === query || bucketToken(e) === query);
  const score = expectedScore(present.length, holding.length, params);
  return { query, k, hits: holding.slice(0, k).map((id) => ({ id, score })) };
}

t.test('texts and buckets', (t) => {
  t.equal(elementText('e1'), 'e1 b0');
  t.equal(elementText(`e${BM25_BUCKET_SIZE - 1}`), `e${BM25_BUCKET_SIZE - 1} b0`);
  t.equal(elementText(`e${BM25_BUCKET_SIZE}`), `e${BM25_BUCKET_SIZE} b1`);
  t.throws(() => bucketToken('x1'), /not a set element/);
  t.end();
});

t.test('cases', (t) => {
  const present = ['e1', 'e2', 'e3', 'e600'];
  const read = (searches: Bm25Search[], node = 'n1'): Bm25NodeRead => ({ node, present, searches });
  t.same(types([read([answer(present, 'b0', 1000), answer(present, 'b1', 1000), answer(present, 'e2', 10), answer(present, 'e9', 10)])]), []);
  const b0 = answer(present, 'b0', 1000);
  t.same(types([read([{ ...b0, hits: b0.hits!.slice(1) }])]), ['missing'], 'a posting lost');
  t.same(types([read([{ ...b0, hits: [...b0.hits!, { id: 'e4', score: b0.hits![0]!.score }] }])]), ['extra'], 'a deleted document still found');
  t.same(types([read([{ ...b0, hits: [...b0.hits!, { id: 'e600', score: b0.hits![0]!.score }] }])]), ['extra'], 'found for a token it lacks');
  t.same(types([read([{ ...b0, hits: b0.hits!.map((h) => ({ ...h, score: expectedScore(5, 3, params) })) }])]), ['score'], 'N counts a gone document');
  t.same(types([read([{ query: 'b0', k: 1000 }])]), ['no-answer']);
  t.same(types([read([answer(present, 'b0', 2)])]), [], 'k below the bucket: any k of its documents');
  t.same(types([{ node: 'n1', present: undefined, searches: [{ query: 'b0', k: 1000 }] }]), [], 'no final read: nothing to hold the index to');
  t.same(types([read([answer(['e1'], 'b0', 1000)], 'n2'), read([answer(present, 'b0', 1000)])]), ['missing', 'score'], 'each node against its own read');
  const r = checkBm25([read([{ ...b0, hits: [] }])], params);
  t.match(r.anomalies[0], { type: 'missing', node: 'n1', query: 'b0', count: 3, elements: ['e1', 'e2', 'e3'] });
  t.equal(r.searches, 1);

  // Through hybrid search: the keyword list's hits (a score), then what the vector list added (null).
  const hybrid: Bm25Search = { ...b0, via: 'hybrid', hits: [...b0.hits!, { id: 'e600', score: null }] };
  t.same(types([read([hybrid])]), [], 'a present document the vector list added, with no keyword score');
  t.same(types([read([{ ...hybrid, hits: [...hybrid.hits!, { id: 'e4', score: null }] }])]), ['extra'], 'a deleted document the vector list still holds');
  t.same(types([read([{ ...hybrid, hits: hybrid.hits!.slice(1) }])]), ['missing'], 'a posting lost, seen through hybrid search');
  t.same(types([read([{ ...hybrid, hits: hybrid.hits!.map((h) => (h.score === null ? h : { ...h, score: expectedScore(5, 3, params) })) }])]), ['score']);
  t.match(checkBm25([read([{ ...hybrid, hits: [{ id: 'e4', score: null }] }])], params).anomalies, [{ type: 'extra', elements: ['e4'] }, { type: 'missing' }]);
  t.end();
});

const memoryConfig = { bm25_backend: 'memory', bm25: { k1: params.k1, b: params.b, stopwords: 'english' } } as CollectionConfig;

/** Element numbers, some written and deleted: a node's present set is what is left. */
const arbHistory = fc.array(fc.record({ n: fc.integer({ min: 1, max: 3 * BM25_BUCKET_SIZE }), deleted: fc.boolean() }), { minLength: 1, maxLength: 120 });

/** The product's memory index after the history, and its answers for every bucket and some elements. */
async function indexAnswers(history: readonly { n: number; deleted: boolean }[]): Promise<{ present: string[]; searches: Bm25Search[] }> {
  const index = (await openBm25(memoryConfig, undefined as unknown as Store, 0, newPostingCache()))!;
  const live = new Set<string>();
  for (const { n, deleted } of history) {
    const id = `e${n}`;
    const had = live.has(id);
    if (deleted && !had) continue;
    index.prepare([{ id, oldText: had ? elementText(id) : undefined, newText: deleted ? undefined : elementText(id) }]).apply();
    if (deleted) live.delete(id);
    else live.add(id);
  }
  const queries = [...new Set(history.flatMap(({ n }) => [bucketToken(`e${n}`), `e${n}`]))];
  const searches = await Promise.all(queries.map(async (query) => ({ query, k: 1000, hits: await index.search(query, 1000) })));
  return { present: [...live], searches };
}

t.test('the memory index raises no anomaly, whatever was written and deleted', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(arbHistory, async (history) => {
      const { present, searches } = await indexAnswers(history);
      const r = checkBm25([{ node: 'n1', present, searches }], params);
      if (!r.ok) throw new Error(JSON.stringify(r.anomalies));
      runs++;
    }),
    fcParams(100),
  );
  t.ok(runs > 0, `${runs} histories`);
});

t.test('a broken index is found', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(arbHistory, fc.nat(), async (history, pick) => {
      const { present, searches } = await indexAnswers(history);
      const answered = searches.filter((s) => s.hits!.length > 0);
      if (answered.length === 0) return;
      const victim = answered[pick % answered.length]!;
      const others = searches.filter((s) => s !== victim);
      const check = (s: Bm25Search, readPresent = present) => checkBm25([{ node: 'n1', present: readPresent, searches: [...others, s] }], params).anomalies.map((a) => a.type);
      // A posting lost.
      if (!check({ ...victim, hits: victim.hits!.slice(1) }).includes('missing')) throw new Error('a lost posting went unseen');
      // A document gone from the node's records, its postings kept.
      const gone = victim.hits![0]!.id;
      const after = present.filter((e) => e !== gone);
      const broken = checkBm25([{ node: 'n1', present: after, searches: [...others, victim] }], params).anomalies.map((a) => a.type);
      if (!broken.includes('extra')) throw new Error('a deleted document still found went unseen');
      // Statistics counting one document more than the node holds.
      const inflated = victim.hits!.map((h) => ({ ...h, score: expectedScore(present.length + 1, victim.hits!.length, params) }));
      if (!check({ ...victim, hits: inflated }).includes('score')) throw new Error('inflated statistics went unseen');
      if (!check({ query: victim.query, k: victim.k }).includes('no-answer')) throw new Error('no answer went unseen');
      runs++;
    }),
    fcParams(100),
  );
  t.ok(runs > 0, `${runs} broken indexes`);
});
