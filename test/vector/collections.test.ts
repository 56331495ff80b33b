// The standard API over real HTTP against a real node: collections, documents, vector search
// and every error code of the spec's table.
import t from 'tap';
import { startTestNode } from '../support/node.js';

const P = '/vectordb';

t.test('collections: create, list, get, delete, restart', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());

  let r = await node.request('PUT', `${P}/collections/books`, { body: { dimensions: 3 } });
  t.equal(r.status, 201);
  t.same(r.body, { status: 'created' });

  r = await node.request('PUT', `${P}/collections/books`, { body: { dimensions: 3 } });
  t.equal(r.status, 409);
  t.equal(r.body.error, 'already_exists');

  r = await node.request('PUT', `${P}/collections/tuned`, {
    body: {
      dimensions: 8,
      num_shards: 2,
      replication_factor: 3,
      metric: 'l2',
      index: { m: 8, ef_construction: 100, ef_search: 32 },
      embedder: { type: 'hash' },
      bm25_backend: 'disk',
      bm25: { k1: 1.5, b: 0.5, stopwords: 'english' },
    },
  });
  t.equal(r.status, 201);

  r = await node.request('GET', `${P}/collections`);
  t.equal(r.status, 200);
  t.same(r.body, {
    books: { dimension: 3, shards: 4, replication_factor: 2 },
    tuned: { dimension: 8, shards: 2, replication_factor: 3 },
  });

  r = await node.request('GET', `${P}/collections/tuned`);
  t.equal(r.status, 200);
  t.match(r.body, {
    name: 'tuned',
    dimension: 8,
    count: 0,
    num_shards: 2,
    replication_factor: 3,
    metric: 'l2',
    index: { m: 8, ef_construction: 100, ef_search: 32 },
    embedder: { type: 'hash' },
    bm25_backend: 'disk',
    bm25: { k1: 1.5, b: 0.5, stopwords: 'english' },
  });
  r = await node.request('GET', `${P}/collections/books`);
  t.match(r.body, { name: 'books', dimension: 3, count: 0, metric: 'cosine', index: { m: 16, ef_construction: 200, ef_search: 64 }, embedder: null, bm25_backend: 'none' });

  await node.restart();
  r = await node.request('GET', `${P}/collections/tuned`);
  t.equal(r.status, 200, 'config survives a restart');
  t.match(r.body, { metric: 'l2', bm25_backend: 'disk', embedder: { type: 'hash' } });

  r = await node.request('DELETE', `${P}/collections/books`);
  t.same([r.status, r.body], [200, { status: 'deleted' }]);
  r = await node.request('DELETE', `${P}/collections/books`);
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('GET', `${P}/collections/books`);
  t.same([r.status, r.body.error], [404, 'not_found']);
  await node.restart();
  r = await node.request('GET', `${P}/collections`);
  t.same(Object.keys(r.body), ['tuned'], 'a deleted collection stays deleted');
});

t.test('replication_factor left out: the node\'s SERVICE_REPLICATION_FACTOR', async (t) => {
  const node = await startTestNode({ SERVICE_REPLICATION_FACTOR: '3' });
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', `${P}/collections/plain`, { body: { dimensions: 3 } })).status, 201);
  t.equal((await node.request('PUT', `${P}/collections/asked`, { body: { dimensions: 3, replication_factor: 1 } })).status, 201);
  const r = await node.request('GET', `${P}/collections`);
  t.same(r.body, { plain: { dimension: 3, shards: 4, replication_factor: 3 }, asked: { dimension: 3, shards: 4, replication_factor: 1 } });
});

