// CouchDB's read options on documents over real HTTP: revs_info (with bodies compacted away
// and deletions), latest (on a branched document), meta, attachments inline with atts_since
// (GET, _all_docs, _changes), the /db/doc/name attachment path, and design documents kept as
// documents that never run and that _find never returns. PouchDB sends each of these; they were silently ignored or 404s.
import t from 'tap';
import { compactAndWait } from '../support/compact.js';
import { startTestNode } from '../support/node.js';

t.test('revs_info, latest and meta', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/r');
  const r1 = (await node.request('PUT', '/db/r/doc', { body: { v: 1 } })).body.rev as string;
  const r2 = (await node.request('PUT', '/db/r/doc', { body: { v: 2 }, headers: { 'if-match': r1 } })).body.rev as string;
  const r3 = (await node.request('PUT', '/db/r/doc', { body: { v: 3 }, headers: { 'if-match': r2 } })).body.rev as string;

  const info = await node.request('GET', '/db/r/doc?revs_info=true');
  t.same(info.body._revs_info, [r3, r2, r1].map((rev) => ({ rev, status: 'available' })), 'before compaction every body is there');
  await compactAndWait(node, 'r');
  const after = await node.request('GET', '/db/r/doc?revs_info=true');
  t.same(after.body._revs_info, [{ rev: r3, status: 'available' }, { rev: r2, status: 'missing' }, { rev: r1, status: 'missing' }], 'compaction dropped the old bodies');
  t.notOk('_revs_info' in (await node.request('GET', '/db/r/doc')).body, 'only when asked');

  // A branch from r2, then a deleted leaf on top of r3: r2 has two descending leaves.
  const branch = `3-${'f'.repeat(64)}`;
  const h = (rev: string) => rev.slice(2);
  t.equal((await node.request('PUT', '/db/r/doc?new_edits=false', { body: { _rev: branch, _revisions: { start: 3, ids: [h(branch), h(r2), h(r1)] }, v: 'b' } })).status, 201);
  const r4 = (await node.request('DELETE', `/db/r/doc?rev=${r3}`)).body.rev as string;

  const latest = await node.request('GET', `/db/r/doc?rev=${r2}&latest=true`);
  t.equal(latest.status, 200);
  t.equal(latest.body._rev, branch, 'latest from r2: the live leaf beats the deleted one');
  t.equal((await node.request('GET', `/db/r/doc?rev=${r3}&latest=true`)).body._rev, r4, 'latest from r3: its deleted child');
  t.equal((await node.request('GET', `/db/r/doc?rev=${branch}&latest=true`)).body._rev, branch, 'a leaf is its own latest');
  t.equal((await node.request('GET', `/db/r/doc?rev=${r2}`)).status, 404, 'without latest, r2 is asked for itself (its body is compacted away)');

  const open = await node.request('GET', `/db/r/doc?open_revs=${encodeURIComponent(JSON.stringify([r2, `9-${'a'.repeat(8)}`]))}&latest=true`);
  t.same(
    open.body.map((e: { ok?: { _rev: string }; missing?: string }) => e.ok?._rev ?? `missing ${e.missing}`),
    [branch, r4, `missing 9-${'a'.repeat(8)}`],
    'open_revs with latest: each asked revision\'s leaves, winner first; an unknown one missing',
  );

  const meta = await node.request('GET', `/db/r/doc?meta=true`);
  t.equal(meta.body._rev, branch);
  t.same(meta.body._deleted_conflicts, [r4]);
  t.notOk('_conflicts' in meta.body, 'no live conflict');
  t.same(meta.body._revs_info, [{ rev: branch, status: 'available' }, { rev: r2, status: 'missing' }, { rev: r1, status: 'missing' }]);
  const deletedInfo = await node.request('GET', `/db/r/doc?rev=${r4}&revs_info=true`);
  t.same(deletedInfo.body._revs_info.slice(0, 2), [{ rev: r4, status: 'deleted' }, { rev: r3, status: 'available' }], 'a deletion is "deleted"; the body it replaced is kept until compaction');
});

