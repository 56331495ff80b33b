// Recall of the HNSW index at default settings, over HTTP, against brute force, with a fixed
// seed. The size is VECTOR_RECALL_N=20000 (about 30 s on the shared 2-core machine, so
// the default suite runs 5000); VECTOR_RECALL_QUERIES (default 200) sets the query count.
import t from 'tap';
import { encodeCbor } from '../../src/core/codec.js';
import { startTestNode } from '../support/node.js';
import { bruteForceCosine, clusteredVectors } from './clustered.js';

const N = Number(process.env.VECTOR_RECALL_N ?? 5_000);
const QUERIES = Number(process.env.VECTOR_RECALL_QUERIES ?? 200);
const DIMS = 128;
const K = 10;
const BATCH = 2_000;

t.test(`recall@${K} >= 0.95 on ${N} clustered ${DIMS}-d vectors`, async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  // Queries come from the same clusters as the data (the tail of one seeded stream).
  const all = clusteredVectors({ seed: 42, count: N + QUERIES, dims: DIMS, clusters: 50, noise: 0.25 });
  const data = all.slice(0, N);
  const queries = all.slice(N);
  // The oracle first: a long pause between requests could meet a closing keep-alive socket.
  let t0 = Date.now();
  const truths = queries.map((q) => new Set(bruteForceCosine(data, q, K).map(String)));
  t.comment(`brute force ${Date.now() - t0} ms`);
  t0 = Date.now();

  let r = await node.request('PUT', '/vectordb/collections/recall', { body: { dimensions: DIMS } });
  t.equal(r.status, 201);
  for (let i = 0; i < N; i += BATCH) {
    const documents = data.slice(i, i + BATCH).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
    r = await node.request('POST', '/vectordb/collections/recall/docs', {
      body: encodeCbor({ documents }),
      raw: true,
      headers: { 'content-type': 'application/cbor' },
    });
    t.equal(r.status, 200, `batch ${i / BATCH}`);
  }
  t.comment(`insert ${Date.now() - t0} ms`);
  t0 = Date.now();
  let found = 0;
  for (const [i, q] of queries.entries()) {
    const truth = truths[i]!;
    r = await node.request('POST', '/vectordb/collections/recall/search', { body: { vector: Array.from(q), k: K } });
    found += (r.body.results as { id: string }[]).filter((h) => truth.has(h.id)).length;
  }
  t.comment(`search ${Date.now() - t0} ms`);
  const recall = found / (K * queries.length);
  t.comment(`recall@${K} = ${recall.toFixed(4)} (N ${N}, ${queries.length} queries, defaults: M 16, ef_construction 200, ef_search max(k, 64))`);
  t.ok(recall >= 0.95, `recall@${K} ${recall} >= 0.95`);
});
