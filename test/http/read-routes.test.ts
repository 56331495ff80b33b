// A read key may call every route that only reads, including the POSTs that carry a query in
// their body (CouchDB's `_find`, `_all_docs` with keys (of a database or a VDB), `_bulk_get`, `_revs_diff`, filtered
// changes), as a CouchDB reader may; it may call nothing that writes. Every POST under a
// database is classified here, so a new one must be placed on one side.
import t from 'tap';
import { request, startTestNode } from '../support/node.js';

/** POSTs that only read: a read key gets past auth. */
const READ_POSTS = [
  'POST /db/:db/_find',
  'POST /db/:db/_explain',
  'POST /db/:db/_all_docs',
  'POST /db/:db/_design_docs',
  'POST /db/:db/_bulk_get',
  'POST /db/:db/_revs_diff',
  'POST /db/:db/_changes',
  'POST /db/:db/_changes/stream',
  'POST /db/:db/_local_docs',
  'POST /vdb/:vdb/_find',
  'POST /vdb/:vdb/_explain',
  'POST /vdb/:vdb/_all_docs',
  'POST /vdb/:vdb/_bulk_get',
  'POST /vdb/:vdb/_revs_diff',
  'POST /vdb/:vdb/_changes',
  'POST /vdb/:vdb/_local_docs',
];

/** POSTs that write (or run admin work): a read key is refused with 403. */
const WRITE_POSTS = [
  'POST /db/:db',
  'POST /db/:db/_bulk_docs',
  'POST /db/:db/_compact',
  'POST /db/:db/_sync_hlc',
  'POST /db/:db/_ensure_full_commit',
  'POST /db/:db/_index',
  'POST /db/:db/_replicate',
  'POST /db/:db/_tier/config',
  'POST /db/:db/_tier/migrate',
  'POST /db/:db/_tier/run_migration',
  'POST /db/:db/:docid/_tier/ttl',
  // A design document's functions: refused for everyone (nothing runs here), a read key first by auth.
  'POST /db/:db/_design/:name/*',
  'POST /vdb/:vdb/_import',
  'POST /vdb/:vdb/_shards/:shard/_split',
  'POST /vdb/:vdb/_shards/:shard/_merge',
  'POST /vdb/:vdb/_bulk_docs',
  'POST /vdb/:vdb/_compact',
  'POST /vdb/:vdb/_index',
  'POST /vdb/:vdb/_ensure_full_commit',
];

const fill = (url: string) => url.replace(':db', 'r').replace(':vdb', 'v').replace(':docid', 'd1').replace(':shard', '0').replace(':name', 'app').replace('*', '_update/u');

t.test('read keys: every read-only POST, and no write', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/r')).status, 201);
  t.equal((await node.request('PUT', '/db/r/d1', { body: { city: 'oslo' } })).status, 201);
  t.equal((await node.request('POST', '/vdb', { body: { name: 'v', shard_count: 2 } })).status, 201);
  t.equal((await node.request('PUT', '/vdb/v/d1', { body: { city: 'oslo' } })).status, 201);
  const reader = (await node.request('POST', '/_keys', { body: { permissions: ['read'] } })).body.key as string;

  const posts = node.node.routes.filter((r) => r.method === 'POST' && /^\/v?db\//.test(r.url)).map((r) => `${r.method} ${r.url}`);
  t.same(posts.filter((p) => !READ_POSTS.includes(p) && !WRITE_POSTS.includes(p)), [], 'every POST under a database is classified here');

  // What a reader asks, with the answers it expects.
  const find = await node.request('POST', '/db/r/_find', { key: reader, body: { selector: { city: 'oslo' } } });
  t.equal(find.status, 200, JSON.stringify(find.body));
  t.same(find.body.docs.map((d: { _id: string }) => d._id), ['d1']);
  t.equal((await node.request('POST', '/db/r/_explain', { key: reader, body: { selector: { city: 'oslo' } } })).status, 200);
  const keys = await node.request('POST', '/db/r/_all_docs', { key: reader, body: { keys: ['d1'] } });
  t.equal(keys.status, 200);
  t.equal(keys.body.rows[0].id, 'd1');
  const bulkGet = await node.request('POST', '/db/r/_bulk_get', { key: reader, body: { docs: [{ id: 'd1' }] } });
  t.equal(bulkGet.status, 200);
  t.equal(bulkGet.body.results[0].docs[0].ok.city, 'oslo');
  const diff = await node.request('POST', '/db/r/_revs_diff', { key: reader, body: { d1: ['9-x'] } });
  t.match(diff.body, { d1: { missing: ['9-x'] } });
  const changes = await node.request('POST', '/db/r/_changes', { key: reader, body: { doc_ids: ['d1'] } });
  t.equal(changes.status, 200);
  t.same(changes.body.results.map((c: { id: string }) => c.id), ['d1']);
  const vfind = await node.request('POST', '/vdb/v/_find', { key: reader, body: { selector: { city: 'oslo' } } });
  t.equal(vfind.status, 200);
  t.same(vfind.body.docs.map((d: { _id: string }) => d._id), ['d1']);
  t.equal((await node.request('POST', '/vdb/v/_explain', { key: reader, body: { selector: { city: 'oslo' } } })).status, 200, "a VDB's _explain with a read key");
  // A VDB is a replication source for a read key too.
  t.equal((await node.request('POST', '/vdb/v/_bulk_get', { key: reader, body: { docs: [{ id: 'd1' }] } })).body.results[0].docs[0].ok.city, 'oslo');
  t.match((await node.request('POST', '/vdb/v/_revs_diff', { key: reader, body: { d1: ['9-x'] } })).body, { d1: { missing: ['9-x'] } });
  t.same((await node.request('POST', '/vdb/v/_changes', { key: reader, body: { doc_ids: ['d1'] } })).body.changes.map((c: { id: string }) => c.id), ['d1']);
  // The checkpoints' listing, by keys in a body: a read.
  for (const base of ['/db/r', '/vdb/v']) {
    const listed = await node.request('POST', `${base}/_local_docs`, { key: reader, body: { keys: ['_local/none'] } });
    t.same([listed.status, listed.body.rows], [200, [{ key: '_local/none', error: 'not_found' }]], `POST ${base}/_local_docs with a read key`);
  }
  // A stream: its status is known from the headers.
  const aborter = new AbortController();
  const stream = await fetch(`${node.url}/db/r/_changes/stream`, { method: 'POST', signal: aborter.signal, headers: { authorization: `Bearer ${reader}`, 'content-type': 'application/json' }, body: '{}' });
  t.equal(stream.status, 200, 'a filtered changes stream');
  aborter.abort();
  await stream.body?.cancel().catch(() => undefined);

  for (const route of WRITE_POSTS) {
    const url = fill(route.slice('POST '.length));
    const r = await request(node.url, 'POST', url, { key: reader, body: {} });
    t.equal(r.status, 403, `${route}: a read key is refused`);
  }
  for (const [method, url] of [['PUT', '/db/r/d2'], ['DELETE', '/db/r/_index/_design/_auto/json/_auto'], ['PUT', '/vdb/v/d2'], ['PUT', '/vdb/v/_local/cp']]) {
    t.equal((await request(node.url, method!, url!, { key: reader, body: method === 'PUT' ? {} : undefined })).status, 403, `${method} ${url}: a read key is refused`);
  }
  t.same((await node.request('GET', '/db/r/_all_docs')).body.rows.map((r: { id: string }) => r.id), ['d1'], 'nothing was written');
});