t.test('attachments inline, the CouchDB attachment path, design documents', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/a');
  const put = (path: string, body: string, headers: Record<string, string>) => node.request('PUT', path, { body, raw: true, headers });
  const made = await put('/db/a/note/one.txt', 'first', { 'content-type': 'text/plain' });
  t.equal(made.status, 201, 'PUT /db/:db/:doc/:name attaches, as CouchDB does');
  const second = await put('/db/a/note/_attachments/two.txt', 'second', { 'content-type': 'text/plain', 'if-match': made.body.rev });
  const rev = second.body.rev as string;
  const got = await fetch(`${node.url}/db/a/note/two.txt`, { headers: { authorization: `Bearer ${node.adminKey}` } });
  t.equal(await got.text(), 'second', 'GET /db/:db/:doc/:name reads it');

  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const inline = await node.request('GET', '/db/a/note?attachments=true');
  t.same(
    Object.fromEntries(Object.entries(inline.body._attachments as Record<string, { data?: string; revpos: number }>).map(([n, a]) => [n, [a.data, a.revpos]])),
    { 'one.txt': [b64('first'), 1], 'two.txt': [b64('second'), 2] },
  );
  t.notOk('_revisions' in inline.body, 'the history read for atts_since is not sent unless asked');
  const since = await node.request('GET', `/db/a/note?attachments=true&atts_since=${encodeURIComponent(JSON.stringify([made.body.rev]))}`);
  t.equal(since.body._attachments['one.txt'].stub, true, 'unchanged since a revision the reader holds: a stub');
  t.equal(since.body._attachments['two.txt'].data, b64('second'));
  t.equal((await node.request('GET', '/db/a/note?attachments=true&atts_since=nope')).status, 400);

  const all = await node.request('GET', '/db/a/_all_docs?include_docs=true&attachments=true');
  t.equal(all.body.rows[0].doc._attachments['one.txt'].data, b64('first'), '_all_docs inlines with include_docs');
  const allPost = await node.request('POST', '/db/a/_all_docs?include_docs=true&attachments=true', { body: { keys: ['note'] } });
  t.equal(allPost.body.rows[0].doc._attachments['two.txt'].data, b64('second'), 'POST _all_docs too');
  t.equal((await node.request('GET', '/db/a/_all_docs?include_docs=true')).body.rows[0].doc._attachments['one.txt'].stub, true, 'stubs by default');
  const changes = await node.request('GET', '/db/a/_changes?include_docs=true&attachments=true');
  t.equal(changes.body.results[0].doc._attachments['two.txt'].data, b64('second'), '_changes inlines with include_docs');
  t.equal(changes.body.results[0].doc._rev, rev);

  t.equal((await node.request('DELETE', `/db/a/note/one.txt?rev=${rev}`)).status, 200, 'DELETE /db/:db/:doc/:name detaches');
  t.same(Object.keys((await node.request('GET', '/db/a/note')).body._attachments), ['two.txt']);

  // Design documents are kept as documents (replication carries them through) but never run.
  const ddoc = { views: { all: { map: 'function (doc) { emit(doc._id) }' } }, language: 'javascript' };
  const design = await node.request('PUT', '/db/a/_design/app', { body: ddoc });
  t.equal(design.status, 201, 'PUT /db/:db/_design/:name stores it');
  t.equal(design.body.id, '_design/app');
  const read = await node.request('GET', '/db/a/_design/app');
  t.match(read.body, { _id: '_design/app', _rev: design.body.rev, language: 'javascript' });
  t.equal((await node.request('GET', '/db/a/_design%2Fapp')).body._rev, design.body.rev, 'the encoded form is the same document');
  t.same((await node.request('GET', '/db/a/_all_docs')).body.rows.map((r: { id: string }) => r.id), ['_design/app', 'note'], '_all_docs lists it, as CouchDB does');
  t.ok((await node.request('GET', '/db/a/_changes')).body.results.some((c: { id: string }) => c.id === '_design/app'), 'and _changes');
  const everything = await node.request('POST', '/db/a/_find', { body: { selector: {} } });
  t.same(everything.body.docs.map((d: { _id: string }) => d._id), ['note'], '_find never returns a design document (full scan)');
  const byField = await node.request('POST', '/db/a/_find', { body: { selector: { language: 'javascript' } } });
  t.same(byField.body.docs, [], 'nor through an index: it has no postings');
  const att = await put('/db/a/_design/app/logo.txt', 'logo', { 'content-type': 'text/plain', 'if-match': design.body.rev });
  t.equal(att.status, 201, 'an attachment on a design document (couchapps keep their files there)');
  const view = await node.request('GET', '/db/a/_design/app/_view/all');
  t.equal(view.status, 404);
  t.match(view.body, { error: 'not_found', message: /_view\/all: views, shows, lists, update and validate functions do not run here: query with _find/ });
  t.equal((await node.request('POST', '/db/a/_design/app/_update/u', { body: {} })).status, 400);
  t.equal((await node.request('GET', '/db/nope/_design/app/_view/all')).status, 404, 'a missing database is a 404 first');
  t.equal((await node.request('DELETE', `/db/a/_design/app?rev=${att.body.rev}`)).status, 200, 'DELETE removes it');
  t.equal((await node.request('PUT', '/db/a/_other', { body: {} })).status, 400, 'other ids starting with _ stay reserved');
});

