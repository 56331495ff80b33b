// Background upkeep of a shard's index (Shard.maintain): checkpoints are built off the event
// loop (never the synchronous save), and after many deletes the live index is replaced by a
// compacted one, while searches and writes go on, with the same search results.
import t from 'tap';
import type { AnnEngine, AnnIndex } from '../../src/vector/ann/ann-index.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { createCollectionRequest, docRequest, searchRequest } from '../../src/vector/requests.js';
import { openTestEngine } from './engine-harness.js';

const DIMS = 8;
const cosine = (a: number[], b: number[]) => {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) (dot += a[i]! * b[i]!), (na += a[i]! ** 2), (nb += b[i]! ** 2);
  return dot / Math.sqrt(na * nb);
};
const vec = (i: number) => Array.from({ length: DIMS }, (_, d) => Math.sin(i * 12.9898 + d * 78.233) + (d === i % DIMS ? 2 : 0));

/** usearch, counting synchronous saves, with builds that wait at a gate the test opens. */
function instrumentedAnn() {
  const state = { syncSaves: 0, builds: 0, gate: Promise.resolve(), release: () => undefined as void, entered: () => undefined as void };
  const count = (index: AnnIndex): AnnIndex =>
    new Proxy(index, {
      get(target, prop) {
        if (prop === 'save') return (file: string) => (state.syncSaves++, target.save(file));
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const ann: AnnEngine = {
    name: usearchEngine.name,
    create: (o) => count(usearchEngine.create(o)),
    load: (f, o) => count(usearchEngine.load(f, o)),
    async build(o, chunks, file, signal) {
      state.builds++;
      state.entered();
      await state.gate;
      return usearchEngine.build(o, chunks, file, signal);
    },
  };
  const closeGate = () => {
    const entered = new Promise<void>((resolve) => (state.entered = resolve));
    state.gate = new Promise<void>((resolve) => (state.release = resolve));
    return entered;
  };
  return { ann, state, closeGate };
}

t.test('after many deletes the index is compacted off the loop; searches and writes go on, results unchanged', async (t) => {
  const { ann, state, closeGate } = instrumentedAnn();
  const h = await openTestEngine({ ann, maintenance: { removedRatio: 0.2, removedMin: 10, unsavedRatio: 0.2 } });
  t.teardown(() => h.close());
  const { engine } = h;
  const shard = () => h.engine.stats().shards[0] as { count: number; seq: number; saved_seq: number; removed: number; recovery: { source: string } };
  const queries = Array.from({ length: 12 }, (_, q) => vec(1000 + q));
  const results = () => Promise.all(queries.map(async (v) => (await h.engine.search(searchRequest('c', { vector: v, k: 10, ef: 1000 }))).results));

  await engine.createCollection(createCollectionRequest('c', { dimensions: DIMS, index: { m: 8, ef_construction: 40 } }));
  await engine.putDocs({ collection: 'c', docs: Array.from({ length: 400 }, (_, i) => docRequest({ id: `d${i}`, vector: vec(i) })) });
  await engine.maintain();
  t.match(shard(), { count: 400, saved_seq: 400, removed: 0 }, 'the first checkpoint covers every write');
  t.equal(state.builds, 1);

  for (let i = 0; i < 200; i++) await engine.deleteDoc('c', `d${i}`);
  await engine.putDocs({ collection: 'c', docs: Array.from({ length: 20 }, (_, i) => docRequest({ id: `d${300 + i}`, vector: vec(5000 + i) })) });
  t.match(shard(), { count: 200, removed: 220 }, 'deletes and updates leave tombstones in the graph');

  // The compaction's build waits at the gate: the shard keeps serving meanwhile.
  const entered = closeGate();
  const maintaining = engine.maintain();
  await entered;
  const during = await results();
  t.ok(during.every((hits) => hits.length === 10), 'searches answer during the build');
  await engine.putDocs({ collection: 'c', docs: [docRequest({ id: 'late', vector: vec(1003) }), docRequest({ id: 'd350', vector: vec(7000) })] });
  await engine.deleteDoc('c', 'd399');
  const before = await results();
  t.notSame(before, during, 'the writes during the build changed the answers');
  state.release();
  await maintaining;

  t.match(shard(), { count: 200, removed: 2 }, 'compacted: only the tombstones of writes made during the build remain');
  t.equal(state.builds, 2);
  const after = await results();
  // HNSW is approximate and a compacted graph is a new graph: its answers are held to exact
  // search over the live documents, not to the old graph's hit for hit.
  const live = new Map<string, number[]>();
  for (let i = 200; i < 400; i++) live.set(`d${i}`, vec(i));
  for (let i = 0; i < 20; i++) live.set(`d${300 + i}`, vec(5000 + i));
  live.set('late', vec(1003)).set('d350', vec(7000)).delete('d399');
  const exact = queries.map((q) => [...live].map(([id, v]) => ({ id, score: cosine(q, v) })).sort((a, b) => b.score - a.score).slice(0, 10));
  const recall = (got: { id: string }[][]) => got.reduce((sum, hits, q) => sum + hits.filter((h) => exact[q]!.some((e) => e.id === h.id)).length, 0) / (10 * queries.length);
  t.ok(recall(after) >= 0.95, `the compacted index finds what exact search finds (recall ${recall(after)})`);
  t.ok(recall(before) >= 0.95, `as the old one did (recall ${recall(before)})`);
  const sameScores = after.every((hits, q) => hits.every((h) => {
    const old = before[q]!.find((b) => b.id === h.id);
    return old === undefined || Math.abs(old.score - h.score) < 1e-6;
  }));
  t.ok(sameScores, 'a hit both graphs found has the same score in both');
  t.equal(state.syncSaves, 0, 'no synchronous save ran: checkpoints are built off the event loop');

  await h.restart();
  t.equal(state.syncSaves, 1, 'a graceful close saves the live index (nothing is served then)');
  t.match(shard(), { count: 200, recovery: { source: 'file' }, removed: 2 });
  t.same((await results()).map((hits) => hits.map((h) => h.id)), after.map((hits) => hits.map((h) => h.id)), 'and after a restart, the same hits as before it');
});

t.test('close stops a running build; the next start still finds every document', async (t) => {
  const { ann, state, closeGate } = instrumentedAnn();
  const h = await openTestEngine({ ann });
  t.teardown(() => h.close());
  const { engine } = h;
  await engine.createCollection(createCollectionRequest('c', { dimensions: DIMS }));
  await engine.putDocs({ collection: 'c', docs: Array.from({ length: 50 }, (_, i) => docRequest({ id: `d${i}`, vector: vec(i) })) });
  const entered = closeGate();
  const maintaining = engine.maintain();
  await entered;
  const closing = engine.close();
  state.release();
  await closing;
  await maintaining;
  await h.restart();
  t.equal(h.engine.stats().documents, 50);
  const { results: hits } = await h.engine.search(searchRequest('c', { vector: vec(7), k: 1 }));
  t.equal(hits[0]?.id, 'd7');
});