t.test('index precision: f16 by default, f32 on request; the same hits, scores within f16 rounding, across a restart', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', `${P}/collections/half`, { body: { dimensions: 16, metric: 'l2' } })).status, 201);
  t.equal((await node.request('PUT', `${P}/collections/full`, { body: { dimensions: 16, metric: 'l2', index: { precision: 'f32' } } })).status, 201);
  t.match((await node.request('GET', `${P}/collections/half`)).body, { index: { m: 16, ef_construction: 200, ef_search: 64, precision: 'f16' } });
  t.match((await node.request('GET', `${P}/collections/full`)).body, { index: { precision: 'f32' } });
  let seed = 3;
  const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
  const documents = Array.from({ length: 300 }, (_, i) => ({ id: `d${i}`, vector: Array.from({ length: 16 }, rnd) }));
  for (const c of ['half', 'full']) t.equal((await node.request('POST', `${P}/collections/${c}/docs`, { body: { documents } })).status, 200);
  const queries = Array.from({ length: 20 }, () => Array.from({ length: 16 }, rnd));
  const search = async (c: string) => Promise.all(queries.map(async (vector) => (await node.request('POST', `${P}/collections/${c}/search`, { body: { vector, k: 5, with_payload: false } })).body.results as { id: string; score: number }[]));
  const compare = async (when: string) => {
    const [half, full] = [await search('half'), await search('full')];
    t.same(half.map((r) => r.map((h) => h.id)), full.map((r) => r.map((h) => h.id)), `${when}: the same hits in the same order`);
    const worst = Math.max(...half.flatMap((r, i) => r.map((h, j) => Math.abs(h.score - full[i]![j]!.score))));
    t.ok(worst < 1e-3, `${when}: scores within f16 rounding (worst ${worst})`);
  };
  await compare('before a restart');
  await node.restart();
  await compare('after a restart (the index files are read back with their precision)');
});

t.test('index.m 0: no graph, every search exact, through updates, deletes, a filter and a restart', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', `${P}/collections/flat`, { body: { dimensions: 8, metric: 'l2', index: { m: 0 } } })).status, 201);
  t.match((await node.request('GET', `${P}/collections/flat`)).body, { index: { m: 0 } });
  let seed = 11;
  const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
  const vectors = new Map<string, number[]>();
  const put = async (n: number, from: number) => {
    const documents = Array.from({ length: n }, (_, i) => ({ id: `d${from + i}`, vector: Array.from({ length: 8 }, rnd), metadata: { odd: (from + i) % 2 === 1 } }));
    t.equal((await node.request('POST', `${P}/collections/flat/docs`, { body: { documents } })).status, 200);
    for (const d of documents) vectors.set(d.id, d.vector);
  };
  await put(400, 0);
  await put(50, 100); // updates: new vectors for d100..d149
  for (const id of ['d3', 'd5', 'd250']) {
    t.equal((await node.request('DELETE', `${P}/collections/flat/docs/${id}`)).status, 200);
    vectors.delete(id);
  }
  const queries = Array.from({ length: 25 }, () => Array.from({ length: 8 }, rnd));
  // The exact answer: every live document by squared distance (f32 rounding aside, no ties).
  const exact = (q: number[], odd?: boolean) =>
    [...vectors]
      .filter(([id]) => odd === undefined || Number(id.slice(1)) % 2 === (odd ? 1 : 0))
      .map(([id, v]) => ({ id, d: v.reduce((s, x, i) => s + (x - q[i]!) ** 2, 0) }))
      .sort((a, b) => a.d - b.d)
      .slice(0, 10)
      .map((h) => h.id);
  const check = async (when: string) => {
    for (const q of queries) {
      const plain = await node.request('POST', `${P}/collections/flat/search`, { body: { vector: q, k: 10, ef: 1 } });
      t.same(plain.body.results.map((h: { id: string }) => h.id), exact(q), `${when}: the exact top 10 (ef has nothing to narrow)`);
      const odd = await node.request('POST', `${P}/collections/flat/search`, { body: { vector: q, k: 10, filter: { odd: true } } });
      t.same(odd.body.results.map((h: { id: string }) => h.id), exact(q, true), `${when}: the exact top 10 of a filter`);
    }
  };
  await check('written');
  await node.restart();
  t.match((await node.request('GET', '/health')).body.vector.shards.find((s: { collection: string }) => s.collection === 'flat'), { recovery: { source: 'file' } }, 'the flat index file was read back');
  await check('after a restart');
});

