// Virtual databases over real HTTP: routing, scatter-gather, changes, import, split, merge.
import { createHash } from 'node:crypto';
import t from 'tap';
import { type TestNode, startTestNode } from '../../support/node.js';
import { checkVdbFeeds } from '../../support/vdb-feeds.js';

async function mkVdb(node: TestNode, body: Record<string, unknown>) {
  return node.request('POST', '/vdb', { body });
}

async function allIds(node: TestNode, vdb: string): Promise<string[]> {
  const res = await node.request('POST', `/vdb/${vdb}/_find`, { body: { where: [], include_docs: false, limit: 100_000 } });
  return res.body.docs.map((d: { _id: string }) => d._id);
}

t.test('VDB lifecycle, routing and reads', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());

  const created = await mkVdb(node, { name: 'users' });
  t.equal(created.status, 201);
  t.match(created.body, { ok: true, name: 'users', shard_count: 4, hash_function: 'phash2', total_docs: 0 });
  t.equal((await mkVdb(node, { name: 'users' })).status, 409);
  for (const bad of [{ name: 'Bad' }, { name: 'x', shard_count: 0 }, { name: 'x', hash_function: 'md5' }, { name: 'x', placement: { replica_factor: 0 } }, {}, { name: 'a'.repeat(60) }]) {
    const res = await mkVdb(node, bad);
    t.equal(res.status, 400, JSON.stringify(bad));
    t.equal(res.body.error, 'bad_request');
  }

  const shards = await node.request('GET', '/vdb/users/_shards');
  t.same(shards.body.ranges, [
    { shard_id: 0, start_hash: 0, end_hash: 1073741823 },
    { shard_id: 1, start_hash: 1073741824, end_hash: 2147483647 },
    { shard_id: 2, start_hash: 2147483648, end_hash: 3221225471 },
    { shard_id: 3, start_hash: 3221225472, end_hash: 4294967295 },
  ]);
  t.match(shards.body.shards[0], { shard_id: 0, primary: 'test-node', replicas: [], status: 'active' });

  // Routing examples from the reference: doc1 -> 3, doc2 -> 2, mydoc -> 0, a -> 1.
  for (const [id, shard] of [['doc1', 3], ['doc2', 2], ['mydoc', 0], ['a', 1]] as const) {
    const put = await node.request('PUT', `/vdb/users/${id}`, { body: { v: id } });
    t.equal(put.status, 201);
    const direct = await node.request('GET', `/db/users_s${shard}/${id}`);
    t.equal(direct.status, 200, `${id} stored in users_s${shard}`);
    t.equal((await node.request('GET', `/vdb/users/${id}`)).body.v, id);
  }
  const doc1 = await node.request('GET', '/vdb/users/doc1');
  t.equal((await node.request('PUT', '/vdb/users/doc1', { body: { v: 2 } })).status, 409, 'update without rev conflicts');
  const upd = await node.request('PUT', '/vdb/users/doc1', { body: { v: 2 }, headers: { 'if-match': doc1.body._rev } });
  t.equal(upd.status, 201);
  t.equal((await node.request('DELETE', '/vdb/users/doc1')).status, 409, 'delete needs a rev');
  t.equal((await node.request('DELETE', `/vdb/users/doc1?rev=${upd.body.rev}`)).status, 200);
  t.equal((await node.request('GET', '/vdb/users/doc1')).status, 404);

  const bulk = await node.request('POST', '/vdb/users/_bulk_docs', { body: { docs: Array.from({ length: 40 }, (_, i) => ({ _id: `u${i}`, n: i, even: i % 2 === 0 })) } });
  t.equal(bulk.status, 201);
  t.same(bulk.body.results.map((r: { id: string; ok: boolean }) => [r.id, r.ok]), Array.from({ length: 40 }, (_, i) => [`u${i}`, true]), 'results in request order');
  const info = await node.request('GET', '/vdb/users');
  t.equal(info.body.total_docs, 43);
  t.equal(info.body.shards.length, 4);
  t.match(info.body.shards[0], { db: 'users_s0' });
  t.ok(info.body.shards.every((s: { doc_count: number }) => s.doc_count > 0), 'documents spread over every shard');

  t.test('scatter-gather _find', async (t) => {
    const res = await node.request('POST', '/vdb/users/_find', { body: { where: [{ path: ['even'], value: true }], order_by: [{ path: ['n'], dir: 'desc' }], limit: 3, offset: 1 } });
    t.equal(res.status, 200);
    t.same(res.body.docs.map((d: { n: number }) => d.n), [36, 34, 32]);
    t.same(res.body.meta, { total: 20, offset: 1, limit: 3 });
    const byId = await node.request('POST', '/vdb/users/_find', { body: { where: [{ path: ['n'], op: '<', value: 3 }] } });
    t.same(byId.body.docs.map((d: { _id: string }) => d._id), ['u0', 'u1', 'u2'], 'default order is _id');
    // Each shard's page must come in the asked order for the merge to pick the right ones.
    const lastIds = await node.request('POST', '/vdb/users/_find', { body: { selector: { even: true }, sort: [{ _id: 'desc' }], fields: ['_id', 'n'], limit: 4 } });
    t.same(lastIds.body.docs, [{ _id: 'u8', n: 8 }, { _id: 'u6', n: 6 }, { _id: 'u4', n: 4 }, { _id: 'u38', n: 38 }], '_id descending (as strings) over the shards, cut to fields');
    const count = await node.request('POST', '/vdb/users/_find', { body: { selector: { even: false }, limit: 0 } });
    t.same(count.body, { docs: [], meta: { total: 20, offset: 0, limit: 0 }, bookmark: 'nil' });
    t.equal((await node.request('POST', '/vdb/users/_find', { body: { where: [{ path: ['n'], op: 'bogus' }] } })).status, 400);
  });

  t.test('_explain: each shard\'s plan for its part of the query', async (t) => {
    const res = await node.request('POST', '/vdb/users/_explain', { body: { selector: { even: true }, sort: [{ n: 'desc' }], limit: 3, skip: 1 } });
    t.equal(res.status, 200, JSON.stringify(res.body).slice(0, 200));
    t.match(res.body, { limit: 3, offset: 1, shard_limit: 4, order_by: [{ path: ['n'], dir: 'desc' }] }, 'each shard is asked for offset + limit');
    t.same(res.body.shards.map((s: { shard_id: number }) => s.shard_id), [0, 1, 2, 3], 'one plan a shard, in shard order');
    for (const s of res.body.shards) t.match(s, { plan: { kind: 'index', scan: 'even = true' }, exact: true }, `shard ${s.shard_id} plans the equality's index`);
    // Each shard counts its own postings: together the even documents (20 of the 40 u*).
    const postings = res.body.shards.reduce((sum: number, s: { plan: { estimated_postings: number } }) => sum + s.plan.estimated_postings, 0);
    t.equal(postings, 20, 'the shards\' estimates add up to the matches');
    t.equal((await node.request('POST', '/vdb/users/_explain', { body: { selector: { n: { $bogus: 1 } } } })).status, 400, 'a bad query is a 400');
    t.equal((await node.request('POST', '/vdb/nope/_explain', { body: {} })).status, 404, 'an unknown VDB is a 404');
  });

  t.test('_all_docs: every shard\'s rows merged by id', async (t) => {
    const live = ['a', 'doc2', 'mydoc', ...Array.from({ length: 40 }, (_, i) => `u${i}`)].sort();
    const ids = (body: { rows: { id?: string; key: string; error?: string }[] }) => body.rows.map((r) => r.error ?? r.id);
    const all = await node.request('GET', '/vdb/users/_all_docs');
    t.equal(all.status, 200);
    t.same([all.body.total_rows, all.body.offset], [43, 0]);
    t.same(ids(all.body), live, 'every live document once, in id order (doc1 is deleted)');
    const page = await node.request('GET', '/vdb/users/_all_docs?descending=true&skip=2&limit=3&include_docs=true');
    t.same(ids(page.body), [...live].reverse().slice(2, 5), 'descending, skip and limit over the merge');
    t.equal(page.body.offset, 2);
    t.equal(page.body.rows[0].doc.n, Number(page.body.rows[0].id.slice(1)), 'include_docs: the document');
    t.equal(page.body.rows[0].doc._rev, page.body.rows[0].value.rev);
    const range = await node.request('GET', '/vdb/users/_all_docs?startkey=%22u1%22&endkey=%22u13%22&inclusive_end=false');
    t.same(ids(range.body), ['u1', 'u10', 'u11', 'u12'], 'startkey to endkey, the end excluded');
    const byKeys = await node.request('GET', `/vdb/users/_all_docs?include_docs=true&keys=${encodeURIComponent(JSON.stringify(['u5', 'doc1', 'nope']))}`);
    t.same(byKeys.body.rows.map((r: { key: string; error?: string; value?: { deleted?: boolean }; doc?: unknown }) => [r.key, r.error ?? (r.value?.deleted === true ? 'deleted' : 'live'), r.doc === null ? null : typeof r.doc]), [
      ['u5', 'live', 'object'],
      ['doc1', 'deleted', null],
      ['nope', 'not_found', 'undefined'],
    ], 'keys: in their order, a deleted one with its tombstone revision, a missing one not_found');
    const posted = await node.request('POST', '/vdb/users/_all_docs', { body: { keys: ['mydoc', 'a'] } });
    t.same(ids(posted.body), ['mydoc', 'a'], 'POST with keys');
    t.equal((await node.request('GET', '/vdb/users/_all_docs?attachments=true&include_docs=true')).status, 400, 'attachments=true is refused, not ignored');
    t.equal((await node.request('GET', '/vdb/users/_all_docs?keys=nope')).status, 400, 'keys must be JSON');
    t.equal((await node.request('GET', '/vdb/users/_all_docs?limit=-1')).status, 400);
    t.equal((await node.request('GET', '/vdb/nothere/_all_docs')).status, 404);
    const other = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['elsewhere'] } })).body.key as string;
    t.equal((await node.request('GET', '/vdb/users/_all_docs', { key: other })).status, 403, "another database's key");
  });

  t.test('changes: merged by sequence; paging by last_seq neither skips nor repeats', async (t) => {
    const all = await node.request('GET', '/vdb/users/_changes?since=first&limit=1000');
    t.equal(all.status, 200);
    const seqs = all.body.changes.map((c: { seq: string }) => c.seq);
    t.equal(new Set(all.body.changes.map((c: { id: string }) => c.id)).size, all.body.changes.length, 'one entry per document');
    t.equal(all.body.changes.length, 44, '43 live + 1 deleted');
    t.ok(all.body.changes.some((c: { id: string; deleted: boolean }) => c.id === 'doc1' && c.deleted));
    const paged: string[] = [];
    let since = 'first';
    for (let i = 0; i < 100; i++) {
      const page = await node.request('GET', `/vdb/users/_changes?since=${encodeURIComponent(since)}&limit=7`);
      paged.push(...page.body.changes.map((c: { seq: string }) => c.seq));
      if (page.body.changes.length === 0) break;
      since = page.body.last_seq;
    }
    t.same(paged, seqs, 'pages of 7 concatenate to the whole feed');
    const now = await node.request('GET', '/vdb/users/_changes?since=now');
    t.same(now.body.changes, []);
    t.equal((await node.request('GET', '/vdb/users/_changes?since=garbage')).status, 400);
  });

  t.test('import with each on_conflict', async (t) => {
    t.equal((await node.request('PUT', '/db/legacy')).status, 201);
    await node.request('POST', '/db/legacy/_bulk_docs', { body: { docs: [{ _id: 'u1', n: 100, extra: true }, { _id: 'new1', n: 1, kind: 'x' }, { _id: 'new2', n: 2, kind: 'y' }] } });
    const skip = await node.request('POST', '/vdb/users/_import', { body: { source_db: 'legacy' } });
    t.match(skip.body, { docs_read: 3, docs_written: 2, docs_skipped: 1, errors: 0, status: 'completed' });
    t.type(skip.body.started_at, 'number');
    t.equal((await node.request('GET', '/vdb/users/u1')).body.n, 1, 'skip left the existing doc');
    const merge = await node.request('POST', '/vdb/users/_import', { body: { source_db: 'legacy', on_conflict: 'merge', filter: { where: [{ path: ['n'], value: 100 }] }, batch_size: 1 } });
    t.match(merge.body, { docs_read: 3, docs_written: 1, docs_skipped: 2 });
    t.match((await node.request('GET', '/vdb/users/u1')).body, { n: 100, extra: true, even: false }, 'merge: shallow, source wins');
    const over = await node.request('POST', '/vdb/users/_import', { body: { source_db: 'legacy', on_conflict: 'overwrite', filter: { selector: { kind: 'x' } } } });
    t.match(over.body, { docs_written: 1, docs_skipped: 2 });
    t.equal((await node.request('POST', '/vdb/users/_import', { body: { source_db: 'nope' } })).status, 404);
    t.equal((await node.request('POST', '/vdb/users/_import', { body: { source_db: 'legacy', on_conflict: 'wat' } })).status, 400);
    // A key that may write the VDB but not read the source cannot copy the source in.
    const vdbWriter = (await node.request('POST', '/_keys', { body: { permissions: ['write'], databases: ['users'] } })).body.key as string;
    const refused = await node.request('POST', '/vdb/users/_import', { key: vdbWriter, body: { source_db: 'legacy' } });
    t.equal(refused.status, 403, refused.text);
    t.match(refused.body.message, /read permission on database "legacy"/);
    const both = (await node.request('POST', '/_keys', { body: { permissions: ['write'], databases: ['users', 'legacy'] } })).body.key as string;
    t.equal((await node.request('POST', '/vdb/users/_import', { key: both, body: { source_db: 'legacy' } })).status, 200, 'with read on the source it may');
  });

  t.test('missing VDB and replication status', async (t) => {
    t.equal((await node.request('GET', '/vdb/nope')).status, 404);
    t.equal((await node.request('GET', '/vdb/nope/x')).status, 404);
    const rep = await node.request('GET', '/vdb/users/_replication');
    t.match(rep.body, { vdb_name: 'users', replica_factor: 1, shard_count: 4 });
    t.same(rep.body.shards[0], { shard_id: 0, replication_tasks: [] });
    const list = await node.request('GET', '/vdb');
    t.same(list.body.vdbs.map((v: { name: string }) => v.name), ['users']);
  });

  t.test('delete drops the shard databases', async (t) => {
    await mkVdb(node, { name: 'tmp', shard_count: 2, hash_function: 'xxhash' });
    t.equal((await node.request('GET', '/db/tmp_s1')).status, 200);
    t.equal((await node.request('DELETE', '/vdb/tmp')).status, 200);
    t.equal((await node.request('GET', '/db/tmp_s1')).status, 404);
    t.equal((await node.request('GET', '/vdb/tmp')).status, 404);
  });

  t.test('creating a VDB needs admin on its name', async (t) => {
    const keyOf = async (permissions: string[], databases: string[]) => (await node.request('POST', '/_keys', { body: { permissions, databases } })).body.key as string;
    const writer = await keyOf(['write'], ['mine']);
    t.equal((await node.request('POST', '/vdb', { key: writer, body: { name: 'mine', shard_count: 2 } })).status, 403, 'a writer may not');
    const admin = await keyOf(['admin'], ['mine']);
    const other = await node.request('POST', '/vdb', { key: admin, body: { name: 'notmine', shard_count: 2 } });
    t.equal(other.status, 403, 'nor may the admin of another name');
    t.match(other.body.message, /admin permission on database "notmine"/);
    t.equal((await node.request('POST', '/vdb', { key: admin, body: { name: 'mine', shard_count: 2 } })).status, 201, 'its own name it may create');
    t.equal((await node.request('DELETE', '/vdb/mine', { key: admin })).status, 200, 'and delete');
    t.equal((await node.request('POST', '/vdb', { key: writer, body: { name: 'x' } })).status, 403);
  });
});