t.test('_design_docs lists the design documents; POST _all_docs takes the query options', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/d');
  for (const id of ['_design/b', 'alpha', '_design/a', 'zed', '_design/c']) t.equal((await node.request('PUT', `/db/d/${encodeURIComponent(id)}`, { body: { v: id } })).status, 201);
  const ids = (body: { rows: { id?: string; key: string; error?: string }[] }) => body.rows.map((r) => r.error ?? r.id);
  t.same(ids((await node.request('GET', '/db/d/_design_docs')).body), ['_design/a', '_design/b', '_design/c']);
  t.same(ids((await node.request('GET', '/db/d/_design_docs?descending=true&limit=2')).body), ['_design/c', '_design/b'], 'descending, limited');
  t.same(ids((await node.request('GET', `/db/d/_design_docs?startkey=${encodeURIComponent('"_design/b"')}`)).body), ['_design/b', '_design/c'], 'from a start key');
  t.same(ids((await node.request('GET', `/db/d/_design_docs?endkey=${encodeURIComponent('"zzz"')}`)).body), ['_design/a', '_design/b', '_design/c'], 'never past the design ids');
  const byKeys = await node.request('POST', '/db/d/_design_docs?include_docs=true', { body: { keys: ['_design/c', 'alpha', '_design/x'] } });
  t.same(ids(byKeys.body), ['_design/c', 'not_found', 'not_found'], 'keys: a plain document is not a design document');
  t.equal(byKeys.body.rows[0].doc.v, '_design/c');
  t.same(ids((await node.request('GET', '/db/d/_all_docs')).body), ['_design/a', '_design/b', '_design/c', 'alpha', 'zed'], '_all_docs lists them with the rest');
  t.same(ids((await node.request('POST', '/db/d/_all_docs?startkey=%22alpha%22&limit=1', { body: {} })).body), ['alpha'], 'POST _all_docs honours startkey and limit');
});

