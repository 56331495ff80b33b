// Fuzzes the vector routes against collections that exist (the platform fuzzer mostly hits
// unknown names): any body shape must get a 2xx or a 4xx, never a 5xx.
import fc from 'fast-check';
import t from 'tap';
import { fcParams } from '../support/fc.js';
import { request, startTestNode } from '../support/node.js';

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
] as const;

t.test('vector routes never answer with a 5xx', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/vectordb/collections/full', { body: { dimensions: 4, embedder: { type: 'hash' }, bm25_backend: 'disk' } });
  await node.request('PUT', '/vectordb/collections/bare', { body: { dimensions: 4, metric: 'l2' } });
  await node.request('POST', '/vectordb/collections/full/docs', { body: { documents: [{ id: 'a', text: 'hello world', metadata: { a: 1 } }] } });
  const failures: string[] = [];
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES), fc.constantFrom('full', 'bare', 'fresh'), fc.constantFrom('a', 'b', '%00', 'x'.repeat(1100)), arbBody, async ([method, route], c, id, body) => {
      const path = route.replace(':c', c).replace(':id', id);
      const r = await request(node.url, method, path, method === 'GET' || method === 'DELETE' ? {} : { body });
      if (r.status >= 500) failures.push(`${method} ${path} ${JSON.stringify(body)} -> ${r.status} ${r.text}`);
      return r.status < 500;
    }),
    fcParams(400),
  );
  t.same(failures, []);
  const health = await node.request('GET', '/health');
  t.equal(health.status, 200);
});