t.test('attachments of VDB documents: the routes of /db, routed by the id', async (t) => {
  const node = await startTestNode({ SERVICE_ATTACHMENT_MAX_BYTES: String(1024 * 1024) });
  t.teardown(() => node.close());
  await mkVdb(node, { name: 'files' });
  const put = (path: string, body: Buffer | string, headers: Record<string, string> = {}) => node.request('PUT', path, { body, raw: true, headers });
  const bytes = async (path: string) => {
    const r = await fetch(`${node.url}${path}`, { headers: { authorization: `Bearer ${node.adminKey}` } });
    return { status: r.status, headers: r.headers, data: Buffer.from(await r.arrayBuffer()) };
  };
  const sha = (b: Buffer) => `sha256-${createHash('sha256').update(b).digest('hex')}`;

  // On a missing document: creates it, in the shard its id routes to (mydoc -> shard 0).
  const png = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) % 256));
  const created = await put('/vdb/files/mydoc/pic.png', png, { 'content-type': 'image/png' });
  t.equal(created.status, 201);
  t.equal(created.headers.get('etag'), `"${created.body.rev}"`);
  t.match(created.body, { ok: true, id: 'mydoc', rev: /^1-/, name: 'pic.png', content_type: 'image/png', length: png.length, digest: sha(png) });
  const got = await bytes('/vdb/files/mydoc/pic.png');
  t.equal(got.status, 200);
  t.ok(got.data.equals(png), 'content round-trips (several chunks)');
  t.equal(got.headers.get('content-type'), 'image/png');
  t.equal(got.headers.get('content-length'), String(png.length));
  t.equal(got.headers.get('etag'), `"${sha(png)}"`);
  t.ok((await bytes('/db/files_s0/mydoc/_attachments/pic.png')).data.equals(png), 'stored in the owning shard database');
  const head = await fetch(`${node.url}/vdb/files/mydoc/pic.png`, { method: 'HEAD', headers: { authorization: `Bearer ${node.adminKey}` } });
  t.same([head.status, head.headers.get('content-length')], [200, String(png.length)], 'HEAD answers the headers');
  const doc = await node.request('GET', '/vdb/files/mydoc');
  t.same(doc.body._attachments, { 'pic.png': { content_type: 'image/png', digest: sha(png), length: png.length, revpos: 1, stub: true } });

  // On an existing document: needs its current rev (If-Match or ?rev=); the /_attachments/ form works too.
  t.same([(await put('/vdb/files/mydoc/notes.txt', 'hi')).status, (await put('/vdb/files/mydoc/notes.txt', 'hi')).body.error], [409, 'conflict']);
  t.equal((await put('/vdb/files/mydoc/notes.txt', 'hi', { 'if-match': `1-${'0'.repeat(64)}` })).status, 409, 'a stale rev conflicts');
  const second = await put(`/vdb/files/mydoc/_attachments/notes.txt?rev=${created.body.rev}`, 'hello', { 'content-type': 'text/plain; charset=utf-8' });
  t.equal(second.status, 201);
  t.match(second.body.rev, /^2-/);
  const txt = await node.request('GET', '/vdb/files/mydoc/notes.txt');
  t.same([txt.text, txt.headers.get('content-type')], ['hello', 'text/plain; charset=utf-8']);
  t.equal((await node.request('GET', `/vdb/files/mydoc/_attachments/notes.txt?rev=${created.body.rev}`)).status, 404, 'not in the older revision');
  t.equal((await bytes(`/vdb/files/mydoc/pic.png?rev=${created.body.rev}`)).status, 200, '?rev= reads an older revision');

  // CouchDB's read options, as on a database.
  const inline = await node.request('GET', '/vdb/files/mydoc?attachments=true&revs_info=true');
  t.equal(inline.body._attachments['notes.txt'].data, Buffer.from('hello').toString('base64'), 'attachments=true inlines each one');
  t.equal(Buffer.from(inline.body._attachments['pic.png'].data, 'base64').length, png.length);
  t.same(inline.body._revs_info.map((i: { status: string }) => i.status), ['available', 'available'], 'revs_info');
  t.equal((await node.request('GET', `/vdb/files/mydoc?rev=${created.body.rev}&latest=true`)).body._rev, second.body.rev, 'latest: the leaf from an older rev');
  t.match((await node.request('GET', '/vdb/files/mydoc?meta=true')).body, { _revs_info: [{ rev: second.body.rev }, { rev: created.body.rev }] });

  // Delete: needs the rev, 404 for an unknown name, makes a new revision.
  t.equal((await node.request('DELETE', '/vdb/files/mydoc/notes.txt')).status, 409);
  const missing = await node.request('DELETE', `/vdb/files/mydoc/nope.txt?rev=${second.body.rev}`);
  t.same([missing.status, missing.body], [404, { error: 'not_found', message: 'attachment "nope.txt" of "mydoc" not found' }]);
  const del = await node.request('DELETE', '/vdb/files/mydoc/notes.txt', { headers: { 'if-match': second.body.rev } });
  t.equal(del.status, 200);
  t.match(del.body, { ok: true, id: 'mydoc', rev: /^3-/ });
  t.equal(del.headers.get('etag'), `"${del.body.rev}"`);
  t.equal((await node.request('GET', '/vdb/files/mydoc/notes.txt')).status, 404);
  t.equal((await node.request('GET', '/vdb/files/nodoc/pic.png')).status, 404, 'an unknown document is a 404');
  t.equal((await node.request('GET', '/vdb/nope/mydoc/pic.png')).status, 404, 'an unknown VDB is a 404');

  // Too large: 413, nothing stored; bad names and ids: 400.
  const tooBig = await put('/vdb/files/big/b.bin', Buffer.alloc(1024 * 1024 + 1, 1));
  t.match([tooBig.status, tooBig.body], [413, { error: 'too_large', message: /SERVICE_ATTACHMENT_MAX_BYTES/ }]);
  t.equal((await node.request('GET', '/vdb/files/big')).status, 404);
  t.equal((await put('/vdb/files/mydoc/a%5Cb', 'x')).status, 400);
  t.equal((await put('/vdb/files/_hidden/a', 'x')).status, 400);

  // A read-only shard refuses attachment writes too.
  await node.request('PUT', '/vdb/files/_shards/0/_status', { body: { status: 'readonly' } });
  t.equal((await put(`/vdb/files/mydoc/more.txt?rev=${del.body.rev}`, 'x')).status, 403);
});

