// PouchDB 9 as a client of a Firkin database, the way applications drive it: pouchdb-find's
// createIndex / find / getIndexes / deleteIndex over the HTTP adapter, and pull replications
// with a read-only key (PouchDB's checkpointer finds the source read-only and keeps its
// checkpoint on its own side), whole or filtered by a selector or doc_ids. Each was refused before: `_index` was a 405, and a read key
// could not POST `_find` or `_bulk_get`.
import { createRequire } from 'node:module';
import t from 'tap';
import { startTestNode } from '../support/node.js';

const require = createRequire(import.meta.url);
// PouchDB ships no types; it is a test-only peer.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const PouchDB: any = require('pouchdb-core')
  .plugin(require('pouchdb-adapter-memory'))
  .plugin(require('pouchdb-adapter-http'))
  .plugin(require('pouchdb-replication'))
  .plugin(require('pouchdb-find'));

const remoteWith = (url: string, key: string) =>
  new PouchDB(url, {
    skip_setup: true,
    fetch: (u: string, opts: { headers: Headers }) => {
      opts.headers.set('Authorization', `Bearer ${key}`);
      return PouchDB.fetch(u, opts);
    },
  });

/** The HTTP status PouchDB's error carries (undefined when the call succeeded). */
const statusOf = (p: Promise<unknown>) => p.then(() => undefined, (err: { status?: number }) => err.status);

t.test('pouchdb-find and a read-only pull against a Firkin database', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/shop')).status, 201);
  const docs = Array.from({ length: 30 }, (_, i) => ({ _id: `p${String(i).padStart(2, '0')}`, kind: i % 3 === 0 ? 'pen' : 'ink', price: i }));
  t.equal((await node.request('POST', '/db/shop/_bulk_docs', { body: { docs } })).status, 201);
  const reader = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['shop'] } })).body.key as string;

  const admin = remoteWith(`${node.url}/db/shop`, node.adminKey);
  const made = await admin.createIndex({ index: { fields: ['kind', 'price'] }, name: 'kind-price', ddoc: 'shop' });
  t.equal(made.result, 'exists', 'createIndex: every field is indexed already');
  const indexes = await admin.getIndexes();
  t.same(indexes.indexes.map((i: { name: string }) => i.name), ['_all_docs', '_auto'], 'getIndexes lists the built-ins');

  const found = await admin.find({ selector: { kind: 'pen', price: { $gte: 10 } }, sort: [{ price: 'desc' }], fields: ['_id', 'price'], limit: 3 });
  t.same(found.docs, [{ _id: 'p27', price: 27 }, { _id: 'p24', price: 24 }, { _id: 'p21', price: 21 }], 'find with sort, fields and limit');
  t.equal(await statusOf(admin.deleteIndex({ ddoc: '_design/_auto', name: '_auto' })), 403, 'the automatic index cannot be deleted');

  const readOnly = remoteWith(`${node.url}/db/shop`, reader);
  const byReader = await readOnly.find({ selector: { kind: 'ink' }, limit: 100 });
  t.equal(byReader.docs.length, 20, 'a read key may _find');
  t.equal(await statusOf(readOnly.createIndex({ index: { fields: ['x'] } })), 403, 'but not declare an index');

  const local = new PouchDB(`pull-${Date.now()}`, { adapter: 'memory' });
  const pulled = await local.replicate.from(readOnly);
  t.equal(pulled.ok, true, JSON.stringify(pulled.errors));
  t.equal(pulled.docs_written, 30);
  t.equal((await local.info()).doc_count, 30, 'every document pulled with a read key');
  t.equal((await node.request('GET', '/db/shop/_all_docs')).body.total_rows, 30, 'nothing written on the source');
  await node.request('PUT', '/db/shop/p99', { body: { kind: 'pen', price: 99 } });
  const again = await local.replicate.from(readOnly);
  t.equal(again.docs_read, 1, 'the next pull resumed from the checkpoint PouchDB kept');
  t.equal((await local.get('p99')).price, 99);

  // Filtered pulls: PouchDB sends filter=_selector and filter=_doc_ids to _changes.
  const pens = new PouchDB(`pens-${Date.now()}`, { adapter: 'memory' });
  const bySelector = await pens.replicate.from(readOnly, { selector: { kind: 'pen' } });
  t.equal(bySelector.ok, true, JSON.stringify(bySelector.errors));
  const penIds = (await pens.allDocs()).rows.map((r: { id: string }) => r.id);
  t.same(penIds, [...docs.filter((d) => d.kind === 'pen').map((d) => d._id), 'p99'], 'a pull with a selector brings only the pens');
  const two = new PouchDB(`two-${Date.now()}`, { adapter: 'memory' });
  t.equal((await two.replicate.from(readOnly, { doc_ids: ['p01', 'p99'] })).ok, true);
  t.same((await two.allDocs()).rows.map((r: { id: string }) => r.id), ['p01', 'p99'], 'a pull with doc_ids brings only those');
});

