// CouchDB's forms around `_find` over HTTP, on a database and on a VDB: the index routes as
// PouchDB's createIndex / getIndexes / deleteIndex drive them (every field is indexed
// automatically, so a declared index exists already; the built-ins are listed and cannot be
// deleted), `allow_fallback: false`, and `conflicts: true`.
import t, { type Test } from 'tap';
import { type TestNode, startTestNode } from '../../support/node.js';

/** A node with an empty database `shop` and an empty VDB `vshop` of `shards` shards; closed after `t`. */
async function shopNode(t: Test, shards: number): Promise<TestNode> {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/shop')).status, 201);
  t.equal((await node.request('POST', '/vdb', { body: { name: 'vshop', shard_count: shards } })).status, 201);
  return node;
}

t.test('_index on a database and a VDB', async (t) => {
  const node = await shopNode(t, 3);

  for (const base of ['/db/shop', '/vdb/vshop']) {
    const docs = Array.from({ length: 6 }, (_, i) => ({ _id: `p${i}`, kind: i % 2 === 0 ? 'pen' : 'ink', price: i }));
    t.equal((await node.request('POST', `${base}/_bulk_docs`, { body: { docs } })).status, 201);

    const made = await node.request('POST', `${base}/_index`, { body: { index: { fields: ['kind', 'price'] }, name: 'kind-price', ddoc: 'shop', type: 'json' } });
    t.equal(made.status, 200, `${base}: ${JSON.stringify(made.body)}`);
    t.same(made.body, { result: 'exists', id: '_design/_auto', name: '_auto' }, `${base}: the automatic index covers it`);
    // The query the index was declared for, naming it as CouchDB clients do.
    const found = await node.request('POST', `${base}/_find`, { body: { selector: { kind: 'pen', price: { $gt: 0 } }, sort: [{ price: 'desc' }], use_index: ['shop', 'kind-price'] } });
    t.equal(found.status, 200);
    t.same(found.body.docs.map((d: { _id: string }) => d._id), ['p4', 'p2'], `${base}: _find with use_index`);

    const listed = await node.request('GET', `${base}/_index`);
    t.equal(listed.status, 200);
    t.same(listed.body.indexes.map((i: { ddoc: string | null; name: string }) => [i.ddoc, i.name]), [[null, '_all_docs'], ['_design/_auto', '_auto']]);
    t.equal(listed.body.total_rows, 2);

    const bad = await node.request('POST', `${base}/_index`, { body: { index: { fields: ['kind', { price: 'desc' }] } } });
    t.equal(bad.status, 400);
    t.same(Object.keys(bad.body).sort(), ['error', 'message']);
    t.match(bad.body.message, /mixes "asc" and "desc"/);
    t.equal((await node.request('POST', `${base}/_index`, { body: { index: { fields: ['a'] }, type: 'text' } })).status, 400, 'text indexes are not offered');

    const builtIn = await node.request('DELETE', `${base}/_index/_design/_auto/json/_auto`);
    t.equal(builtIn.status, 403);
    t.equal(builtIn.body.error, 'forbidden');
    t.equal((await node.request('DELETE', `${base}/_index/_auto/json/_auto`)).status, 403, 'the design document without its prefix');
    const unknown = await node.request('DELETE', `${base}/_index/shop/json/kind-price`);
    t.equal(unknown.status, 404);
    t.match(unknown.body.message, /keeps no declared indexes/);
  }

  for (const missing of ['/db/nope', '/vdb/nope']) {
    t.equal((await node.request('POST', `${missing}/_index`, { body: { index: { fields: ['a'] } } })).status, 404, `${missing}: no such database`);
    t.equal((await node.request('GET', `${missing}/_index`)).status, 404);
    t.equal((await node.request('DELETE', `${missing}/_index/x/json/y`)).status, 404);
  }
});

t.test('allow_fallback: false refuses a query no index narrows, on a database and a VDB', async (t) => {
  const node = await shopNode(t, 2);
  for (const base of ['/db/shop', '/vdb/vshop']) {
    const docs = Array.from({ length: 4 }, (_, i) => ({ _id: `p${i}`, kind: i % 2 === 0 ? 'pen' : 'ink' }));
    t.equal((await node.request('POST', `${base}/_bulk_docs`, { body: { docs } })).status, 201);
    const find = (body: Record<string, unknown>) => node.request('POST', `${base}/_find`, { body: { ...body, allow_fallback: false } });
    const refused = await find({ selector: { kind: { $ne: 'pen' } } });
    t.equal(refused.status, 400, `${base}: $ne uses no index`);
    t.match(refused.body.message, /no index can serve this selector .* "allow_fallback" is false/);
    t.same((await node.request('POST', `${base}/_find`, { body: { selector: { kind: { $ne: 'pen' } } } })).body.docs.map((d: { _id: string }) => d._id), ['p1', 'p3'], 'the same query with the fallback allowed');
    t.same((await find({ selector: { kind: 'ink' } })).body.docs.map((d: { _id: string }) => d._id), ['p1', 'p3'], 'an indexed condition is served');
    t.same((await find({ selector: { _id: { $gt: 'p1' } } })).body.docs.map((d: { _id: string }) => d._id), ['p2', 'p3'], 'an _id range is _all_docs, an index');
    t.equal((await find({})).status, 200, 'every document: _all_docs');
  }
});

t.test('conflicts: true lists the other leaves of each document, on a database and a VDB', async (t) => {
  const node = await shopNode(t, 2);
  const h = (c: string) => c.repeat(64);
  for (const base of ['/db/shop', '/vdb/vshop']) {
    // Two branches of p1 (a conflict, as replication leaves them), one revision of p2.
    const branches = ['a', 'b'].map((c) => ({ _id: 'p1', _rev: `1-${h(c)}`, kind: 'pen', branch: c }));
    t.equal((await node.request('POST', `${base}/_bulk_docs`, { body: { docs: branches, new_edits: false } })).status, 201);
    t.equal((await node.request('POST', `${base}/_bulk_docs`, { body: { docs: [{ _id: 'p2', kind: 'pen' }] } })).status, 201);
    const found = await node.request('POST', `${base}/_find`, { body: { selector: { kind: 'pen' }, conflicts: true } });
    t.equal(found.status, 200, JSON.stringify(found.body));
    t.same(found.body.docs.map((d: Record<string, unknown>) => [d._id, d._rev, d._conflicts]), [['p1', `1-${h('b')}`, [`1-${h('a')}`]], ['p2', found.body.docs[1]._rev, undefined]], `${base}: the winner, and the losing leaf in _conflicts`);
    const plain = await node.request('POST', `${base}/_find`, { body: { selector: { kind: 'pen' } } });
    t.notOk('_conflicts' in plain.body.docs[0], `${base}: not without conflicts: true`);
    const cut = await node.request('POST', `${base}/_find`, { body: { selector: { _id: 'p1' }, conflicts: true, fields: ['_id', '_conflicts'] } });
    t.same(cut.body.docs, [{ _id: 'p1', _conflicts: [`1-${h('a')}`] }], `${base}: fields may keep it`);
    t.equal((await node.request('POST', `${base}/_find`, { body: { conflicts: 'yes' } })).status, 400);
  }
});