t.test('collection create: bad input is a 400', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const bad: [string, unknown][] = [
    ['c1', {}],
    ['c1', { dimensions: 0 }],
    ['c1', { dimensions: 4097 }],
    ['c1', { dimensions: 1.5 }],
    ['c1', { dimensions: '3' }],
    ['c1', { dimensions: 3, num_shards: 0 }],
    ['c1', { dimensions: 3, num_shards: 'x' }],
    ['c1', { dimensions: 3, replication_factor: 0 }],
    ['c1', { dimensions: 3, metric: 'hamming' }],
    ['c1', { dimensions: 3, index: { m: 1 } }],
    ['c1', { dimensions: 3, index: { m: -1 } }],
    ['c1', { dimensions: 3, index: { ef_search: 0 } }],
    ['c1', { dimensions: 3, index: { precision: 'f8' } }],
    ['c1', { dimensions: 3, embedder: { type: 'magic' } }],
    ['c1', { dimensions: 3, embedder: { type: 'ollama', url: 'ftp://x' } }],
    ['c1', { dimensions: 3, bm25_backend: 'elastic' }],
    ['c1', { dimensions: 3, bm25: { k1: -1 } }],
    ['c1', { dimensions: 3, bm25: { b: 2 } }],
    ['c1', { dimensions: 3, colour: 'red' }],
    ['c1', [1, 2]],
    ['-bad', { dimensions: 3 }],
    ['.hidden', { dimensions: 3 }],
    ['a%20b', { dimensions: 3 }],
    ['__proto__', { dimensions: 3 }],
  ];
  for (const [name, body] of bad) {
    const r = await node.request('PUT', `${P}/collections/${name}`, { body });
    t.equal(r.status, 400, `${name} ${JSON.stringify(body)}: ${r.body.message}`);
    t.equal(r.body.error, 'bad_request');
    t.type(r.body.message, 'string');
  }
  const broken = await node.request('PUT', `${P}/collections/c1`, { body: '{"dimensions": ', raw: true, headers: { 'content-type': 'application/json' } });
  t.same([broken.status, broken.body.error], [400, 'bad_request'], 'invalid JSON');
  const empty = await node.request('PUT', `${P}/collections/c1`);
  t.same([empty.status, empty.body.error], [400, 'bad_request'], 'no body');
  const list = await node.request('GET', `${P}/collections`);
  t.same(list.body, {}, 'nothing was created');
  // Names Object.prototype has are names like any other (see test/cluster/meta-state.test.ts).
  for (const name of ['constructor', 'toString', '__proto_']) {
    t.equal((await node.request('GET', `${P}/collections/${name}`)).status, 404, `${name} is not there before it is made`);
    t.equal((await node.request('PUT', `${P}/collections/${name}`, { body: { dimensions: 3 } })).status, 201, name);
    t.equal((await node.request('GET', `${P}/collections/${name}`)).body.name, name);
  }
});

t.test('documents and vector search', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', `${P}/collections/v`, { body: { dimensions: 3 } });

  let r = await node.request('POST', `${P}/collections/v/docs`, { body: { id: 'a', text: 'alpha', metadata: { kind: 'x', n: 1 }, vector: [1, 0, 0] } });
  t.same([r.status, r.body], [201, { status: 'created', id: 'a' }]);
  r = await node.request('POST', `${P}/collections/v/docs`, {
    body: {
      documents: [
        { id: 'b', text: 'beta', metadata: { kind: 'y', n: 2 }, vector: [0, 1, 0] },
        { id: 'c', text: 'gamma', metadata: { kind: 'x', n: 3 }, vector: [0.9, 0.1, 0] },
        { id: 'bad', vector: [1, 2] },
        { id: 'nov', text: 'no vector and no embedder' },
        { text: 'no id', vector: [1, 1, 1] },
      ],
    },
  });
  t.equal(r.status, 200);
  t.match(r.body.results, [
    { id: 'b', status: 'created' },
    { id: 'c', status: 'created' },
    { id: 'bad', error: 'bad_request' },
    { id: 'nov', error: 'bad_request', message: /embedder/ },
    { error: 'bad_request' },
  ]);

  r = await node.request('GET', `${P}/collections/v/docs/a`);
  t.same([r.status, r.body], [200, { id: 'a', text: 'alpha', metadata: { kind: 'x', n: 1 } }]);
  r = await node.request('GET', `${P}/collections/v/docs/a?include_vector=true`);
  t.same(r.body.vector, [1, 0, 0]);
  r = await node.request('GET', `${P}/collections/v`);
  t.equal(r.body.count, 3);

  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [1, 0, 0], k: 2 } });
  t.equal(r.status, 200);
  t.same(r.body.results.map((h: { id: string }) => h.id), ['a', 'c']);
  t.match(r.body.results[0], { id: 'a', text: 'alpha', metadata: { kind: 'x', n: 1 } });
  t.ok(Math.abs(r.body.results[0].score - 1) < 1e-6, 'cosine score of the same direction is 1');
  t.ok(r.body.results[0].score >= r.body.results[1].score, 'sorted by score');

  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [1, 0, 0], k: 10, filter: { kind: 'y' } } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['b'], 'filter by equality');
  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [0, 1, 0], filter: { n: { $gte: 2 } } } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['b', 'c'], 'filter by range');
  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [0, 1, 0], filter: { kind: { $in: ['x'] } }, ef: 200 } });
  t.same(r.body.results.map((h: { id: string }) => h.id).sort(), ['a', 'c'], 'filter by $in');

  // update moves the doc
  r = await node.request('POST', `${P}/collections/v/docs`, { body: { id: 'a', text: 'alpha2', vector: [0, 0, 1] } });
  t.equal(r.status, 201);
  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [0, 0, 1], k: 1 } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['a'], 'an update is searchable at its new vector');
  t.equal(r.body.results[0].text, 'alpha2');
  t.same(r.body.results[0].metadata, {}, 'an upsert replaces metadata');

  r = await node.request('DELETE', `${P}/collections/v/docs/a`);
  t.same([r.status, r.body], [200, { status: 'deleted' }]);
  r = await node.request('DELETE', `${P}/collections/v/docs/a`);
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('GET', `${P}/collections/v/docs/a`);
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [0, 0, 1], k: 10 } });
  t.notOk(r.body.results.some((h: { id: string }) => h.id === 'a'), 'a deleted doc is not found');
  t.equal(r.body.results.length, 2);

  // restart: docs and index back
  await node.restart();
  r = await node.request('POST', `${P}/collections/v/search`, { body: { vector: [0, 1, 0], k: 10 } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['b', 'c']);
  r = await node.request('GET', `${P}/collections/v`);
  t.equal(r.body.count, 2);
});