t.test('PouchDB\'s document API over HTTP: attachments, revs_info, latest, allDocs and changes with attachments, design documents', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/files')).status, 201);
  const db = remoteWith(`${node.url}/db/files`, node.adminKey);
  const first = await db.put({ _id: 'readme', title: 'hello' });
  const attached = await db.putAttachment('readme', 'body.txt', first.rev, Buffer.from('hello world'), 'text/plain');
  t.equal(attached.ok, true, 'putAttachment (PUT /db/:db/:doc/:name) was a 404');
  t.equal((await db.getAttachment('readme', 'body.txt')).toString(), 'hello world', 'getAttachment');

  const withData = await db.get('readme', { attachments: true });
  t.equal(withData._attachments['body.txt'].data, Buffer.from('hello world').toString('base64'), 'get with attachments fetches each one');
  const info = await db.get('readme', { revs_info: true });
  t.same(info._revs_info.map((r: { rev: string; status: string }) => [r.rev, r.status]), [[attached.rev, 'available'], [first.rev, 'available']], 'revs_info');
  const [latest] = await db.get('readme', { open_revs: [first.rev], latest: true });
  t.equal(latest.ok._rev, attached.rev, 'open_revs with latest gives the leaf');

  const all = await db.allDocs({ include_docs: true, attachments: true });
  t.equal(all.rows[0].doc._attachments['body.txt'].data, Buffer.from('hello world').toString('base64'), 'allDocs inlines attachments');
  const changes = await db.changes({ include_docs: true, attachments: true });
  t.equal(changes.results[0].doc._attachments['body.txt'].data, Buffer.from('hello world').toString('base64'), 'changes inlines attachments');

  const removed = await db.removeAttachment('readme', 'body.txt', attached.rev);
  t.equal(removed.ok, true, 'removeAttachment');
  t.notOk('_attachments' in (await db.get('readme')), 'the attachment is gone');

  // A PouchDB app with a local pouchdb-find index (a `_design/idx-…` document) syncs both
  // ways: the push was a 500 on the reserved id and failed the replication.
  const app = new PouchDB(`app-${Date.now()}`, { adapter: 'memory' });
  await app.bulkDocs([{ _id: 'n1', tag: 'x' }, { _id: 'n2', tag: 'y' }]);
  await app.createIndex({ index: { fields: ['tag'] } });
  const designIds = (await app.allDocs({ startkey: '_design/', endkey: '_design/\uffff' })).rows.map((r: { id: string }) => r.id);
  t.equal(designIds.length, 1, 'pouchdb-find made a design document locally');
  const pushed = await app.replicate.to(db);
  t.equal(pushed.ok, true, JSON.stringify(pushed.errors));
  t.equal(pushed.doc_write_failures, 0);
  t.equal((await db.get(designIds[0])).language, 'query', 'the design document arrived whole');
  t.same((await db.find({ selector: { tag: { $gte: '' } } })).docs.map((d: { _id: string }) => d._id), ['n1', 'n2'], 'Firkin\'s _find ignores it');
  const back = new PouchDB(`back-${Date.now()}`, { adapter: 'memory' });
  t.equal((await back.replicate.from(db)).ok, true);
  t.equal((await back.find({ selector: { tag: 'y' } })).docs[0]._id, 'n2', 'pulled back, the local index works in PouchDB');
});
