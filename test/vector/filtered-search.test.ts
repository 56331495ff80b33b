// A selective filter still returns k results when k exist: the candidate list widens, and past
// 4096 candidates the shard scans every record exactly.
import t from 'tap';
import { startTestNode } from '../support/node.js';

t.test('selective filters return every match, nearest first', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/vectordb/collections/f', { body: { dimensions: 4, metric: 'l2' } });
  // 5000 common docs near the origin; 3 rare ones far away (never among the ANN candidates).
  const documents = Array.from({ length: 5_000 }, (_, i) => ({
    id: `c${i}`,
    metadata: { tag: 'common', i },
    vector: [Math.sin(i), Math.cos(i), Math.sin(i * 0.5), (i % 100) / 100],
  }));
  for (const [j, far] of [100, 200, 300].entries()) documents.push({ id: `r${j}`, metadata: { tag: 'rare', i: j }, vector: [far, far, far, far] });
  for (let i = 0; i < documents.length; i += 2_000) {
    const r = await node.request('POST', '/vectordb/collections/f/docs', { body: { documents: documents.slice(i, i + 2_000) } });
    t.equal(r.status, 200);
  }
  let r = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 0, 0, 0], k: 3, filter: { tag: 'rare' } } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['r0', 'r1', 'r2'], 'exact fallback finds all three, nearest first');
  t.ok(r.body.results[0].score > r.body.results[1].score);
  r = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 0, 0, 0], k: 10, filter: { tag: 'rare' } } });
  t.equal(r.body.results.length, 3, 'no more than exist');
  r = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 1, 0, 0], k: 20, filter: { i: { $lt: 50 }, tag: 'common' } } });
  t.equal(r.body.results.length, 20, 'a moderately selective filter fills k through widening');
  t.ok(r.body.results.every((h: { metadata: { i: number; tag: string } }) => h.metadata.i < 50 && h.metadata.tag === 'common'));

  // with_payload: false reads no record: the same hits, id and score only, filtered or not.
  const full = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 1, 0, 0], k: 10 } });
  const bare = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 1, 0, 0], k: 10, with_payload: false } });
  t.equal(bare.status, 200);
  t.same(bare.body.results, full.body.results.map((h: { id: string; score: number }) => ({ id: h.id, score: h.score })), 'same hits without text and metadata');
  r = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 0, 0, 0], k: 3, filter: { tag: 'rare' }, with_payload: false } });
  t.same(r.body.results.map((h: object) => Object.keys(h).sort()), [['id', 'score'], ['id', 'score'], ['id', 'score']], 'a filtered search without payload answers alike');
  t.same(r.body.results.map((h: { id: string }) => h.id), ['r0', 'r1', 'r2']);
  await node.request('DELETE', '/vectordb/collections/f/docs/r0');
  r = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [100, 100, 100, 100], k: 2, with_payload: false } });
  t.notOk(r.body.results.some((h: { id: string }) => h.id === 'r0'), 'a deleted document is not a hit');
  r = await node.request('POST', '/vectordb/collections/f/search', { body: { vector: [0, 0, 0, 0], with_payload: 'no' } });
  t.equal(r.status, 400, 'with_payload is a boolean');

  // search/batch answers each search as the single route would, in order.
  const searches = [
    { vector: [0, 1, 0, 0], k: 5 },
    { vector: [0, 0, 0, 0], k: 3, filter: { tag: 'rare' }, with_payload: false },
    { vector: [1, 0, 1, 0.5], k: 7, ef: 200 },
  ];
  const batch = await node.request('POST', '/vectordb/collections/f/search/batch', { body: { searches } });
  t.equal(batch.status, 200);
  for (const [i, s] of searches.entries()) {
    const one = await node.request('POST', '/vectordb/collections/f/search', { body: s });
    t.same(batch.body.results[i], one.body.results, `batch entry ${i} equals its single search`);
  }
  for (const [body, why] of [
    [{ searches: [] }, 'no searches'],
    [{ searches: Array.from({ length: 101 }, () => ({ vector: [0, 0, 0, 0] })) }, 'more than 100'],
    [{ searches: [{ vector: [0, 0, 0, 0], k: 0 }] }, 'a bad search'],
    [{ searches: [{ vector: [0, 0, 0] }] }, 'a vector of the wrong dimension'],
    [{ vector: [0, 0, 0, 0] }, 'not a batch'],
  ] as const) {
    r = await node.request('POST', '/vectordb/collections/f/search/batch', { body });
    t.equal(r.status, 400, `${why}: 400`);
  }
  r = await node.request('POST', '/vectordb/collections/none/search/batch', { body: { searches: [{ vector: [0, 0, 0, 0] }] } });
  t.equal(r.status, 404, 'unknown collection: 404');
});
