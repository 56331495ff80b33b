// Databases and single documents over real HTTP: lifecycle, revisions, If-Match, conflicts,
// tombstones, replicated branches, and every error with its body.
import { decode, encode } from 'cbor-x';
import t from 'tap';
import { compactAndWait } from '../support/compact.js';
import { bulkEdits } from '../../src/docdb/engine.js';
import { startTestNode } from '../support/node.js';
import { startClusterTestNode } from '../support/one-node-cluster.js';

const REV = /^\d+-[0-9a-f]{64}$/;

t.test('databases', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());

  const created = await node.request('PUT', '/db/alpha');
  t.equal(created.status, 201);
  t.same(created.body, { ok: true, db_name: 'alpha' });
  t.ok(created.headers.get('x-service-hlc'), 'every reply carries the HLC');

  const again = await node.request('PUT', '/db/alpha');
  t.equal(again.status, 409);
  t.same(again.body, { error: 'conflict', message: 'database "alpha" already exists' });

  for (const bad of ['Alpha', '1db', '_sys', 'a%20b', 'a'.repeat(64), 'a.b']) {
    const r = await node.request('PUT', `/db/${bad}`);
    t.equal(r.status, 400, `name ${bad} is rejected`);
    t.equal(r.body.error, 'bad_request');
    t.match(r.body.message, /invalid database name/);
  }
  for (const good of ['a', 'my_db', 'my-db', 'x$(y)+z', 'a'.repeat(63), 'a%2Fb']) {
    const r = await node.request('PUT', `/db/${good}`);
    t.equal(r.status, 201, `name ${good} is accepted`);
  }

  const info = await node.request('GET', '/db/alpha');
  t.equal(info.status, 200);
  t.match(info.body, { db_name: 'alpha', doc_count: 0, doc_del_count: 0, update_seq: '{timestamp,0,0}', disk_size: 0, revs_limit: 1000 });
  t.type(info.body.instance_start_time, 'string');

  const missing = await node.request('GET', '/db/nope');
  t.equal(missing.status, 404);
  t.same(missing.body, { error: 'not_found', message: 'database "nope" does not exist' });
  for (const [method, path] of [
    ['GET', '/db/nope/doc'],
    ['PUT', '/db/nope/doc'],
    ['POST', '/db/nope/_bulk_docs'],
    ['GET', '/db/nope/_all_docs'],
    ['GET', '/db/nope/_changes'],
    ['GET', '/db/nope/_changes/stream'],
    ['POST', '/db/nope/_sync_hlc'],
    ['GET', '/db/nope/doc/_attachments/a'],
    ['DELETE', '/db/nope'],
  ] as const) {
    const body = method === 'PUT' || method === 'POST' ? (path.endsWith('_bulk_docs') ? { docs: [] } : path.endsWith('_sync_hlc') ? { hlc: '{timestamp,1,0}' } : {}) : undefined;
    const r = await node.request(method, path, { body });
    t.equal(r.status, 404, `${method} ${path} on a missing database`);
    t.equal(r.body.error, 'not_found');
  }

  // POST without a body creates the database (the spec's example), with a body a document.
  const posted = await node.request('POST', '/db/beta');
  t.equal(posted.status, 201);
  const doc = await node.request('POST', '/db/beta', { body: { hello: 'world' } });
  t.equal(doc.status, 201);
  t.match(doc.body, { ok: true, id: /^[0-9a-f]{32}$/, rev: /^1-/ });
  const withId = await node.request('POST', '/db/beta', { body: { _id: 'chosen', v: 1 } });
  t.equal(withId.body.id, 'chosen');

  // Everything of a dropped database is gone; the name can be reused from scratch.
  await node.request('PUT', '/db/beta/d1/_attachments/a.txt', { body: 'x', raw: true, headers: { 'content-type': 'text/plain' } });
  const dropped = await node.request('DELETE', '/db/beta');
  t.equal(dropped.status, 200);
  t.same(dropped.body, { ok: true });
  t.equal((await node.request('GET', '/db/beta')).status, 404);
  t.equal((await node.request('PUT', '/db/beta')).status, 201);
  const fresh = await node.request('GET', '/db/beta');
  t.match(fresh.body, { doc_count: 0, doc_del_count: 0, disk_size: 0 });
  t.same((await node.request('GET', '/db/beta/_changes')).body.results, []);
  t.equal((await node.request('GET', '/db/beta/d1/_attachments/a.txt')).status, 404);

  const health = await node.request('GET', '/health');
  t.equal(health.status, 200);
  t.match(health.body.docdb, { status: 'ok', databases: [{ name: 'a', status: 'ok', doc_count: 0 }] });
});