t.test('a read-only shard refuses writes and keeps serving reads', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await mkVdb(node, { name: 'ro' });
  // Routing (reference examples): mydoc -> shard 0, a -> shard 1.
  t.equal((await node.request('PUT', '/vdb/ro/mydoc', { body: { v: 1 } })).status, 201);
  const set = await node.request('PUT', '/vdb/ro/_shards/0/_status', { body: { status: 'readonly' } });
  t.same([set.status, set.body], [200, { shard_id: 0, status: 'readonly' }]);
  t.match((await node.request('GET', '/vdb/ro/_shards')).body.shards[0], { shard_id: 0, status: 'readonly' });

  const doc = await node.request('GET', '/vdb/ro/mydoc');
  t.equal(doc.body.v, 1, 'reads go on');
  const put = await node.request('PUT', '/vdb/ro/mydoc', { body: { v: 2 }, headers: { 'if-match': doc.body._rev } });
  t.same([put.status, put.body.error], [403, 'forbidden'], 'an update routed to it is refused');
  t.match(put.body.message, /shard 0 .* is read-only/);
  t.equal((await node.request('DELETE', `/vdb/ro/mydoc?rev=${doc.body._rev}`)).status, 403, 'so is a delete');
  t.equal((await node.request('PUT', '/vdb/ro/a', { body: { v: 1 } })).status, 201, 'other shards take writes');
  const bulk = await node.request('POST', '/vdb/ro/_bulk_docs', { body: { docs: [{ _id: 'mydoc', v: 3 }, { _id: 'doc1', v: 3 }] } });
  t.match(bulk.body.results, [{ ok: false, id: 'mydoc', error: 'forbidden' }, { ok: true, id: 'doc1' }], 'bulk: per document');
  const find = await node.request('POST', '/vdb/ro/_find', { body: { where: [{ path: ['v'], value: 1 }] } });
  t.equal(find.body.meta.total, 2, '_find still reads the read-only shard');
  t.equal((await node.request('POST', '/vdb/ro/_shards/0/_split', { body: {} })).status, 409, 'a read-only shard does not split');

  for (const bad of [{ status: 'splitting' }, {}, { status: 'active', x: 1 }]) {
    t.equal((await node.request('PUT', '/vdb/ro/_shards/0/_status', { body: bad })).status, 400, JSON.stringify(bad));
  }
  t.equal((await node.request('PUT', '/vdb/ro/_shards/9/_status', { body: { status: 'readonly' } })).status, 404);

  // The status survives a restart, and `active` lifts it.
  await node.restart();
  t.match((await node.request('GET', '/vdb/ro/_shards')).body.shards[0], { status: 'readonly' });
  t.equal((await node.request('PUT', '/vdb/ro/_shards/0/_status', { body: { status: 'active' } })).status, 200);
  const again = await node.request('GET', '/vdb/ro/mydoc');
  t.equal((await node.request('PUT', '/vdb/ro/mydoc', { body: { v: 2 }, headers: { 'if-match': again.body._rev } })).status, 201);
});

