// /v1 over real HTTP against the real vector engine: every route, error and header.
import t from 'tap';
import { internalName } from '../../src/gateway/names.js';
import { MASTER_KEY, startGatewayNode } from './support.js';

const v = (...xs: number[]) => xs;

t.test('/v1 routes', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const acme = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme', max_collections: 2, max_vectors: 5, rpm_limit: 100_000 })).body.api_key as string;
  const beta = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'beta', rpm_limit: 100_000 })).body.api_key as string;
  const usage = async (tenant: string) => (await gw.admin('GET', `/admin/tenants/${tenant}/usage`)).body.usage;

  t.test('keys: missing 401 missing_api_key, unknown 401 invalid_api_key, master key is not a tenant key', async (t) => {
    for (const [method, path] of [
      ['GET', '/v1/collections'],
      ['POST', '/v1/collections'],
      ['GET', '/v1/collections/docs'],
      ['DELETE', '/v1/collections/docs'],
      ['POST', '/v1/collections/docs/documents'],
      ['GET', '/v1/collections/docs/documents/a'],
      ['DELETE', '/v1/collections/docs/documents/a'],
      ['POST', '/v1/collections/docs/search'],
      ['POST', '/v1/collections/docs/documents/scroll'],
    ] as const) {
      const none = await gw.call(method, path, undefined);
      t.equal(none.status, 401, `${method} ${path}`);
      t.equal(none.body.error, 'missing_api_key');
      t.type(none.body.message, 'string');
      t.equal((await gw.call(method, path, 'gk_nope')).body.error, 'invalid_api_key');
      t.equal((await gw.call(method, path, MASTER_KEY)).body.error, 'invalid_api_key');
    }
  });

  t.test('collections: create, duplicate, bad bodies, list, get, quota, delete', async (t) => {
    const created = await gw.call('POST', '/v1/collections', acme, { name: 'docs', dimension: 3 });
    t.equal(created.status, 201);
    t.match(created.body, { name: 'docs', dimension: 3, count: 0, status: 'created' });
    const dup = await gw.call('POST', '/v1/collections', acme, { name: 'docs', dimension: 3 });
    t.equal(dup.status, 409);
    t.equal(dup.body.error, 'collection_already_exists');
    for (const body of [
      {},
      { name: 'x' },
      { dimension: 3 },
      { name: '', dimension: 3 },
      { name: 'Bad', dimension: 3 },
      { name: 'a/b', dimension: 3 },
      { name: '_x', dimension: 3 },
      { name: 'x'.repeat(65), dimension: 3 },
      { name: 'x', dimension: 0 },
      { name: 'x', dimension: 1_000_000 },
      { name: 'x', dimension: 2.5 },
      { name: 'x', dimension: 3, embedder: { type: 'nope' } },
      { name: 'x', dimension: 3, embedder: {} },
      { name: 'x', dimension: 3, extra: true },
    ]) {
      const r = await gw.call('POST', '/v1/collections', acme, body);
      t.equal(r.status, 400, JSON.stringify(body));
      t.equal(r.body.error, 'bad_request');
    }
    t.equal((await gw.call('POST', '/v1/collections', acme, { name: 'texts', dimension: 16, embedder: { type: 'hash' } })).status, 201);
    const third = await gw.call('POST', '/v1/collections', acme, { name: 'third', dimension: 3 });
    t.equal(third.status, 403);
    t.equal(third.body.error, 'quota_exceeded');
    const list = await gw.call('GET', '/v1/collections', acme);
    t.equal(list.status, 200);
    t.same(list.body.collections.map((c: { name: string }) => c.name), ['docs', 'texts']);
    t.match(list.body.collections[1], { name: 'texts', dimension: 16, embedder: { type: 'hash' } });
    const info = await gw.call('GET', '/v1/collections/docs', acme);
    t.equal(info.status, 200);
    t.match(info.body, { name: 'docs', dimension: 3, count: 0 });
    const missing = await gw.call('GET', '/v1/collections/nope', acme);
    t.equal(missing.status, 404);
    t.equal(missing.body.error, 'collection_not_found');
    t.equal((await gw.call('GET', '/v1/collections/Bad%20Name', acme)).status, 400);
    t.same((await usage('acme')).collection_count, 2);
    t.equal((await gw.call('DELETE', '/v1/collections/nope', acme)).body.error, 'collection_not_found');
  });

  t.test('isolation: another tenant sees none of it and may use the same names', async (t) => {
    t.same((await gw.call('GET', '/v1/collections', beta)).body.collections, []);
    for (const [method, path] of [
      ['GET', '/v1/collections/docs'],
      ['DELETE', '/v1/collections/docs'],
      ['GET', '/v1/collections/docs/documents/a'],
    ] as const) {
      t.equal((await gw.call(method, path, beta)).body.error, 'collection_not_found', `${method} ${path}`);
    }
    t.equal((await gw.call('POST', '/v1/collections/docs/search', beta, { vector: v(1, 0, 0) })).body.error, 'collection_not_found');
    t.equal((await gw.call('POST', '/v1/collections', beta, { name: 'docs', dimension: 2 })).status, 201, 'same name, other tenant');
    const crafted = internalName('acme', 'docs'); // "53bc_acme_docs" as a name of beta's
    t.equal((await gw.call('POST', '/v1/collections', beta, { name: crafted, dimension: 3 })).status, 201);
    t.equal((await gw.call('GET', '/v1/collections/docs', acme)).body.dimension, 3, "acme's docs untouched");
    t.equal((await gw.call('DELETE', `/v1/collections/${crafted}`, beta)).status, 200);
    t.equal((await gw.call('GET', '/v1/collections/docs', acme)).status, 200, 'still there');
  });

  t.test('documents: single, update, batch, quota, errors', async (t) => {
    const one = await gw.call('POST', '/v1/collections/docs/documents', acme, { id: 'a', text: 'alpha', vector: v(1, 0, 0), metadata: { tag: 'x', n: 1 } });
    t.equal(one.status, 201);
    t.same(one.body, { id: 'a', status: 'created' });
    t.equal((await usage('acme')).vector_count, 1);
    const again = await gw.call('POST', '/v1/collections/docs/documents', acme, { id: 'a', text: 'alpha 2', vector: v(1, 0, 0), metadata: { tag: 'x', n: 2 } });
    t.same(again.body, { id: 'a', status: 'updated' });
    t.equal((await usage('acme')).vector_count, 1, 'an overwrite counts once');
    const batch = await gw.call('POST', '/v1/collections/docs/documents', acme, {
      documents: [
        { id: 'b', text: 'beta', vector: v(0, 1, 0), metadata: { tag: 'y' } },
        { id: 'c', text: 'gamma', vector: v(0, 0, 1), metadata: { tag: 'x' } },
        { vector: v(1, 1, 0) },
      ],
    });
    t.equal(batch.status, 201);
    t.equal(batch.body.results.length, 3);
    t.match(batch.body.results[2], { id: /^[A-Za-z0-9_-]{16}$/, status: 'created' }, 'a generated id');
    const u = await usage('acme');
    t.equal(u.vector_count, 4);
    t.ok(u.storage_bytes > 0, 'storage is tracked');

    const over = await gw.call('POST', '/v1/collections/docs/documents', acme, {
      documents: [
        { id: 'd', vector: v(1, 0, 1) },
        { id: 'e', vector: v(0, 1, 1) },
      ],
    });
    t.equal(over.status, 403, 'a batch crossing max_vectors is refused whole');
    t.equal(over.body.error, 'quota_exceeded');
    t.equal((await gw.call('GET', '/v1/collections/docs/documents/d', acme)).status, 404, 'none of it was written');
    t.equal((await usage('acme')).vector_count, 4);
    t.equal((await gw.call('POST', '/v1/collections/docs/documents', acme, { id: 'b', vector: v(0, 1, 0) })).status, 201, 'an overwrite at the limit is fine');

    for (const body of [
      { id: 'z', vector: v(1, 0) },
      { id: 'z', vector: 'no' },
      { id: '', vector: v(1, 0, 0) },
      { id: 'z', vector: v(1, 0, 0), metadata: 'no' },
      { id: 'z', vector: v(1, 0, 0), extra: 1 },
      { id: 'z', documents: [{ id: 'y', vector: v(1, 0, 0) }] },
      { documents: [] },
      { documents: [{ id: 'y', vector: v(1, 0) }] },
      { id: 'z', text: 'no vector and no embedder' },
    ]) {
      const r = await gw.call('POST', '/v1/collections/docs/documents', acme, body);
      t.equal(r.status, 400, JSON.stringify(body));
      t.equal(r.body.error, 'bad_request');
    }
    t.equal((await usage('acme')).vector_count, 4, 'bad writes count nothing');
    t.equal((await gw.call('POST', '/v1/collections/nope/documents', acme, { id: 'a', vector: v(1, 0, 0) })).body.error, 'collection_not_found');

    const got = await gw.call('GET', '/v1/collections/docs/documents/a', acme);
    t.equal(got.status, 200);
    t.match(got.body, { id: 'a', text: 'alpha 2', metadata: { tag: 'x', n: 2 } });
    const nodoc = await gw.call('GET', '/v1/collections/docs/documents/nope', acme);
    t.equal(nodoc.status, 404);
    t.equal(nodoc.body.error, 'document_not_found');
    t.equal((await gw.call('GET', '/v1/collections/nope/documents/a', acme)).body.error, 'collection_not_found');
  });

  t.test('search: by vector, with a filter, by text; errors', async (t) => {
    const r = await gw.call('POST', '/v1/collections/docs/search', acme, { vector: v(1, 0, 0), k: 2 });
    t.equal(r.status, 200);
    t.equal(r.body.hits.length, 2);
    t.match(r.body.hits[0], { id: 'a', text: 'alpha 2', metadata: { tag: 'x' } });
    t.type(r.body.hits[0].score, 'number');
    const filtered = await gw.call('POST', '/v1/collections/docs/search', acme, { vector: v(0, 1, 0), k: 10, filter: { tag: 'x' } });
    t.same(filtered.body.hits.map((h: { id: string }) => h.id).sort(), ['a', 'c']);
    const defaultK = await gw.call('POST', '/v1/collections/docs/search', acme, { vector: v(0, 1, 0) });
    t.equal(defaultK.body.hits.length, 4, 'k defaults to 10');

    await gw.call('POST', '/v1/collections/texts/documents', acme, { id: 't1', text: 'the quick brown fox', metadata: {} });
    const text = await gw.call('POST', '/v1/collections/texts/search', acme, { query: 'quick fox', k: 1 });
    t.equal(text.status, 200);
    t.equal(text.body.hits[0]?.id, 't1');

    for (const body of [{}, { k: 1 }, { query: 'x', vector: v(1, 0, 0) }, { vector: v(1, 0) }, { vector: v(1, 0, 0), k: 0 }, { vector: v(1, 0, 0), k: 100_000 }, { query: '' }, { vector: v(1, 0, 0), filter: 'x' }]) {
      const bad = await gw.call('POST', '/v1/collections/docs/search', acme, body);
      t.equal(bad.status, 400, JSON.stringify(body));
      t.equal(bad.body.error, 'bad_request');
    }
    t.equal((await gw.call('POST', '/v1/collections/docs/search', acme, { query: 'no embedder' })).status, 400, 'text query without an embedder');
  });

  t.test('scroll: the tenant\'s documents in id order, a page at a time; another tenant\'s collection is not found', async (t) => {
    const all = await gw.call('POST', '/v1/collections/docs/search', acme, { vector: v(1, 0, 0), k: 100 });
    const want = (all.body.hits as { id: string }[]).map((h) => h.id).sort();
    const seen: string[] = [];
    let offset: string | null = null;
    do {
      const page: { status: number; body: { documents: { id: string; text?: string }[]; next_offset: string | null } } = await gw.call('POST', '/v1/collections/docs/documents/scroll', acme, { limit: 3, ...(offset === null ? {} : { offset }) });
      t.equal(page.status, 200);
      seen.push(...page.body.documents.map((d) => d.id));
      offset = page.body.next_offset;
    } while (offset !== null && seen.length <= want.length);
    t.same(seen, want, 'every document once, in id order');
    const first = await gw.call('POST', '/v1/collections/docs/documents/scroll', acme, { limit: 1 });
    t.match(first.body.documents[0], { id: want[0], metadata: {} });
    t.notOk('vector' in first.body.documents[0], 'no vectors');
    const tagged = await gw.call('POST', '/v1/collections/docs/documents/scroll', acme, { filter: { tag: 'x' } });
    t.same(tagged.body.documents.map((d: { id: string }) => d.id), ['a', 'c'], 'a filter');
    t.equal((await gw.call('POST', '/v1/collections/docs/documents/scroll', acme)).status, 200, 'no body');
    t.equal((await gw.call('POST', '/v1/collections/texts/documents/scroll', beta, {})).body.error, 'collection_not_found', 'another tenant\'s collection');
    const theirs = await gw.call('POST', '/v1/collections/docs/documents/scroll', beta, { limit: 100 });
    t.notOk((theirs.body.documents as { id: string }[]).some((d) => want.includes(d.id)), 'a collection of the same name of another tenant lists none of these');
    for (const body of [{ limit: 0 }, { limit: 100_000 }, { filter: 'x' }, { include_vector: true }]) {
      t.equal((await gw.call('POST', '/v1/collections/docs/documents/scroll', acme, body)).status, 400, JSON.stringify(body));
    }
  });

  t.test('delete document: 404 when missing, counters move only on a real delete', async (t) => {
    const before = await usage('acme');
    const del = await gw.call('DELETE', '/v1/collections/docs/documents/b', acme);
    t.equal(del.status, 200);
    t.same(del.body, { status: 'deleted', id: 'b' });
    const after = await usage('acme');
    t.equal(after.vector_count, before.vector_count - 1);
    t.ok(after.storage_bytes < before.storage_bytes);
    const twice = await gw.call('DELETE', '/v1/collections/docs/documents/b', acme);
    t.equal(twice.status, 404);
    t.equal(twice.body.error, 'document_not_found');
    t.same(await usage('acme'), after, 'unchanged');
  });

  t.test('restart: collections, documents, usage and keys persist', async (t) => {
    const before = await usage('acme');
    await gw.restart();
    t.same(await usage('acme'), before);
    t.same((await gw.call('GET', '/v1/collections', acme)).body.collections.map((c: { name: string }) => c.name), ['docs', 'texts']);
    t.match((await gw.call('GET', '/v1/collections/docs/documents/a', acme)).body, { id: 'a', text: 'alpha 2' });
    t.equal((await gw.call('POST', '/v1/collections/docs/search', acme, { vector: v(1, 0, 0), k: 1 })).body.hits[0].id, 'a');
  });

  t.test('delete collection, then delete tenant: the data is gone from the vector engine', async (t) => {
    const del = await gw.call('DELETE', '/v1/collections/texts', acme);
    t.equal(del.status, 200);
    t.same(del.body, { status: 'deleted', name: 'texts' });
    t.equal((await usage('acme')).collection_count, 1);
    t.equal((await gw.call('GET', '/v1/collections/texts', acme)).status, 404);
    const gone = await gw.admin('DELETE', '/admin/tenants/acme');
    t.match(gone.body, { status: 'deleted', collections_deleted: 1 });
    t.equal((await gw.call('GET', '/v1/collections', acme)).body.error, 'invalid_api_key', 'its keys are revoked');
    const again = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme' })).body.api_key as string;
    t.same((await gw.call('GET', '/v1/collections', again)).body.collections, [], 'a new tenant of the same id starts empty');
    t.equal((await gw.call('POST', '/v1/collections', again, { name: 'docs', dimension: 3 })).status, 201);
    t.equal((await gw.call('GET', '/v1/collections/docs', again)).body.count, 0, 'no old documents');
  });
});