t.test('documents and revisions', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/d');

  const c = await node.request('PUT', '/db/d/doc1', { body: { name: 'Alice', n: 1 } });
  t.equal(c.status, 201);
  t.match(c.body, { ok: true, id: 'doc1', rev: REV });
  t.equal(c.headers.get('etag'), `"${c.body.rev}"`);
  const rev1 = c.body.rev as string;

  const got = await node.request('GET', '/db/d/doc1');
  t.same(got.body, { _id: 'doc1', id: 'doc1', _rev: rev1, name: 'Alice', n: 1 });
  t.equal(got.headers.get('etag'), `"${rev1}"`);

  // Same edit of the same parent = same rev (deterministic): a second database agrees.
  await node.request('PUT', '/db/d2');
  const twin = await node.request('PUT', '/db/d2/doc1', { body: { n: 1, name: 'Alice' } });
  t.equal(twin.body.rev, rev1, 'key order does not change the rev');

  const noRev = await node.request('PUT', '/db/d/doc1', { body: { n: 2 } });
  t.equal(noRev.status, 409);
  t.equal(noRev.body.error, 'conflict');
  t.match(noRev.body.message, /send its current revision/);

  const stale = await node.request('PUT', '/db/d/doc1', { body: { n: 2, _rev: '1-' + 'f'.repeat(64) } });
  t.equal(stale.status, 409);

  const viaIfMatch = await node.request('PUT', '/db/d/doc1', { body: { n: 2 }, headers: { 'if-match': `"${rev1}"` } });
  t.equal(viaIfMatch.status, 201);
  const rev2 = viaIfMatch.body.rev as string;
  t.match(rev2, /^2-/);

  const staleAgain = await node.request('PUT', '/db/d/doc1', { body: { n: 3 }, headers: { 'if-match': rev1 } });
  t.equal(staleAgain.status, 409, 'If-Match is honoured (the original ignored it)');

  const differ = await node.request('PUT', `/db/d/doc1?rev=${rev2}`, { body: { n: 3, _rev: rev1 } });
  t.equal(differ.status, 400);
  t.match(differ.body, { error: 'bad_request', message: /conflicting revisions/ });

  const malformed = await node.request('PUT', '/db/d/doc1', { body: { n: 3 }, headers: { 'if-match': 'nope' } });
  t.equal(malformed.status, 400);

  const viaQuery = await node.request('PUT', `/db/d/doc1?rev=${rev2}`, { body: { n: 3 } });
  const rev3 = viaQuery.body.rev as string;
  const viaBody = await node.request('PUT', '/db/d/doc1', { body: { n: 4, _rev: rev3 } });
  const rev4 = viaBody.body.rev as string;
  t.match(rev4, /^4-/);

  const full = await node.request('GET', '/db/d/doc1?revs=true&conflicts=true');
  t.equal(full.body._rev, rev4);
  t.same(full.body._revisions, { start: 4, ids: [rev4, rev3, rev2, rev1].map((r) => r.slice(2)) });
  t.notOk('_conflicts' in full.body, 'updating four times leaves no phantom conflict');

  const oldRev = await node.request('GET', `/db/d/doc1?rev=${rev1}`);
  t.match(oldRev.body, { _rev: rev1, n: 1 }, 'an older body is kept until compaction');
  await compactAndWait(node, 'd');
  const compacted = await node.request('GET', `/db/d/doc1?rev=${rev1}`);
  t.equal(compacted.status, 404, 'after compaction only leaf bodies are kept');
  t.match(compacted.body.message, /not kept/);
  const unknownRev = await node.request('GET', `/db/d/doc1?rev=9-${'a'.repeat(64)}`);
  t.equal(unknownRev.status, 404);

  for (const id of ['_design', '_x']) {
    const r = await node.request('PUT', `/db/d/${id}`, { body: {} });
    t.equal(r.status, 400, `reserved id ${id}`);
    t.match(r.body.message, /reserved/);
  }
  for (const body of [[1, 2], 'text', null]) {
    const r = await node.request('PUT', '/db/d/bad', { body });
    t.equal(r.status, 400, `body ${JSON.stringify(body)} is not a document`);
  }
  const brokenJson = await node.request('PUT', '/db/d/bad', { body: '{"a":', raw: true, headers: { 'content-type': 'application/json' } });
  t.equal(brokenJson.status, 400);
  const createWithRev = await node.request('PUT', '/db/d/fresh', { body: { _rev: rev1 } });
  t.equal(createWithRev.status, 409, 'a rev for a document that does not exist is a conflict');

  // Delete: needs the rev, leaves a tombstone readable by rev.
  const delNoRev = await node.request('DELETE', '/db/d/doc1');
  t.equal(delNoRev.status, 409);
  t.match(delNoRev.body.message, /If-Match/);
  const delStale = await node.request('DELETE', '/db/d/doc1', { headers: { 'if-match': rev3 } });
  t.equal(delStale.status, 409);
  const del = await node.request('DELETE', '/db/d/doc1', { headers: { 'if-match': `"${rev4}"` } });
  t.equal(del.status, 200);
  t.match(del.body, { ok: true, id: 'doc1', rev: /^5-/ });
  const gone = await node.request('GET', '/db/d/doc1');
  t.equal(gone.status, 404);
  t.equal(gone.body.error, 'not_found');
  const tomb = await node.request('GET', `/db/d/doc1?rev=${del.body.rev}`);
  t.same(tomb.body, { _id: 'doc1', id: 'doc1', _rev: del.body.rev, _deleted: true });
  const tomb2 = await node.request('GET', '/db/d/doc1?deleted=true');
  t.equal(tomb2.body._deleted, true);
  const delAgain = await node.request('DELETE', `/db/d/doc1?rev=${del.body.rev}`);
  t.equal(delAgain.status, 404, 'deleting a deleted document');
  t.equal((await node.request('DELETE', '/db/d/never?rev=1-abc')).status, 404);

  // Re-create without a rev, on top of the tombstone.
  const again = await node.request('PUT', '/db/d/doc1', { body: { back: true } });
  t.equal(again.status, 201);
  t.match(again.body.rev, /^6-/);

  // CBOR in and out, same document model.
  const cborPut = await fetch(`${node.url}/db/d/cbor`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/cbor', accept: 'application/cbor' },
    body: encode({ kind: 'cbor', list: [1, 2.5, 'x'] }),
  });
  t.equal(cborPut.status, 201);
  const cborResult = decode(Buffer.from(await cborPut.arrayBuffer()));
  t.match(cborResult, { ok: true, id: 'cbor', rev: REV });
  const viaJson = await node.request('GET', '/db/d/cbor');
  t.same(viaJson.body, { _id: 'cbor', id: 'cbor', _rev: cborResult.rev, kind: 'cbor', list: [1, 2.5, 'x'] });
  const bytes = await fetch(`${node.url}/db/d/cbor2`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/cbor' },
    body: encode({ raw: Buffer.from([1, 2]) }),
  });
  t.equal(bytes.status, 400, 'a CBOR byte string is not a JSON value');

  // A document over the stored-size limit is a 413 with the error body.
  const huge = await node.request('PUT', '/db/d/huge', { body: { blob: 'x'.repeat(8 * 1024 * 1024 + 10) } });
  t.equal(huge.status, 413);
  t.match(huge.body, { error: 'too_large', message: /larger than/ });
  t.equal((await node.request('GET', '/db/d/huge')).status, 404);

  const info = await node.request('GET', '/db/d');
  t.match(info.body, { doc_count: 2, doc_del_count: 0 });
  t.ok(info.body.disk_size > 0);
  await node.request('DELETE', `/db/d/doc1?rev=${again.body.rev}`);
  t.match((await node.request('GET', '/db/d')).body, { doc_count: 1, doc_del_count: 1 });
});

