// Keyword (BM25) and hybrid search over the standard API, with both BM25 backends, across
// updates, deletes and restarts.
import t from 'tap';
import { fuse } from '../../src/vector/fusion.js';
import { startTestNode } from '../support/node.js';

const P = '/vectordb/collections';
const CORPUS = [
  { id: 'd1', text: 'the quick brown fox' },
  { id: 'd2', text: 'the lazy dog' },
  { id: 'd3', text: 'the quick dog quick' },
];
// Hand-computed in bm25.test.ts for this corpus and the query "quick dog".
const EXPECTED: Record<string, number> = { d3: 1.0832943, d2: 0.5077718, d1: 0.4531509 };

for (const backend of ['memory', 'disk'] as const) {
  t.test(`bm25 (${backend}): scores, updates, deletes, restart`, async (t) => {
    const node = await startTestNode();
    t.teardown(() => node.close());
    let r = await node.request('PUT', `${P}/kw`, { body: { dimensions: 32, embedder: { type: 'hash' }, bm25_backend: backend } });
    t.equal(r.status, 201);
    r = await node.request('POST', `${P}/kw/docs`, { body: { documents: CORPUS } });
    t.equal(r.status, 200);

    const check = async (what: string) => {
      const res = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'Quick DOG', k: 10 } });
      t.equal(res.status, 200, what);
      t.same(res.body.results.map((h: { id: string }) => h.id), ['d3', 'd2', 'd1'], what);
      for (const h of res.body.results as { id: string; score: number }[]) {
        t.same(Object.keys(h).sort(), ['id', 'score']);
        t.ok(Math.abs(h.score - EXPECTED[h.id]!) < 1e-6, `${what}: ${h.id} ${h.score}`);
      }
    };
    await check('fresh');
    await node.restart();
    await check('after restart');

    r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'quick dog', k: 1 } });
    t.same(r.body.results.map((h: { id: string }) => h.id), ['d3'], 'k');
    r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'zebra' } });
    t.same(r.body.results, [], 'no match');

    // an update replaces the old postings, a delete removes them
    await node.request('POST', `${P}/kw/docs`, { body: { id: 'd3', text: 'nothing to see' } });
    await node.request('DELETE', `${P}/kw/docs/d1`);
    r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'quick dog' } });
    t.same(r.body.results.map((h: { id: string }) => h.id), ['d2']);
    // N = 2 (d2: 3 tokens, d3: 3 tokens), avgdl 3, dog df 1: idf ln(1 + 1.5/1.5) = ln 2; tf 1 at avgdl: ln 2 * 2.2 / 2.2
    t.ok(Math.abs(r.body.results[0].score - Math.LN2) < 1e-9, 'stats follow updates and deletes');
    await node.restart();
    r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'quick dog' } });
    t.same(r.body.results.map((h: { id: string }) => h.id), ['d2'], 'and survive a restart');
    t.ok(Math.abs(r.body.results[0].score - Math.LN2) < 1e-9);
    // a new doc with a queried (and, on disk, cached) term is found at once
    await node.request('POST', `${P}/kw/docs`, { body: { id: 'd4', text: 'dog days' } });
    r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'quick dog' } });
    t.same(r.body.results.map((h: { id: string }) => h.id).sort(), ['d2', 'd4'], 'a new posting is visible');
    await node.request('DELETE', `${P}/kw/docs/d2`);
    r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'dog' } });
    t.same(r.body.results.map((h: { id: string }) => h.id), ['d4'], 'a deleted posting is gone');
  });
}

