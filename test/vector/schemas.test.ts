// The route schemas refuse every body the engine's hand-written checks used to refuse, with the
// same status and code: a table of bad bodies per route, on the standard API and on /v1.
import t from 'tap';
import { MASTER_KEY, startGatewayNode } from '../gateway/support.js';
import { startTestNode } from '../support/node.js';

const P = '/vectordb/collections';
const ok = [1, 0, 0];

const badCollections: unknown[] = [
  {},
  { dimensions: null },
  { dimensions: 3, num_shards: 1025 },
  { dimensions: 3, replication_factor: 10 },
  { dimensions: 3, replication_factor: 1.5 },
  { dimensions: 3, metric: 'COSINE' },
  { dimensions: 3, index: [] },
  { dimensions: 3, index: { m: 257 } },
  { dimensions: 3, index: { ef_construction: 0 } },
  { dimensions: 3, index: { ef_search: 4097 } },
  { dimensions: 3, index: { beam: 3 } },
  { dimensions: 3, embedder: 'hash' },
  { dimensions: 3, embedder: {} },
  { dimensions: 3, embedder: { type: 'hash', model: 'm' } },
  { dimensions: 3, embedder: { type: 'ollama', model: '' } },
  { dimensions: 3, embedder: { type: 'ollama', model: 'm'.repeat(201) } },
  { dimensions: 3, embedder: { type: 'ollama', url: 'http://localhost:1/?q=1' } },
  { dimensions: 3, embedder: { type: 'ollama', url: 'http://localhost:1/#top' } },
  { dimensions: 3, embedder: { type: 'ollama', url: 'not a url' } },
  { dimensions: 3, embedder: { type: 'ollama', timeout_ms: 0 } },
  { dimensions: 3, embedder: { type: 'ollama', batch_size: 2049 } },
  { dimensions: 3, embedder: { type: 'ollama', retries: 11 } },
  { dimensions: 3, embedder: { type: 'openai', key: 'sk' } },
  { dimensions: 3, bm25: { k1: 101 } },
  { dimensions: 3, bm25: { stopwords: 'french' } },
  { dimensions: 3, bm25: { stopwords: [''] } },
  { dimensions: 3, bm25: { stopwords: [1] } },
  { dimensions: 3, bm25: { stopwords: ['x'.repeat(101)] } },
  { dimensions: 3, bm25: { idf: 'lucene' } },
  'dimensions',
  3,
];

const badDocs: unknown[] = [
  [{ id: 'a', vector: ok }],
  { id: 'x'.repeat(1025), vector: ok },
  { id: 'x', vector: 'abc' },
  { id: 'x', vector: [1, 0, Number.MAX_VALUE] },
  { id: 'x', vector: ok, metadata: 'm' },
  { id: 'x', vector: ok, text: ['t'] },
  { documents: Array.from({ length: 10_001 }, (_, i) => ({ id: `d${i}`, vector: ok })) },
  { documents: [{ id: 'y', vector: ok }], extra: 1 },
];

const badSearches: [string, unknown][] = [
  ['search', { vector: ok, ef: 4097 }],
  ['search', { vector: ok, k: 1.5 }],
  ['search', { vector: 'abc' }],
  ['search', { vector: ok, limit: 3 }],
  ['search', []],
  ['search/bm25', { k: 3 }],
  ['search/bm25', { query: ['x'] }],
  ['search/hybrid', { vector: ok }],
  ['search/hybrid', { query: 'x', vector: 'abc' }],
  ['search/hybrid', { query: 'x', vector: [1, 0] }],
  ['search/hybrid', { query: 'x', ef: 0 }],
  ['search/hybrid', { query: 'x', filter: {} }],
  ['reshard', {}],
  ['reshard', { num_shards: 0 }],
  ['reshard', { num_shards: '2' }],
  ['reshard', { num_shards: 1025 }],
];

t.test('/vectordb: bad bodies are 400 bad_request, nothing is written', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const body of badCollections) {
    const r = await node.request('PUT', `${P}/c1`, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `PUT ${JSON.stringify(body)}: ${r.body.message}`);
    t.type(r.body.message, 'string');
  }
  t.same((await node.request('GET', `${P}`)).body, {}, 'no collection was created');

  t.equal((await node.request('PUT', `${P}/v`, { body: { dimensions: 3, bm25_backend: 'memory' } })).status, 201);
  for (const body of badDocs) {
    const r = await node.request('POST', `${P}/v/docs`, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `docs ${JSON.stringify(body).slice(0, 80)}: ${r.body.message}`);
  }
  for (const [route, body] of badSearches) {
    const r = await node.request('POST', `${P}/v/${route}`, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `${route} ${JSON.stringify(body)}: ${r.body.message}`);
  }
  t.equal((await node.request('GET', `${P}/v`)).body.count, 0, 'no document was written');
});