t.test('a VDB document takes the same read options: open_revs, deleted, atts_since', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('POST', '/vdb', { body: { name: 'vr', shard_count: 3 } })).status, 201);
  const att = (text: string) => ({ 'a.txt': { content_type: 'text/plain', data: Buffer.from(text).toString('base64') } });
  const r1 = (await node.request('PUT', '/vdb/vr/doc', { body: { v: 1, _attachments: att('one') } })).body.rev as string;
  const r2 = (await node.request('PUT', '/vdb/vr/doc', { body: { v: 2, _rev: r1, _attachments: { 'a.txt': { stub: true }, ...{ 'b.txt': att('two')['a.txt'] } } } })).body.rev as string;
  // A conflicting branch from r1, and a deleted one.
  const h = (rev: string) => rev.slice(2);
  const branch = `2-${'f'.repeat(64)}`;
  const dead = `2-${'0'.repeat(64)}`;
  t.equal((await node.request('POST', '/vdb/vr/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'doc', _rev: branch, _revisions: { start: 2, ids: [h(branch), h(r1)] }, v: 'b' }, { _id: 'doc', _rev: dead, _deleted: true, _revisions: { start: 2, ids: [h(dead), h(r1)] } }] } })).status, 201);

  const all = await node.request('GET', '/vdb/vr/doc?open_revs=all');
  t.equal(all.status, 200, all.text);
  const leafRevs = (all.body as { ok: { _rev: string } }[]).map((e) => e.ok._rev).sort();
  t.same(leafRevs, [branch, r2, dead].sort(), 'open_revs=all: every leaf, the deleted one too');
  const asked = await node.request('GET', `/vdb/vr/doc?open_revs=${encodeURIComponent(JSON.stringify([r2, `7-${'a'.repeat(8)}`]))}&revs=true`);
  t.match(asked.body, [{ ok: { _rev: r2, v: 2, _revisions: { start: 2 } } }, { missing: `7-${'a'.repeat(8)}` }], 'open_revs by list, with their history; an unknown one missing');
  const latest = await node.request('GET', `/vdb/vr/doc?open_revs=${encodeURIComponent(JSON.stringify([branch]))}&latest=true`);
  t.equal(latest.body[0].ok._rev, branch, 'a leaf is its own latest');
  const fromRoot = await node.request('GET', `/vdb/vr/doc?open_revs=${encodeURIComponent(JSON.stringify([r1, `7-${'a'.repeat(8)}`]))}&latest=true`);
  t.same(
    fromRoot.body.map((e: { ok?: { _rev: string }; missing?: string }) => e.ok?._rev ?? `missing ${e.missing}`),
    [branch, r2, dead, `missing 7-${'a'.repeat(8)}`], // branch's hash (all f) is the greatest: it wins over r2
    'with latest, every leaf descending from r1 (live ones first, the winner rule\'s order), as a database answers; an unknown one missing',
  );
  t.equal((await node.request('GET', '/vdb/vr/doc?open_revs=nope')).status, 400);

  // atts_since: what the reader holds since r1 stays a stub, the newer attachment comes inline.
  const since = await node.request('GET', `/vdb/vr/doc?rev=${r2}&attachments=true&atts_since=${encodeURIComponent(JSON.stringify([r1]))}`);
  t.equal(since.status, 200, since.text);
  t.equal(since.body._attachments['a.txt'].stub, true, 'a.txt (revpos 1) held since r1: a stub');
  t.equal(Buffer.from(since.body._attachments['b.txt'].data, 'base64').toString(), 'two', 'b.txt (revpos 2) inline');
  t.notOk('_revisions' in since.body, 'the history it needed is not sent unasked');
  t.equal((await node.request('GET', '/vdb/vr/doc?atts_since=nope&attachments=true')).status, 400);

  // deleted=true: a deleted document's tombstone.
  const gone = (await node.request('PUT', '/vdb/vr/gone', { body: { v: 1 } })).body.rev as string;
  const tomb = (await node.request('DELETE', `/vdb/vr/gone?rev=${gone}`)).body.rev as string;
  t.equal((await node.request('GET', '/vdb/vr/gone')).status, 404);
  const shown = await node.request('GET', '/vdb/vr/gone?deleted=true');
  t.match(shown.body, { _id: 'gone', _rev: tomb, _deleted: true }, 'deleted=true shows the tombstone');
});
