// Many collections on one node (a gateway's tenants each have theirs): an idle collection costs
// kilobytes of heap. A disk keyword index allocated its point-read counts' 10,000 slots up front
// (lru-cache with `max`), ~0.17 MB of heap a collection before its first search.
import t from 'tap';
import { heapGrowth } from '../support/heap.js';
import { startTestNode } from '../support/node.js';

t.test('100 collections with a disk keyword index, a document each: the heap grows by kilobytes a collection', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const make = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      t.equal((await node.request('PUT', `/vectordb/collections/c${i}`, { body: { dimensions: 4, bm25_backend: 'disk' } })).status, 201);
      t.equal((await node.request('POST', `/vectordb/collections/c${i}/docs`, { body: { id: 'a', text: 'hello world', vector: [1, 0, 0, 0] } })).status, 201);
    }
  };
  await make(0, 10); // warm: code, node-wide caches
  const grown = await heapGrowth(() => make(10, 110));
  // ~17 MB before; ~1.5 MB now. The bound leaves room for noise.
  t.ok(grown < 8e6, `the heap grew by ${(grown / 1e6).toFixed(1)} MB for 100 collections`);
  const hits = await node.request('POST', '/vectordb/collections/c42/search/bm25', { body: { query: 'hello', k: 1 } });
  t.equal(hits.status, 200);
  t.equal(hits.body.results?.[0]?.id, 'a', `a keyword search still finds the document: ${hits.text}`);
});
