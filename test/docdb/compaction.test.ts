// Older revision bodies: kept when a leaf gets a child, served by ?rev=, _bulk_get and after
// a restart, carried by replication, and dropped by POST /db/:db/_compact or the automatic
// pass (SERVICE_COMPACT_AFTER_WRITES). Leaf bodies (conflicts, tombstones) always stay.
import pino from 'pino';
import t from 'tap';
import { tempDocEngine } from '../support/doc-engine.js';
import { leftOlderBody } from '../../src/docdb/engine.js';
import { compactAndWait as compacted, until } from '../support/compact.js';
import { type TestNode, startTestNode } from '../support/node.js';

/** Three revisions of `id`: returns their revs, oldest first. */
async function threeRevisions(node: TestNode, db: string, id: string): Promise<string[]> {
  const revs: string[] = [];
  for (let n = 1; n <= 3; n++) {
    const r = await node.request('PUT', `/db/${db}/${id}`, { body: revs.length === 0 ? { n } : { n, _rev: revs.at(-1) } });
    if (r.status !== 201) throw new Error(`PUT ${r.status}: ${r.text}`);
    revs.push(r.body.rev as string);
  }
  return revs;
}

t.test('older revisions are readable until compaction', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/a');
  const revs = await threeRevisions(node, 'a', 'doc');

  for (const [i, rev] of revs.entries()) {
    const r = await node.request('GET', `/db/a/doc?rev=${rev}`);
    t.equal(r.status, 200, `revision ${i + 1} is served`);
    t.match(r.body, { _id: 'doc', _rev: rev, n: i + 1 });
  }
  const bulk = await node.request('POST', '/db/a/_bulk_get?revs=true', { body: { docs: [{ id: 'doc', rev: revs[0] }] } });
  t.match(bulk.body.results[0].docs[0].ok, { _rev: revs[0], n: 1 }, '_bulk_get serves a kept older body');

  const open = await node.request('GET', `/db/a/doc?open_revs=${encodeURIComponent(JSON.stringify(revs))}&revs=true`);
  t.equal(open.status, 200);
  t.match(open.body, revs.map((rev, i) => ({ ok: { _rev: rev, n: i + 1 } })), 'open_revs serves every kept body');
  t.match((await node.request('GET', '/db/a/doc?open_revs=all')).body, [{ ok: { _rev: revs[2], n: 3 } }], 'open_revs=all: the leaves');
  t.equal((await node.request('GET', '/db/a/doc?open_revs=nope')).status, 400);

  const sizeBefore = (await node.request('GET', '/db/a')).body.disk_size as number;
  await node.restart();
  t.match((await node.request('GET', `/db/a/doc?rev=${revs[0]}`)).body, { n: 1 }, 'kept bodies survive a restart');

  await compacted(node, 'a');
  for (const rev of revs.slice(0, 2)) {
    const r = await node.request('GET', `/db/a/doc?rev=${rev}`);
    t.equal(r.status, 404, 'a non-leaf body is gone after compaction');
    t.equal(r.body.error, 'not_found');
  }
  t.match((await node.request('GET', `/db/a/doc?rev=${revs[2]}`)).body, { _rev: revs[2], n: 3 }, 'the leaf stays');
  t.match((await node.request('GET', '/db/a/doc?revs=true')).body._revisions, { start: 3, ids: revs.map((r) => r.slice(2)).reverse() }, 'history stays');
  t.ok((await node.request('GET', '/db/a')).body.disk_size < sizeBefore, 'disk_size counts the freed bodies');
  const openAfter = await node.request('GET', `/db/a/doc?open_revs=${encodeURIComponent(JSON.stringify(revs))}`);
  t.match(openAfter.body, [{ missing: revs[0] }, { missing: revs[1] }, { ok: { _rev: revs[2] } }], 'open_revs after compaction: only the leaf');
  const gone = await node.request('POST', '/db/a/_bulk_get', { body: { docs: [{ id: 'doc', rev: revs[0] }] } });
  t.match(gone.body.results[0].docs[0], { error: { error: 'not_found' } });
});

t.test('conflicts and tombstones keep their bodies through compaction', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/c');
  const revs = await threeRevisions(node, 'c', 'doc');
  const hash = 'b'.repeat(32);
  const branch = await node.request('POST', '/db/c/_bulk_docs', {
    body: { new_edits: false, docs: [{ _id: 'doc', _rev: `2-${hash}`, side: true, _revisions: { start: 2, ids: [hash, revs[0]!.slice(2)] } }] },
  });
  t.equal(branch.status, 201);
  const gone = await node.request('DELETE', `/db/c/doc?rev=${revs[2]}`);
  t.equal(gone.status, 200);
  await compacted(node, 'c');
  t.match((await node.request('GET', `/db/c/doc?rev=2-${hash}`)).body, { side: true }, 'the conflict leaf stays');
  t.match((await node.request('GET', `/db/c/doc?rev=${gone.body.rev}`)).body, { _deleted: true }, 'the tombstone stays');
  t.equal((await node.request('GET', `/db/c/doc?rev=${revs[2]}`)).status, 404, 'the deleted revision’s parent body is compacted');
});