t.test('documents and search: bad input', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', `${P}/collections/v`, { body: { dimensions: 3 } });
  const badDocs: unknown[] = [
    {},
    { id: '' },
    { id: 5, vector: [1, 0, 0] },
    { id: 'x', vector: [1, 0] },
    { id: 'x', vector: [1, 0, 'a'] },
    { id: 'x', vector: [0, 0, 0] },
    { id: 'x', vector: [1e39, 0, 0] },
    { id: 'x', vector: [1, 0, 0], metadata: [1] },
    { id: 'x', vector: [1, 0, 0], text: 5 },
    { id: 'x', text: 'needs an embedder' },
    { id: 'x', vector: [1, 0, 0], extra: true },
    { documents: [] },
    { documents: 'x' },
    { documents: [{ id: 'y', vector: [1, 0, 0] }], id: 'x' },
  ];
  for (const body of badDocs) {
    const r = await node.request('POST', `${P}/collections/v/docs`, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `${JSON.stringify(body)}: ${r.body.message}`);
  }
  const r0 = await node.request('POST', `${P}/collections/v/docs`, { body: { id: 'x', text: 'hi' } });
  t.match(r0.body.message, /embedder/, 'a text-only doc names the missing embedder');
  const badSearch: unknown[] = [
    {},
    { k: 3 },
    { query: '' },
    { query: 5 },
    { vector: [1, 0] },
    { vector: [1, 0, 0], k: 0 },
    { vector: [1, 0, 0], k: 1001 },
    { vector: [1, 0, 0], ef: 0 },
    { vector: [1, 0, 0], filter: [] },
    { vector: [1, 0, 0], filter: { a: { $regex: 'x' } } },
    { vector: [1, 0, 0], filter: { a: { $in: 3 } } },
    { query: 'hello' },
  ];
  for (const body of badSearch) {
    const r = await node.request('POST', `${P}/collections/v/search`, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `${JSON.stringify(body)}: ${r.body.message}`);
  }
  let r = await node.request('POST', `${P}/collections/nope/search`, { body: { vector: [1, 0, 0] } });
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('POST', `${P}/collections/nope/docs`, { body: { id: 'a', vector: [1, 0, 0] } });
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('GET', `${P}/collections/nope/docs/a`);
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('GET', `${P}/collections/v/docs/a?include_vector=maybe`);
  t.same([r.status, r.body.error], [400, 'bad_request']);
  r = await node.request('PATCH', `${P}/collections/v`);
  t.same([r.status, r.body.error], [405, 'method_not_allowed']);
  r = await node.request('PUT', `${P}/collections/v/search`);
  t.same([r.status, r.body.error], [405, 'method_not_allowed']);
  r = await node.request('GET', `${P}/nothing-here`);
  t.same([r.status, r.body.error], [404, 'not_found']);
});
