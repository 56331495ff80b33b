// The protocol endpoints (`_bulk_get`, `_local`) and every error of `_replicate` and
// `/_replications`, over real HTTP.
import t from 'tap';
import { startTestNode } from '../../support/node.js';

t.test('protocol endpoints and errors', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/p');
  const a = await node.request('PUT', '/db/p/a', { body: { v: 1, _attachments: { 'n.txt': { content_type: 'text/plain', data: Buffer.from('hello').toString('base64') } } } });
  const a2 = await node.request('PUT', '/db/p/a', { body: { v: 2, _attachments: { 'n.txt': { stub: true } } }, headers: { 'if-match': a.body.rev } });
  t.equal(a2.status, 201, a2.text);

  t.test('_bulk_get: revisions with history, attachments inline, errors per entry', async (t) => {
    const r = await node.request('POST', '/db/p/_bulk_get?revs=true&attachments=true', { body: { docs: [{ id: 'a', rev: a2.body.rev }, { id: 'a' }, { id: 'missing' }, { id: 'a', rev: `9-${'f'.repeat(64)}` }, { id: 'a', rev: 'junk' }] } });
    t.equal(r.status, 200);
    const [exact, leaves, missing, unknown, junk] = r.body.results;
    const d = exact.docs[0].ok;
    t.match(d, { _id: 'a', _rev: a2.body.rev, v: 2, _revisions: { start: 2, ids: [a2.body.rev.slice(2), a.body.rev.slice(2)] } });
    t.equal(d.id, undefined, 'CouchDB shape: no id field');
    t.equal(Buffer.from(d._attachments['n.txt'].data, 'base64').toString(), 'hello');
    t.equal(leaves.docs.length, 1, 'no rev: every leaf');
    t.equal(missing.docs[0].error.error, 'not_found');
    t.equal(unknown.docs[0].error.error, 'not_found');
    t.equal(junk.docs[0].error.error, 'bad_request');
    const since = await node.request('POST', '/db/p/_bulk_get?revs=true&attachments=true', { body: { docs: [{ id: 'a', rev: a2.body.rev, atts_since: [a.body.rev] }] } });
    t.match(since.body.results[0].docs[0].ok._attachments['n.txt'], { stub: true, revpos: 1 }, 'atts_since: content the reader holds comes as a stub');
    t.equal(since.body.results[0].docs[0].ok._attachments['n.txt'].data, undefined);
    const notAncestor = await node.request('POST', '/db/p/_bulk_get?attachments=true', { body: { docs: [{ id: 'a', rev: a2.body.rev, atts_since: [`1-${'e'.repeat(64)}`] }] } });
    t.ok(notAncestor.body.results[0].docs[0].ok._attachments['n.txt'].data, 'a revision outside the history does not count');
    const stubs = await node.request('POST', '/db/p/_bulk_get', { body: { docs: [{ id: 'a' }] } });
    t.same(stubs.body.results[0].docs[0].ok._attachments['n.txt'].stub, true, 'stubs without attachments=true');
    t.equal(stubs.body.results[0].docs[0].ok._revisions, undefined, 'no history without revs=true');
    t.equal((await node.request('POST', '/db/p/_bulk_get', { body: { nodocs: [] } })).status, 400);
    t.equal((await node.request('POST', '/db/p/_bulk_get', { body: { docs: [{ rev: 'x' }] } })).status, 400);
    t.equal((await node.request('POST', '/db/nope/_bulk_get', { body: { docs: [] } })).status, 404);
    t.equal((await node.request('POST', '/db/p/_bulk_get', { body: { docs: [] }, key: false })).status, 401);
  });

  t.test('_local documents: CRUD with revisions, never in the feed, gone with the database', async (t) => {
    t.equal((await node.request('GET', '/db/p/_local/cp')).status, 404);
    const created = await node.request('PUT', '/db/p/_local/cp', { body: { seq: 1 } });
    t.equal(created.status, 201);
    t.same(created.body, { ok: true, id: '_local/cp', rev: '0-1' });
    t.same((await node.request('GET', '/db/p/_local/cp')).body, { seq: 1, _id: '_local/cp', _rev: '0-1' });
    t.equal((await node.request('PUT', '/db/p/_local/cp', { body: { seq: 2 } })).status, 409, 'a write must name the current revision');
    t.equal((await node.request('PUT', '/db/p/_local/cp', { body: { seq: 2, _rev: '0-7' } })).status, 409);
    t.equal((await node.request('PUT', '/db/p/_local/cp', { body: { seq: 2, _rev: 'x' } })).status, 400);
    const updated = await node.request('PUT', '/db/p/_local/cp', { body: { seq: 2, _rev: '0-1' } });
    t.equal(updated.body.rev, '0-2');
    t.equal((await node.request('PUT', '/db/p/_local/cp?rev=0-2', { body: { seq: 3 } })).body.rev, '0-3');
    t.equal((await node.request('PUT', '/db/p/_local/cp', { body: [1, 2] })).status, 400);
    const changes = await node.request('GET', '/db/p/_changes');
    t.notOk(changes.text.includes('_local'), 'local documents are not in the changes feed');
    t.equal((await node.request('DELETE', '/db/p/_local/cp?rev=0-1')).status, 409);
    t.same((await node.request('DELETE', '/db/p/_local/cp?rev=0-3')).body, { ok: true, id: '_local/cp', rev: '0-0' });
    t.equal((await node.request('DELETE', '/db/p/_local/cp')).status, 404);
    t.equal((await node.request('GET', '/db/nope/_local/cp')).status, 404);
    t.equal((await node.request('PUT', '/db/nope/_local/cp', { body: {} })).status, 404);
    t.equal((await node.request('GET', '/db/p/_local/cp', { key: false })).status, 401);
    await node.request('PUT', '/db/tmp');
    await node.request('PUT', '/db/tmp/_local/x', { body: { a: 1 } });
    await node.request('DELETE', '/db/tmp');
    await node.request('PUT', '/db/tmp');
    t.equal((await node.request('GET', '/db/tmp/_local/x')).status, 404, 'dropped with the database');
  });

  t.test("_local_docs: CouchDB's listing of the local documents, with _all_docs's parameters over the full ids", async (t) => {
    await node.request('PUT', '/db/ld');
    for (const id of ['b', 'a', 'c/d', 'é']) await node.request('PUT', `/db/ld/_local/${encodeURIComponent(id)}`, { body: { id } });
    await node.request('PUT', '/db/ld/_local/a', { body: { id: 'a', again: true, _rev: '0-1' } });
    await node.request('PUT', '/db/ld/doc', { body: { x: 1 } });
    const all = await node.request('GET', '/db/ld/_local_docs');
    t.equal(all.status, 200);
    t.same(all.body, {
      total_rows: null,
      offset: null,
      rows: [
        { id: '_local/a', key: '_local/a', value: { rev: '0-2' } },
        { id: '_local/b', key: '_local/b', value: { rev: '0-1' } },
        { id: '_local/c/d', key: '_local/c/d', value: { rev: '0-1' } },
        { id: '_local/é', key: '_local/é', value: { rev: '0-1' } },
      ],
    }, 'every local document in id order, no document');
    const rows = async (query: string) => ((await node.request('GET', `/db/ld/_local_docs?${query}`)).body.rows as { key: string }[]).map((r) => r.key);
    t.same(await rows('descending=true&limit=2'), ['_local/é', '_local/c/d']);
    t.same(await rows(`startkey=${encodeURIComponent('"_local/b"')}&endkey=${encodeURIComponent('"_local/c/d"')}&inclusive_end=false`), ['_local/b']);
    t.same(await rows('skip=3'), ['_local/é']);
    const withDocs = await node.request('GET', '/db/ld/_local_docs?include_docs=true&key=%22_local%2Fa%22');
    t.same(withDocs.body.rows, [{ id: '_local/a', key: '_local/a', value: { rev: '0-2' }, doc: { id: 'a', again: true, _id: '_local/a', _rev: '0-2' } }], 'include_docs, one key');
    const byKeys = await node.request('POST', '/db/ld/_local_docs', { body: { keys: ['_local/b', '_local/zz', 'doc'] } });
    t.same(byKeys.body.rows, [{ id: '_local/b', key: '_local/b', value: { rev: '0-1' } }, { key: '_local/zz', error: 'not_found' }, { key: 'doc', error: 'not_found' }], 'POST keys, in their order');
    t.equal((await node.request('GET', '/db/nope/_local_docs')).status, 404);
    t.equal((await node.request('GET', '/db/ld/_local_docs?limit=-1')).status, 400);
    t.equal((await node.request('GET', '/db/ld/_local_docs', { key: false })).status, 401);
  });

  t.test('_ensure_full_commit: every write is already durable; 201 as CouchDB answers', async (t) => {
    const r = await node.request('POST', '/db/p/_ensure_full_commit');
    t.equal(r.status, 201);
    t.same(r.body, { ok: true, instance_start_time: (await node.request('GET', '/db/p')).body.instance_start_time });
    t.equal((await node.request('POST', '/db/missing/_ensure_full_commit')).status, 404);
  });

  t.test('_replicate errors', async (t) => {
    const bad = async (body: unknown, what: string, status = 400) => {
      const r = await node.request('POST', '/db/p/_replicate', { body });
      t.equal(r.status, status, `${what}: ${r.text}`);
      return r;
    };
    await bad({}, 'no target');
    await bad({ target: 'p' }, 'source = target');
    await bad({ target: 'Bad Name' }, 'invalid name');
    await bad({ target: 'ftp://h/db/x' }, 'not http');
    await bad({ target: 'http://h:1/x' }, 'no /db/');
    await bad({ target: 'q', filter: { paths: ['nope'] } }, 'bad filter');
    await bad({ target: 'q', auth: { token: 'x' } }, 'bad auth');
    await bad({ target: 'q', continuous: 'yes' }, 'bad continuous');
    await bad({ target: 'q', extra: 1 }, 'unknown field');
    await bad([], 'not an object');
    t.equal((await node.request('POST', '/db/nope/_replicate', { body: { target: 'q', create_target: true } })).status, 404, 'missing source');
    t.equal((await node.request('POST', '/db/p/_replicate', { body: { target: 'q', continuous: true } })).status, 404, 'continuous to a missing target');
    t.equal((await node.request('POST', '/db/p/_replicate', { body: { target: 'q' }, key: false })).status, 401);
    const reader = (await node.request('POST', '/_keys', { body: { permissions: ['read'] } })).body.key as string;
    t.equal((await node.request('POST', '/db/p/_replicate', { body: { target: 'q' }, key: reader })).status, 403, 'read keys cannot replicate');
    const scoped = (await node.request('POST', '/_keys', { body: { permissions: ['write'], databases: ['p'] } })).body.key as string;
    const other = await node.request('POST', '/db/p/_replicate', { body: { target: 'q', create_target: true }, key: scoped });
    t.equal(other.status, 403, 'the key must be allowed on a local target too');
    t.equal((await node.request('GET', '/_replications/nope')).status, 404);
    t.equal((await node.request('DELETE', '/_replications/nope')).status, 404);
    t.equal((await node.request('GET', '/_replications', { key: false })).status, 401);
  });

  t.test('continuous task: idempotent, cancel removes it', async (t) => {
    await node.request('PUT', '/db/q');
    const one = await node.request('POST', '/db/p/_replicate', { body: { target: 'q', continuous: true } });
    const two = await node.request('POST', '/db/p/_replicate', { body: { target: 'q', continuous: true } });
    t.equal(one.status, 202);
    t.equal(one.body.task_id, two.body.task_id, 'the same replication is one task');
    const tasks = async () => ((await node.request('GET', '/_replications')).body.replications as { mode: string }[]).filter((r) => r.mode === 'continuous');
    t.equal((await tasks()).length, 1);
    const cancelled = await node.request('POST', '/db/p/_replicate', { body: { target: 'q', cancel: true } });
    t.match(cancelled.body, { ok: true, cancelled: true, task_id: one.body.task_id });
    t.same(await tasks(), []);
  });
});