t.test('split and merge under concurrent writes: every acknowledged write present once, with history', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await mkVdb(node, { name: 'moving', shard_count: 2 });
  const docs = Array.from({ length: 600 }, (_, i) => ({ _id: `d${i}`, i }));
  await node.request('POST', '/vdb/moving/_bulk_docs', { body: { docs } });
  // Give some documents a second revision so history must travel.
  const d7 = await node.request('GET', '/vdb/moving/d7');
  const d7v2 = await node.request('PUT', '/vdb/moving/d7', { body: { i: 7, v: 2 }, headers: { 'if-match': d7.body._rev } });

  const acked = new Set(docs.map((d) => d._id));
  let writing = true;
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      const res = await node.request('PUT', `/vdb/moving/w${n}`, { body: { n } });
      if (res.status === 201) acked.add(`w${n}`);
    }
  })();
  // A lister beside the writer: while a shard holds copies it does not own yet (or any more),
  // `_all_docs` keeps each id once.
  const twice: string[] = [];
  let listings = 0;
  const lister = (async () => {
    while (writing) {
      const rows = (await node.request('GET', '/vdb/moving/_all_docs')).body.rows as { id: string }[];
      listings++;
      const seen = new Set<string>();
      for (const r of rows) if (seen.has(r.id)) twice.push(r.id);
      else seen.add(r.id);
    }
  })();
  // Replication checkpoints (`_local`) at their second revision, and one written all along:
  // a split or merge carries them as they are, so a checkpointer naming its last revision is
  // never refused and a replication through the VDB carries on from its checkpoint.
  const cps = Array.from({ length: 24 }, (_, i) => `cp${i}`);
  for (const id of cps) {
    await node.request('PUT', `/vdb/moving/_local/${id}`, { body: { seq: 1 } });
    t.equal((await node.request('PUT', `/vdb/moving/_local/${id}`, { body: { seq: 2, _rev: '0-1' } })).status, 201);
  }
  const inShard0: string[] = [];
  for (const id of cps) if ((await node.request('GET', `/db/moving_s0/_local/${id}`)).status === 200) inShard0.push(id);
  const checkpointFaults: string[] = [];
  let checkpointRev: string | undefined;
  const checkpointer = (async () => {
    for (let n = 0; writing; n++) {
      const res = await node.request('PUT', '/vdb/moving/_local/live', { body: { n, ...(checkpointRev === undefined ? {} : { _rev: checkpointRev }) } });
      if (res.status === 201) checkpointRev = res.body.rev;
      else checkpointFaults.push(`${res.status} ${JSON.stringify(res.body)}`);
    }
  })();
  const split = await node.request('POST', '/vdb/moving/_shards/0/_split', { body: { batch_size: 50 } });
  t.equal(split.status, 200);
  const movedCps = [];
  for (const id of cps) {
    t.same((await node.request('GET', `/vdb/moving/_local/${id}`)).body, { seq: 2, _id: `_local/${id}`, _rev: '0-2' }, `${id} kept its revision through the split`);
    if (inShard0.includes(id) && (await node.request('GET', `/db/moving_s0/_local/${id}`)).status === 404) movedCps.push(id);
  }
  const inTarget = [];
  for (const id of cps) if ((await node.request('GET', `/db/moving_s2/_local/${id}`)).status === 200) inTarget.push(id);
  t.ok(movedCps.length > 0 && movedCps.length < inShard0.length, `the split moved some of shard 0's checkpoints (${movedCps.length} of ${inShard0.length})`);
  t.same(inTarget, movedCps, 'into the new shard, and left none behind');
  t.match(split.body, { ok: true, new_shard_id: 2 });
  const reads = await node.request('GET', '/vdb/moving/d7?revs=true');
  t.equal(reads.body._rev, d7v2.body.rev, 'the second revision survived the move');
  t.equal(reads.body._revisions.ids.length, 2, 'with its history');

  const ranges = (await node.request('GET', '/vdb/moving/_shards')).body.ranges;
  t.same(ranges, [
    { shard_id: 0, start_hash: 0, end_hash: 1073741823 },
    { shard_id: 2, start_hash: 1073741824, end_hash: 2147483647 },
    { shard_id: 1, start_hash: 2147483648, end_hash: 4294967295 },
  ]);
  t.equal((await node.request('POST', '/vdb/moving/_shards/0/_merge', { body: { target_shard: 1 } })).status, 409, 'not adjacent');
  t.match((await node.request('POST', '/vdb/moving/_shards/0/_merge', { body: { target_shard: 1 } })).body.message, /not adjacent/);
  t.equal((await node.request('POST', '/vdb/moving/_shards/9/_split')).status, 404);
  const merge = await node.request('POST', '/vdb/moving/_shards/2/_merge', { body: { target_shard: 0 } });
  t.equal(merge.status, 200);
  t.match(merge.body, { ok: true, shard_id: 2, target_shard: 0 });
  writing = false;
  await writer;
  await lister;
  await checkpointer;
  t.same(twice, [], `no listing during the split and the merge showed an id twice (${listings} listings)`);
  t.same(checkpointFaults, [], `every checkpoint write during the split and the merge answered 201 (at ${checkpointRev})`);
  for (const id of cps) t.equal((await node.request('GET', `/vdb/moving/_local/${id}`)).body._rev, '0-2', `${id} kept its revision through the merge`);
  t.equal((await node.request('PUT', `/vdb/moving/_local/${movedCps[0]}`, { body: { seq: 3, _rev: '0-2' } })).status, 201, 'a checkpointer naming its revision goes on');
  const listed = (await node.request('GET', '/vdb/moving/_local_docs')).body;
  t.same(listed.rows.map((r: { key: string }) => r.key), [...cps, 'live'].map((id) => `_local/${id}`).sort(), '_local_docs lists every checkpoint once, in id order, across the shards');
  t.same(listed.rows.find((r: { key: string }) => r.key === '_local/live').value, { rev: checkpointRev });

  t.equal((await node.request('GET', '/db/moving_s2')).status, 404, 'the merged shard database is gone');
  const ids = await allIds(node, 'moving');
  t.equal(ids.length, new Set(ids).size, 'no document appears twice');
  t.same(new Set(ids), acked, 'every acknowledged write is present');
  for (const id of ['d0', 'd7', 'd599', 'w0']) t.equal((await node.request('GET', `/vdb/moving/${id}`)).status, 200, id);
  const changes = await node.request('GET', '/vdb/moving/_changes?limit=100000');
  const live = changes.body.changes.filter((c: { deleted: boolean }) => !c.deleted).map((c: { id: string }) => c.id);
  t.equal(live.length, acked.size, 'the changes feed lists each document once');
  const info = await node.request('GET', '/vdb/moving');
  t.equal(info.body.shard_count, 2);
  t.equal(info.body.total_docs, acked.size);
});