t.test('bm25 and hybrid errors', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', `${P}/plain`, { body: { dimensions: 8, embedder: { type: 'hash' } } });
  await node.request('PUT', `${P}/noembed`, { body: { dimensions: 8, bm25_backend: 'memory' } });
  await node.request('PUT', `${P}/ok`, { body: { dimensions: 8, embedder: { type: 'hash' }, bm25_backend: 'memory' } });
  let r = await node.request('POST', `${P}/plain/search/bm25`, { body: { query: 'x' } });
  t.same([r.status, r.body.error], [400, 'no_bm25_index']);
  t.type(r.body.message, 'string');
  r = await node.request('POST', `${P}/plain/search/hybrid`, { body: { query: 'x' } });
  t.same([r.status, r.body.error], [400, 'no_bm25_index']);
  r = await node.request('POST', `${P}/noembed/search/hybrid`, { body: { query: 'x' } });
  t.same([r.status, r.body.error], [400, 'bad_request']);
  t.match(r.body.message, /embedder/);
  r = await node.request('POST', `${P}/nope/search/bm25`, { body: { query: 'x' } });
  t.same([r.status, r.body.error], [404, 'not_found']);
  const bad: [string, unknown][] = [
    ['bm25', {}],
    ['bm25', { query: 5 }],
    ['bm25', { query: '' }],
    ['bm25', { query: 'x', k: 0 }],
    ['bm25', { query: 'x', k: 1001 }],
    ['bm25', { query: 'x', filter: {} }],
    ['hybrid', {}],
    ['hybrid', { query: 'x', fusion: 'borda' }],
    ['hybrid', { query: 'x', bm25_weight: 1.5 }],
    ['hybrid', { query: 'x', vector_weight: -0.1 }],
    ['hybrid', { query: 'x', k: 'ten' }],
  ];
  for (const [kind, body] of bad) {
    r = await node.request('POST', `${P}/ok/search/${kind}`, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `${kind} ${JSON.stringify(body)}: ${r.body.message}`);
  }
});

t.test('hybrid search: rrf and linear', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', `${P}/h`, { body: { dimensions: 128, embedder: { type: 'hash' }, bm25_backend: 'disk' } });
  const docs = [
    { id: 'pie', text: 'apple pie with cinnamon and butter' },
    { id: 'tart', text: 'apple tart with cream' },
    { id: 'car', text: 'electric car with a big battery' },
    { id: 'bike', text: 'a bike with a battery' },
  ];
  await node.request('POST', `${P}/h/docs`, { body: { documents: docs } });
  let r = await node.request('POST', `${P}/h/search/hybrid`, { body: { query: 'apple pie' } });
  t.equal(r.status, 200);
  const rrf = r.body.results as { id: string; score: number; bm25_score: number | null; vector_score: number | null }[];
  t.equal(rrf[0]!.id, 'pie');
  t.same(Object.keys(rrf[0]!).sort(), ['bm25_score', 'id', 'score', 'vector_score']);
  t.ok(rrf[0]!.bm25_score! > 0 && rrf[0]!.vector_score! > 0);
  t.ok(Math.abs(rrf[0]!.score - (0.5 / 61 + 0.5 / 61)) < 1e-12, 'first in both lists: 0.5/61 + 0.5/61');
  for (let i = 1; i < rrf.length; i++) t.ok(rrf[i - 1]!.score >= rrf[i]!.score, 'sorted');

  r = await node.request('POST', `${P}/h/search/hybrid`, { body: { query: 'apple pie', fusion: 'linear', k: 2, bm25_weight: 0.2, vector_weight: 0.8 } });
  t.equal(r.body.results.length, 2);
  t.equal(r.body.results[0].id, 'pie');
  t.ok(Math.abs(r.body.results[0].score - 1) < 1e-9, 'best in both lists: 0.2 * 1 + 0.8 * 1');

  r = await node.request('POST', `${P}/h/search/hybrid`, { body: { query: 'battery', bm25_weight: 1, vector_weight: 0 } });
  t.same(r.body.results.slice(0, 2).map((h: { id: string }) => h.id).sort(), ['bike', 'car'], 'weight 1 on BM25 ranks by keywords');
});

