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
});