t.test('a node restarted during a split rolls back or finishes it', async (t) => {
  const { spawnTestNode } = await import('../../support/process.js');
  const { request, tempDir, TEST_ADMIN_KEY } = await import('../../support/node.js');
  const dataDir = tempDir();
  let child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir });
  const call = (method: string, path: string, body?: unknown) => request(child.url, method, path, { body, key: TEST_ADMIN_KEY });
  await call('POST', '/vdb', { name: 'crash', shard_count: 1 });
  const docs = Array.from({ length: 2000 }, (_, i) => ({ _id: `c${i}`, i }));
  for (let i = 0; i < docs.length; i += 500) t.equal((await call('POST', '/vdb/crash/_bulk_docs', { docs: docs.slice(i, i + 500) })).status, 201);
  // Checkpoints over the hash space: wherever the crash leaves them, each is found once, at its revision.
  const cps = Array.from({ length: 12 }, (_, i) => `cp${i}`);
  for (const id of cps) t.equal((await call('PUT', `/vdb/crash/_local/${id}`, { n: 1 })).status, 201);
  const splitting = call('POST', '/vdb/crash/_shards/0/_split', { batch_size: 10 }).catch(() => undefined);
  const { waitFor } = await import('../../support/wait.js');
  await waitFor(() => child.output().includes('rebalance progress'), { timeoutMs: 20_000, what: 'the split to start copying' });
  await child.kill9();
  await splitting;
  child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir });
  t.teardown(() => child.stop());
  const shards = (await call('GET', '/vdb/crash/_shards')).body;
  t.ok(shards.shards.every((s: { status: string }) => s.status === 'active'), 'no shard left mid-move');
  const found = await call('POST', '/vdb/crash/_find', { where: [], include_docs: false, limit: 100_000 });
  t.equal(found.body.meta.total, 2000, 'every document exactly once');
  t.equal(new Set(found.body.docs.map((d: { _id: string }) => d._id)).size, 2000);
  const listedCps = async () => ((await call('GET', '/vdb/crash/_local_docs')).body.rows as { key: string; value: { rev: string } }[]).map((r) => `${r.key} ${r.value.rev}`);
  t.same(await listedCps(), cps.map((id) => `_local/${id} 0-1`).sort(), 'every checkpoint once, at its revision');
  t.equal((await call('POST', '/vdb/crash/_shards/0/_split', {})).status, 200, 'a new split works after recovery');
  t.equal((await call('POST', '/vdb/crash/_find', { where: [], limit: 0 })).body.meta.total, 2000);
  t.same(await listedCps(), cps.map((id) => `_local/${id} 0-1`).sort(), 'and after it');
  for (const id of cps) t.equal((await call('GET', `/vdb/crash/_local/${id}`)).body._rev, '0-1', `${id} read where it routes`);
});