t.test('replicated branches: conflicts, winner body, new_edits=false', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/r');
  const base = await node.request('PUT', '/db/r/doc', { body: { v: 'base' } });
  const h1 = (base.body.rev as string).slice(2);
  const local = await node.request('PUT', '/db/r/doc', { body: { v: 'local' }, headers: { 'if-match': base.body.rev } });

  // A foreign branch from the same parent with a greater hash wins; its body is served.
  const foreignRev = `2-${'f'.repeat(64)}`;
  const foreign = await node.request('PUT', '/db/r/doc?new_edits=false', {
    body: { _rev: foreignRev, _revisions: { start: 2, ids: ['f'.repeat(64), h1] }, v: 'foreign' },
  });
  t.equal(foreign.status, 201);
  const winner = await node.request('GET', '/db/r/doc?conflicts=true');
  t.equal(winner.body._rev, foreignRev);
  t.equal(winner.body.v, 'foreign', 'the body served is the winner\'s');
  t.same(winner.body._conflicts, [local.body.rev]);

  // A losing branch does not change the winner or its body.
  const loserRev = `2-${'0'.repeat(64)}`;
  await node.request('POST', '/db/r/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'doc', _rev: loserRev, _revisions: { start: 2, ids: ['0'.repeat(64), h1] }, v: 'loser' }] } });
  const still = await node.request('GET', '/db/r/doc?conflicts=true');
  t.equal(still.body._rev, foreignRev);
  t.equal(still.body.v, 'foreign');
  t.equal(still.body._conflicts.length, 2);
  const loserBody = await node.request('GET', `/db/r/doc?rev=${loserRev}`);
  t.equal(loserBody.body.v, 'loser');

  // Re-sending a known revision is a no-op; the changes feed lists the doc once.
  const dup = await node.request('POST', '/db/r/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'doc', _rev: loserRev, v: 'loser' }] } });
  t.same(dup.body, [{ ok: true, id: 'doc', rev: loserRev }]);
  const changes = await node.request('GET', '/db/r/_changes');
  t.equal(changes.body.results.length, 1);
  t.equal(changes.body.results[0].rev, foreignRev);

  // Resolve: delete the losers by rev; the winner stays.
  for (const rev of [local.body.rev, loserRev]) {
    const r = await node.request('DELETE', `/db/r/doc?rev=${rev}`);
    t.equal(r.status, 200, `delete loser ${rev.slice(0, 8)}`);
  }
  const resolved = await node.request('GET', '/db/r/doc?conflicts=true&deleted_conflicts=true');
  t.notOk('_conflicts' in resolved.body);
  t.equal(resolved.body._deleted_conflicts.length, 2);
  // Deleting the winner now makes the document deleted.
  const delWinner = await node.request('DELETE', `/db/r/doc?rev=${foreignRev}`);
  t.equal(delWinner.status, 200);
  t.equal((await node.request('GET', '/db/r/doc')).status, 404);

  const badHistory = await node.request('PUT', '/db/r/x?new_edits=false', { body: { _rev: '3-abc', _revisions: { start: 3, ids: ['abd'] } } });
  t.equal(badHistory.status, 400);
  const noRev = await node.request('PUT', '/db/r/x?new_edits=false', { body: { v: 1 } });
  t.equal(noRev.status, 400);

  const diff = await node.request('POST', '/db/r/_revs_diff', { body: { doc: [foreignRev, '9-abc'], other: ['1-abc'] } });
  t.same(diff.body.other, { missing: ['1-abc'] });
  t.same(diff.body.doc.missing, ['9-abc']);
  t.equal(diff.body.doc.possible_ancestors.length, 3, 'the three tombstone leaves (generation 3) may be ancestors of 9-abc');
});

t.test('revs_limit stems history on write', async (t) => {
  const node = await startTestNode({ SERVICE_REVS_LIMIT: '3' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/s');
  let rev: string | undefined;
  for (let i = 0; i < 6; i++) {
    const r = await node.request('PUT', '/db/s/doc', { body: { i }, headers: rev === undefined ? {} : { 'if-match': rev } });
    rev = r.body.rev;
  }
  const got = await node.request('GET', '/db/s/doc?revs=true');
  t.equal(got.body._revisions.start, 6);
  t.equal(got.body._revisions.ids.length, 3);
});

// CouchDB's rule: a top-level field starting with _ is one of its special members or a 400
// ("Bad special document member"). Before, any other was dropped without a word: the write
// was acknowledged and the field was gone.
t.test('a top-level field starting with _ is a special member or a 400, never dropped', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/u');
  const refused = await node.request('PUT', '/db/u/d', { body: { a: 1, _secret: 'x' } });
  t.match(refused, { status: 400, body: { error: 'bad_request', message: /special document member: _secret/ } });
  t.equal((await node.request('GET', '/db/u/d')).status, 404, 'nothing was written');
  const bulk = await node.request('POST', '/db/u/_bulk_docs', { body: { docs: [{ _id: 'b1', _foo: 1 }, { _id: 'b2', a: 1 }] } });
  t.match(bulk.body, [{ id: 'b1', error: 'bad_request' }, { id: 'b2', ok: true }], 'in a batch, that document alone');
  // What a read gives back (with conflicts=true, revs_info=true, local_seq=true) may be written back.
  const made = await node.request('PUT', '/db/u/d', { body: { a: 1, nested: { _free: 'inside an object, any name' } } });
  t.equal(made.status, 201);
  const read = (await node.request('GET', '/db/u/d?conflicts=true&revs_info=true&revs=true&local_seq=true')).body as Record<string, unknown>;
  const again = await node.request('PUT', '/db/u/d', { body: { ...read, _conflicts: [], _deleted_conflicts: [], b: 2 } });
  t.equal(again.status, 201, again.text);
  t.same((await node.request('GET', '/db/u/d')).body, { _id: 'd', id: 'd', _rev: again.body.rev, a: 1, nested: { _free: 'inside an object, any name' }, b: 2 });
});

t.test('a document with a key "__proto__" anywhere is refused on every path, a replicated one too', (t) => {
  // JSON.parse makes an own "__proto__" key, as a replicator reading another server's JSON does;
  // the storage codec would read it back as "__proto_".
  const raw = JSON.parse('{"_id": "x", "a": [{"__proto__": {"b": 1}}]}') as unknown;
  t.match(bulkEdits([raw], true, () => 'id'), [{ id: 'x', error: 'bad_request', message: /__proto__/ }]);
  t.match(bulkEdits([{ ...(raw as object), _rev: `1-${'a'.repeat(64)}` }], false, () => 'id'), [{ id: 'x', error: 'bad_request' }], 'new_edits: false too');
  t.match(bulkEdits([{ _id: 'y', a: { __proto_: 1, constructor: 2 } }], true, () => 'id'), [{ kind: 'update', docId: 'y' }], 'near names are fine');
  t.end();
});

// A client deleting `/db/${id}?rev=${rev}` with an id that came out empty sends a database's
// DELETE with a rev: CouchDB refuses it rather than drop the database, and so do we (it dropped
// the database). So is one with a trailing slash: the id was empty, or `.`, which fetch and
// curl normalise away (`/db/keep/.` is sent as `/db/keep/`). Both found by
// test/docdb/fuzz.test.ts (the second with FC_SEED=535577622).
t.test('a database DELETE naming a revision, or with a trailing slash, is a 400 and drops nothing, on /db and /vdb', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/keep')).status, 201);
  t.equal((await node.request('PUT', '/db/keep/a', { body: { n: 1 } })).status, 201);
  t.equal((await node.request('POST', '/vdb', { body: { name: 'vkeep', shard_count: 2 } })).status, 201);
  t.equal((await node.request('PUT', '/vdb/vkeep/a', { body: { n: 1 } })).status, 201);
  for (const base of ['/db/keep', '/vdb/vkeep']) {
    for (const [path, headers] of [[`${base}?rev=1-abc`, {}], [`${base}/?rev=1-abc`, {}], [`${base}?rev=`, {}], [base, { 'if-match': '"1-abc"' }], [`${base}/`, {}], [`${base}/.`, {}], [`${base}/?x=1`, {}]] as const) {
      const r = await node.request('DELETE', path, { headers });
      t.equal(r.status, 400, `DELETE ${path} ${JSON.stringify(headers)}: ${r.text}`);
      t.match(r.body.message, /Did you mean to DELETE a document instead/);
    }
    t.equal((await node.request('GET', `${base}/a`)).status, 200, `${base} and its document are still there`);
  }
  t.equal((await node.request('DELETE', '/db/keep')).status, 200, 'a DELETE without a rev drops the database');
  t.equal((await node.request('DELETE', '/vdb/vkeep')).status, 200, 'and a VDB');
  t.equal((await node.request('GET', '/db/keep')).status, 404);
});

// CouchDB opens the document before a DELETE (a document's or an attachment's): a missing or
// deleted one is a 404 whatever the rev; a live one without a rev, or with a rev that is no
// current leaf, a 409. Before, a DELETE without a rev of a missing or deleted document was a
// 409 ("deleting needs the current revision").
t.test('a document DELETE: 404 for a missing or deleted document whatever the rev, 409 for a live one without a current rev; on /db, /vdb and a clustered VDB', async (t) => {
  for (const [kind, start] of [['standalone', () => startTestNode()], ['one-node cluster', () => startClusterTestNode()]] as const) {
    const node = await start();
    t.teardown(() => node.close());
    const bases = kind === 'standalone' ? ['/db/del', '/vdb/vdel'] : ['/vdb/vdel'];
    if (kind === 'standalone') t.equal((await node.request('PUT', '/db/del')).status, 201);
    t.equal((await node.request('POST', '/vdb', { body: { name: 'vdel', shard_count: 2 } })).status, 201);
    for (const base of bases) {
      const what = `${kind} ${base}`;
      const status = async (path: string) => (await node.request('DELETE', `${base}/${path}`)).status;
      t.equal(await status('missing'), 404, `${what}: missing, no rev`);
      t.equal(await status('missing?rev=1-abc'), 404, `${what}: missing, a rev`);
      const put = await node.request('PUT', `${base}/live`, { body: { n: 1 } });
      t.equal(put.status, 201);
      t.equal(await status('live'), 409, `${what}: live, no rev`);
      t.equal(await status('live?rev=1-abc'), 409, `${what}: live, a rev that is no leaf`);
      const del = await node.request('DELETE', `${base}/live?rev=${put.body.rev}`);
      t.equal(del.status, 200, `${what}: live, its rev`);
      t.equal(await status('live'), 404, `${what}: deleted, no rev`);
      t.equal(await status(`live?rev=${put.body.rev}`), 404, `${what}: deleted, the rev it had`);
      t.equal(await status(`live?rev=${del.body.rev}`), 404, `${what}: deleted, its tombstone's rev`);
      const missing = await node.request('DELETE', `${base}/missing`);
      t.same(missing.body, { error: 'not_found', message: 'document "missing" not found (missing or deleted)' });
      // An attachment's DELETE opens its document first too.
      t.equal(await status('missing/a.txt'), 404, `${what}: an attachment of a missing document, no rev`);
      t.equal(await status('missing/a.txt?rev=1-abc'), 404, `${what}: an attachment of a missing document, a rev`);
      const att = await node.request('PUT', `${base}/withatt/a.txt`, { body: Buffer.from('hi'), raw: true, headers: { 'content-type': 'text/plain' } });
      t.equal(att.status, 201, att.text);
      t.equal(await status('withatt/a.txt'), 409, `${what}: an attachment of a live document, no rev`);
      t.equal(await status('withatt/a.txt?rev=1-abc'), 409, `${what}: an attachment of a live document, a rev that is no leaf`);
      t.equal((await node.request('DELETE', `${base}/withatt?rev=${att.body.rev}`)).status, 200);
      t.equal(await status('withatt/a.txt'), 404, `${what}: an attachment of a deleted document, no rev`);
    }
  }
});