t.test('hybrid search with a client vector: no embedder needed, ranks like the fusion of its two lists', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', `${P}/own`, { body: { dimensions: 4, bm25_backend: 'memory' } })).status, 201, 'no embedder');
  const words = ['apple', 'pear', 'plum', 'fig', 'lime'];
  const documents = Array.from({ length: 60 }, (_, i) => ({
    id: `d${i}`,
    text: `${words[i % 5]} ${words[(i * 3) % 5]} ${i % 7 === 0 ? 'apple pie' : 'tart'}`,
    vector: [Math.cos(i), Math.sin(i), (i % 4) - 1.5, 1 + (i % 3)],
  }));
  t.equal((await node.request('POST', `${P}/own/docs`, { body: { documents } })).status, 200);
  const query = 'apple pie';
  const vector = [0.3, -0.2, 0.5, 1];
  for (const [k, fusion, bm25Weight, vectorWeight] of [[5, 'rrf', 0.5, 0.5], [10, 'linear', 0.3, 0.7], [20, 'rrf', 1, 0.25]] as const) {
    const r = await node.request('POST', `${P}/own/search/hybrid`, { body: { query, vector, k, fusion, bm25_weight: bm25Weight, vector_weight: vectorWeight } });
    t.equal(r.status, 200, `${fusion} k=${k}: ${r.body.message}`);
    // Both sides are fetched at the hybrid depth, max(3k, 50).
    const depth = Math.max(3 * k, 50);
    const bm25 = (await node.request('POST', `${P}/own/search/bm25`, { body: { query, k: depth } })).body.results;
    const hits = (await node.request('POST', `${P}/own/search`, { body: { vector, k: depth } })).body.results as { id: string; score: number }[];
    const expected = fuse(fusion, { bm25, vector: hits.map((h) => ({ id: h.id, score: h.score })), bm25Weight, vectorWeight, k });
    t.same(r.body.results, expected, `${fusion} k=${k}: the standalone fusion of /search/bm25 and /search`);
    t.ok(expected.some((h) => h.bm25_score !== null) && expected.some((h) => h.vector_score !== null), 'both lists contribute');
  }
  const noVector = await node.request('POST', `${P}/own/search/hybrid`, { body: { query } });
  t.same([noVector.status, noVector.body.error], [400, 'bad_request'], 'without a vector it still needs an embedder');
  t.match(noVector.body.message, /embedder/);
});

t.test('the node-wide caches report their size in /metrics', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const gauge = async (cache: string, what: 'bytes' | 'entries') => {
    const text = (await node.request('GET', '/metrics')).text;
    const m = text.match(new RegExp(`^firkin_cache_${what}\\{cache="${cache}"\\} (\\d+)$`, 'm'));
    t.ok(m, `firkin_cache_${what}{cache="${cache}"} is reported`);
    return Number(m?.[1]);
  };
  t.equal(await gauge('bm25_postings', 'entries'), 0, 'nothing cached yet');
  await node.request('PUT', `${P}/kw`, { body: { dimensions: 8, embedder: { type: 'hash' }, bm25_backend: 'disk' } });
  await node.request('POST', `${P}/kw/docs`, { body: { documents: CORPUS } });
  const r = await node.request('POST', `${P}/kw/search/bm25`, { body: { query: 'quick dog', k: 10 } });
  t.equal(r.status, 200);
  t.ok((await gauge('bm25_postings', 'entries')) > 0, 'the search cached the lists it read');
  t.ok((await gauge('bm25_postings', 'bytes')) > 0);
  await node.request('POST', `${P}/kw/search`, { body: { query: 'quick dog', k: 2 } });
  t.ok((await gauge('payloads', 'entries')) > 0, "a vector search's hits are cached");
  // The document engine's caches, one for the node (docs/docdb.md, Limits).
  await node.request('PUT', '/db/m');
  await node.request('PUT', '/db/m/a', { body: { n: 1 } });
  t.equal((await node.request('GET', '/db/m/a')).status, 200);
  t.ok((await gauge('doc_records', 'entries')) > 0, 'the written record is cached');
  t.ok((await gauge('doc_bodies', 'bytes')) > 0, 'the body read is cached');
});