t.test('/vectordb: null is as if absent, as the hand-written checks had it', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let r = await node.request('PUT', `${P}/n`, { body: { dimensions: 3, index: null, embedder: null, bm25: null } });
  t.equal(r.status, 201, r.body.message);
  t.match((await node.request('GET', `${P}/n`)).body, { index: { m: 16 }, embedder: null, bm25: { k1: 1.2 } });
  r = await node.request('POST', `${P}/n/docs`, { body: { id: 'a', text: null, metadata: null, vector: ok } });
  t.equal(r.status, 201, r.body.message);
  t.same((await node.request('GET', `${P}/n/docs/a`)).body, { id: 'a', text: '', metadata: {} });
  r = await node.request('POST', `${P}/n/search`, { body: { vector: ok, filter: null } });
  t.equal(r.status, 200, r.body.message);
});

t.test('/vectordb batch: each refused document gets its own error, the rest are written', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', `${P}/v`, { body: { dimensions: 3 } });
  const r = await node.request('POST', `${P}/v/docs`, {
    body: {
      documents: [
        { id: 'good', vector: ok },
        'not an object',
        null,
        { id: 5, vector: ok },
        { id: 'extra', vector: ok, colour: 'red' },
        { id: 'short', vector: [1, 0] },
        { id: 'zeros', vector: [0, 0, 0] },
        { id: 'text-only', text: 'no embedder' },
        { id: 'good2', vector: [0, 1, 0] },
      ],
    },
  });
  t.equal(r.status, 200);
  const results = r.body.results as { id?: string; status?: string; error?: string; message?: string }[];
  t.match(results, [
    { id: 'good', status: 'created' },
    { error: 'bad_request', message: /documents\[1\]/ },
    { error: 'bad_request', message: /documents\[2\]/ },
    { error: 'bad_request', message: /documents\[3\]\/id/ },
    { id: 'extra', error: 'bad_request', message: /documents\[4\]/ },
    { id: 'short', error: 'bad_request', message: /3 dimensions/ },
    { id: 'zeros', error: 'bad_request', message: /zeros/ },
    { id: 'text-only', error: 'bad_request', message: /embedder/ },
    { id: 'good2', status: 'created' },
  ]);
  t.notOk('id' in results[3]!, 'a non-string id is not echoed');
  t.equal((await node.request('GET', `${P}/v`)).body.count, 2);
});

t.test('/v1: bad bodies are 400 bad_request (the same schemas, narrowed)', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const key = (await gw.call('POST', '/admin/tenants', MASTER_KEY, { tenant_id: 'acme', rpm_limit: 100_000 })).body.api_key as string;
  const badCreates: unknown[] = [
    { name: 'x', dimension: 3, embedder: { type: 'ollama', model: '' } },
    { name: 'x', dimension: 3, embedder: { type: 'ollama', timeout_ms: 5 } },
    { name: 'x', dimension: 3, embedder: { type: 'hash', model: 'm' } },
    { name: 'x', dimension: 3, embedder: 'hash' },
    { name: 'x', dimension: null },
    [],
  ];
  for (const body of badCreates) {
    const r = await gw.call('POST', '/v1/collections', key, body);
    t.same([r.status, r.body.error], [400, 'bad_request'], `create ${JSON.stringify(body)}: ${r.body.message}`);
  }
  t.equal((await gw.call('POST', '/v1/collections', key, { name: 'docs', dimension: 3 })).status, 201);
  const badDocuments: unknown[] = [
    { id: 'x'.repeat(513), vector: ok },
    { id: 'x', vector: [] },
    { id: 'x', vector: null },
    { id: 'x', vector: [1, 0, Number.MAX_VALUE] },
    { id: 'x', vector: [0, 0, 0] },
    { id: 'x', vector: ok, text: 't'.repeat(1_000_001) },
    { id: 'x', vector: ok, text: null },
    { id: 'x', vector: ok, metadata: null },
    { documents: [{ id: 'y', vector: ok }, { id: 'z', vector: ok, extra: 1 }] },
    { documents: [{ id: 'y', vector: ok }, 'doc'] },
  ];
  for (const body of badDocuments) {
    const r = await gw.call('POST', '/v1/collections/docs/documents', key, body);
    t.same([r.status, r.body.error], [400, 'bad_request'], `documents ${JSON.stringify(body).slice(0, 80)}: ${r.body.message}`);
  }
  const badSearch: unknown[] = [
    { query: 'x'.repeat(10_001) },
    { vector: ok, ef: 10 },
    { vector: ok, filter: null },
    { vector: null },
    { query: 'x', vector: ok },
  ];
  for (const body of badSearch) {
    const r = await gw.call('POST', '/v1/collections/docs/search', key, body);
    t.same([r.status, r.body.error], [400, 'bad_request'], `search ${JSON.stringify(body).slice(0, 80)}: ${r.body.message}`);
  }
  t.equal((await gw.call('GET', '/v1/collections/docs', key)).body.count, 0, 'nothing was written');
});
