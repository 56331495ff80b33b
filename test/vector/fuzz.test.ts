// Fuzzes the vector routes against collections that exist (the platform fuzzer mostly hits
// unknown names): any body shape must get a 2xx or a 4xx, never a 5xx.
import { appendFileSync } from 'node:fs';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { fcSequenceParams, StatusTally } from '../support/fc.js';
import { request, startTestNode, type TestNode } from '../support/node.js';
import { startClusterTestNode } from '../support/one-node-cluster.js';

const FIELDS = ['id', 'text', 'metadata', 'vector', 'documents', 'query', 'k', 'ef', 'filter', 'fusion', 'bm25_weight', 'vector_weight', 'num_shards', 'dimensions', 'metric', 'embedder', 'bm25_backend', 'bm25', 'index'];
const arbNumber = fc.oneof(fc.integer({ min: -5, max: 2000 }), fc.double({ noNaN: false }), fc.constantFrom(0, 1, 3, 4, 10, 1e300));
const arbVector = fc.oneof(fc.array(arbNumber, { minLength: 0, maxLength: 5 }), fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 4, maxLength: 4 }));
const arbValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  arbVector,
  arbNumber,
  fc.constantFrom('rrf', 'linear', 'cosine', 'l2', 'ip', 'memory', 'disk', 'none', 'hash', 'x'),
  fc.dictionary(fc.constantFrom('a', 'b', '$in', '$gt', '$eq', '$regex', 'type', 'url', 'k1', 'b', 'stopwords', 'm'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);
const arbDoc = fc.dictionary(fc.constantFrom('id', 'text', 'metadata', 'vector', 'x'), arbValue, { maxKeys: 4 });
// Mostly valid bodies too, so requests reach the engine (writes, filters, fusion, scroll
// offsets) rather than stopping at the schema: ids, texts and metadata from small sets, so
// writes, deletes and searches meet the same documents.
const arbId = fc.constantFrom('a', 'b', 'c', 'constructor', 'toString', 'x'.repeat(300));
const arbMeta = fc.dictionary(fc.constantFrom('a', 'b', 'tag', 'constructor', 'toString'), fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom('x', 'y', ''), fc.boolean(), fc.constant(null), fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 })), { maxKeys: 3 });
const arbUnit = fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 4, maxLength: 4 });
const arbText = fc.constantFrom('hello world', 'world of words', 'a', '', 'the the the', 'constructor tostring');
const arbFilterValue = fc.oneof(
  fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom('x', 'y'), fc.boolean(), fc.constant(null)),
  fc.record({ $gt: fc.integer({ min: -2, max: 3 }) }),
  fc.record({ $lte: fc.constantFrom('x', 'y', 3) }),
  fc.record({ $in: fc.array(fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom('x', 'y')), { maxLength: 3 }) }),
  fc.record({ $ne: fc.integer({ min: -2, max: 3 }) }),
  fc.record({ $nin: fc.array(fc.constantFrom('x', 'y', 1), { maxLength: 2 }) }),
);
const arbFilter = fc.dictionary(fc.constantFrom('a', 'b', 'tag', 'constructor', 'toString', 'missing'), arbFilterValue, { maxKeys: 2 });
const arbValidDoc = fc.record({ id: arbId, text: arbText, metadata: arbMeta, vector: arbUnit }, { requiredKeys: ['id'] });
const arbSearch = fc.record({ vector: arbUnit, query: arbText, k: fc.integer({ min: 1, max: 20 }), filter: arbFilter, ef: fc.integer({ min: 1, max: 64 }), with_payload: fc.boolean() }, { requiredKeys: [] });
/** A mostly valid body for each route (by its path's last part). */
const VALID: Record<string, fc.Arbitrary<unknown>> = {
  docs: fc.oneof(arbValidDoc, fc.record({ documents: fc.array(arbValidDoc, { minLength: 1, maxLength: 6 }) })),
  search: arbSearch,
  bm25: fc.record({ query: arbText, k: fc.integer({ min: 1, max: 20 }) }, { requiredKeys: ['query'] }),
  hybrid: fc.record({ query: arbText, vector: arbUnit, k: fc.integer({ min: 1, max: 20 }), bm25_weight: fc.double({ min: 0, max: 1, noNaN: true }), vector_weight: fc.double({ min: 0, max: 1, noNaN: true }), fusion: fc.constantFrom('rrf', 'linear') }, { requiredKeys: ['query'] }),
  scroll: fc.record({ limit: fc.integer({ min: 1, max: 5 }), offset: arbId, filter: arbFilter, include_vector: fc.boolean() }, { requiredKeys: [] }),
  batch: fc.record({ searches: fc.array(arbSearch, { minLength: 1, maxLength: 3 }) }),
  reshard: fc.record({ num_shards: fc.integer({ min: 1, max: 3 }) }),
};
const arbBody = fc.oneof(
  fc.dictionary(fc.constantFrom(...FIELDS), arbValue, { maxKeys: 5 }),
  fc.record({ documents: fc.array(arbDoc, { maxLength: 4 }) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const ROUTES = [
  ['PUT', '/vectordb/collections/:c'],
  ['POST', '/vectordb/collections/:c/docs'],
  ['GET', '/vectordb/collections/:c/docs/:id'],
  ['DELETE', '/vectordb/collections/:c/docs/:id'],
  ['POST', '/vectordb/collections/:c/search'],
  ['POST', '/vectordb/collections/:c/search/bm25'],
  ['POST', '/vectordb/collections/:c/search/hybrid'],
  ['POST', '/vectordb/collections/:c/reshard'],
  ['POST', '/vectordb/collections/:c/docs/scroll'],
  ['POST', '/vectordb/collections/:c/search/batch'],
] as const;

/** `runs` random requests against collections of `node` that exist: no 5xx, and healthy after. */
async function fuzz(t: Test, node: TestNode, runs: number): Promise<void> {
  await node.request('PUT', '/vectordb/collections/full', { body: { dimensions: 4, embedder: { type: 'hash' }, bm25_backend: 'disk' } });
  await node.request('PUT', '/vectordb/collections/bare', { body: { dimensions: 4, metric: 'l2' } });
  await node.request('POST', '/vectordb/collections/full/docs', { body: { documents: [{ id: 'a', text: 'hello world', metadata: { a: 1 } }] } });
  const failures: string[] = [];
  const statuses = new StatusTally();
  // Half the time a body made for the route, half any body.
  const arbRequest = fc.constantFrom(...ROUTES).chain((r) => fc.tuple(fc.constant(r), fc.oneof(arbBody, VALID[r[1].slice(r[1].lastIndexOf('/') + 1)] ?? arbBody)));
  await fc.assert(
    fc.asyncProperty(arbRequest, fc.constantFrom('full', 'full', 'bare', 'fresh'), fc.constantFrom('a', 'b', 'constructor', '%00', 'x'.repeat(1100)), async ([[method, route], body], c, id) => {
      const path = route.replace(':c', c).replace(':id', id);
      if (process.env.FUZZ_TRACE !== undefined) appendFileSync(process.env.FUZZ_TRACE, `${method} ${path} ${JSON.stringify(body)}\n`);
      const r = await request(node.url, method, path, method === 'GET' || method === 'DELETE' ? {} : { body });
      statuses.add(r.status);
      if (r.status >= 500) failures.push(`${method} ${path} ${JSON.stringify(body)} -> ${r.status} ${r.text}`);
      return true; // collected in `failures`, said below with their answers
    }),
    fcSequenceParams(runs, (text) => t.comment(text)),
  );
  t.same(failures, []);
  t.comment(String(statuses));
  const health = await node.request('GET', '/health');
  t.equal(health.status, 200);
}

t.test('vector routes never answer with a 5xx', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await fuzz(t, node, 400);
});

// A cluster node writes through shard leaders and fans searches out to every shard: a one-node
// cluster (replication factor 1, the only one it can place).
t.test('a cluster node: vector routes never answer with a 5xx', async (t) => {
  const node = await startClusterTestNode({ SERVICE_NODE_NAME: 'v1' });
  t.teardown(() => node.close());
  await fuzz(t, node, 300);
});