t.test('replicated revisions keep their bodies on the target until it is compacted', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/src');
  const first = await node.request('PUT', '/db/src/doc', { body: { n: 1 } });
  const run1 = await node.request('POST', '/db/src/_replicate', { body: { target: 'dst', create_target: true } });
  t.equal(run1.status, 200);
  const second = await node.request('PUT', '/db/src/doc', { body: { n: 2, _rev: first.body.rev } });
  const run2 = await node.request('POST', '/db/src/_replicate', { body: { target: 'dst' } });
  t.match(run2.body, { docs_written: 1 });
  t.match((await node.request('GET', `/db/dst/doc?rev=${first.body.rev}`)).body, { n: 1 }, 'the body that arrived as a leaf is kept');
  t.match((await node.request('GET', `/db/dst/doc?rev=${second.body.rev}`)).body, { n: 2 });
  await compacted(node, 'dst');
  t.equal((await node.request('GET', `/db/dst/doc?rev=${first.body.rev}`)).status, 404);

  // An ancestor that arrives without a body has none.
  const hash = (c: string) => c.repeat(32);
  await node.request('POST', '/db/dst/_bulk_docs', {
    body: { new_edits: false, docs: [{ _id: 'far', _rev: `2-${hash('d')}`, n: 2, _revisions: { start: 2, ids: [hash('d'), hash('e')] } }] },
  });
  t.equal((await node.request('GET', `/db/dst/far?rev=1-${hash('e')}`)).status, 404);
});

t.test('attachments referenced only by compacted bodies are released', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/att');
  const data = Buffer.from('old attachment').toString('base64');
  const r1 = await node.request('PUT', '/db/att/doc', { body: { _attachments: { 'a.txt': { content_type: 'text/plain', data } } } });
  const r2 = await node.request('PUT', '/db/att/doc', { body: { _rev: r1.body.rev, plain: true } });
  t.equal(r2.status, 201);
  const old = await node.request('GET', `/db/att/doc/_attachments/a.txt?rev=${r1.body.rev}`);
  t.equal(old.status, 200, 'an older revision’s attachment is readable while its body is kept');
  t.equal(old.text, 'old attachment');
  const sizeBefore = (await node.request('GET', '/db/att')).body.disk_size as number;
  await compacted(node, 'att');
  t.equal((await node.request('GET', `/db/att/doc/_attachments/a.txt?rev=${r1.body.rev}`)).status, 404);
  t.ok((await node.request('GET', '/db/att')).body.disk_size <= sizeBefore - 'old attachment'.length, 'the attachment bytes are released');
});

t.test('the automatic pass fires after SERVICE_COMPACT_AFTER_WRITES writes that left an old body', async (t) => {
  const node = await startTestNode({ SERVICE_COMPACT_AFTER_WRITES: '4' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/auto');
  const revs = await threeRevisions(node, 'auto', 'doc'); // two updates: two old bodies
  t.equal((await node.request('GET', `/db/auto/doc?rev=${revs[0]}`)).status, 200, 'kept below the threshold');
  await threeRevisions(node, 'auto', 'other'); // two more
  await until('the automatic compaction', async () => (await node.request('GET', `/db/auto/doc?rev=${revs[0]}`)).status === 404);
  t.match((await node.request('GET', '/db/auto/doc')).body, { n: 3 });
});

t.test('_compact is for admins and needs the database', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/p');
  const writer = (await node.request('POST', '/_keys', { body: { permissions: ['write'] } })).body.key as string;
  const denied = await node.request('POST', '/db/p/_compact', { key: writer });
  t.equal(denied.status, 403);
  t.equal(denied.body.error, 'forbidden');
  t.equal((await node.request('POST', '/db/p/_compact', { key: false })).status, 401);
  const missing = await node.request('POST', '/db/nope/_compact');
  t.equal(missing.status, 404);
  t.same(missing.body, { error: 'not_found', message: 'database "nope" does not exist' });
});

t.test('new documents alone never start the automatic pass (nothing to drop); updates do', async (t) => {
  const started: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void (JSON.parse(line).msg === 'compaction started' && started.push(line)) });
  const { docs } = await tempDocEngine(t, { prefix: 'firkin-autocompact-', log, compactAfterWrites: 4 });
  await docs.createDb('fresh');
  const created = (await docs.bulkDocs('fresh', Array.from({ length: 20 }, (_, i) => ({ _id: `d${i}`, n: i })), true, () => 'unused')).map((r) => (r.ok ? r.rev : ''));
  for (let i = 0; i < 10; i++) await docs.bulkDocs('fresh', [{ _id: `single${i}` }], true, () => 'unused');
  // The pass logs its start synchronously when a write triggers it, before that write answers.
  t.same(started, [], '30 new documents: no pass');
  for (let i = 0; i < 3; i++) await docs.bulkDocs('fresh', [{ _id: `d${i}`, _rev: created[i]!, n: -i }], true, () => 'unused');
  t.same(started, [], 'three updates: below the threshold');
  await docs.bulkDocs('fresh', [{ _id: 'd3', _rev: created[3]!, n: -3 }], true, () => 'unused');
  t.equal(started.length, 1, 'the fourth update starts it');
  await docs.compact('fresh');
});

t.test('what a shard leader counts towards a compaction: successful writes of a revision with a parent', (t) => {
  t.notOk(leftOlderBody({ ok: true, id: 'a', rev: '1-abc' }), 'a first revision');
  t.ok(leftOlderBody({ ok: true, id: 'a', rev: '2-abc' }), 'an update');
  t.ok(leftOlderBody({ ok: true, id: 'a', rev: '12-abc' }));
  t.notOk(leftOlderBody({ ok: false, id: 'a', error: 'conflict', message: 'x' }), 'a refused write');
  t.end();
});