t.test('VDB long-poll and event-stream feeds', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await mkVdb(node, { name: 'fed' })).status, 201);
  const call = (m: string, p: string, o?: Parameters<TestNode['request']>[2]) => node.request(m, p, o);
  await checkVdbFeeds(t, 'fed', { call, url: node.url, key: node.adminKey }, call);
});

t.test("a VDB feed's documents with conflicts=true carry _conflicts, as a database's (PouchDB's changes({include_docs, conflicts}))", async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await mkVdb(node, { name: 'conf', shard_count: 3 })).status, 201);
  await node.request('POST', '/vdb/conf/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'c', _rev: '1-aaaa', side: 'a' }, { _id: 'c', _rev: '1-bbbb', side: 'b' }] } });
  await node.request('PUT', '/vdb/conf/plain', { body: { x: 1 } });
  const docsOf = (body: { changes: { id: string; doc: Record<string, unknown> }[] }) => Object.fromEntries(body.changes.map((c) => [c.id, c.doc]));
  const withConflicts = docsOf((await node.request('GET', '/vdb/conf/_changes?include_docs=true&conflicts=true')).body);
  t.same(withConflicts.c!._conflicts, ['1-aaaa'], 'the losing leaf');
  t.notOk('_conflicts' in withConflicts.plain!, 'none on a document without conflicts');
  t.notOk('_conflicts' in docsOf((await node.request('GET', '/vdb/conf/_changes?include_docs=true')).body).c!, 'none unless asked');
  const couch = await node.request('GET', '/vdb/conf/_changes?include_docs=true&conflicts=true&style=all_docs');
  t.same(couch.body.results.find((r: { id: string }) => r.id === 'c').doc._conflicts, ['1-aaaa'], "in CouchDB's shape too");
  const bad = await node.request('GET', '/vdb/conf/_changes?include_docs=true&attachments=true');
  t.same([bad.status, bad.body.error], [400, 'bad_request'], 'attachments=true: 400, as on the listing');
});
