// Local -> local replication over real HTTP on one node: history, updates, deletions,
// conflicts, attachments, filters, checkpoints (no re-sending) and the HLC merge.
import t from 'tap';
import { parseHlc, compareHlc } from '../../../src/core/hlc.js';
import { type TestNode, startTestNode } from '../../support/node.js';

const hash = (c: string) => c.repeat(64).slice(0, 64);

async function doc(node: TestNode, db: string, id: string, query = '?revs=true&conflicts=true&deleted_conflicts=true') {
  return (await node.request('GET', `/db/${db}/${id}${query}`)).body;
}

async function replicate(node: TestNode, source: string, body: Record<string, unknown>) {
  const r = await node.request('POST', `/db/${source}/_replicate`, { body });
  if (r.status !== 200) throw new Error(`replicate ${r.status}: ${r.text}`);
  return r.body;
}

t.test('local replication', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/src');
  const docs = Array.from({ length: 30 }, (_, i) => ({ _id: `d${String(i).padStart(2, '0')}`, n: i, type: i % 3 === 0 ? 'user' : 'order' }));
  const written = await node.request('POST', '/db/src/_bulk_docs', { body: { docs } });
  t.equal(written.status, 201);

  t.test('missing target without create_target is a 404; with it the target is created', async (t) => {
    const missing = await node.request('POST', '/db/src/_replicate', { body: { target: 'nowhere' } });
    t.equal(missing.status, 404);
    t.equal(missing.body.error, 'not_found');
    const r = await replicate(node, 'src', { target: 'dst', create_target: true });
    t.match(r, { ok: true, docs_read: 30, docs_written: 30, doc_write_failures: 0, start_seq: 'first', last_seq: /^\{timestamp,\d+,\d+\}$/ });
    t.ok(Array.isArray(r.history) && r.history.length === 1);
    t.equal((await node.request('GET', '/db/dst')).body.doc_count, 30);
  });

  t.test('a second run starts from the checkpoint and re-sends nothing', async (t) => {
    const before = (await node.request('GET', '/db/dst')).body.update_seq;
    const r = await replicate(node, 'src', { target: 'dst' });
    t.match(r, { docs_read: 0, docs_written: 0 });
    t.not(r.start_seq, 'first', 'resumed from the checkpoint');
    t.equal(r.start_seq, r.last_seq);
    t.equal((await node.request('GET', '/db/dst')).body.update_seq, before, 'the target saw no write');
    const cp = await node.request('GET', `/db/dst/_local/replication-checkpoint-${r.replication_id}`);
    t.equal(cp.status, 200, 'the checkpoint is a _local doc on the target');
    const cpSource = await node.request('GET', `/db/src/_local/replication-checkpoint-${r.replication_id}`);
    t.equal(cpSource.body.source_last_seq, cp.body.source_last_seq, 'and on the source');
  });

  t.test('updates travel with their history; deletions travel as tombstones', async (t) => {
    const d0 = await doc(node, 'src', 'd00', '');
    const u1 = await node.request('PUT', '/db/src/d00', { body: { ...d0, n: 100 } });
    const u2 = await node.request('PUT', '/db/src/d00', { body: { n: 101 }, headers: { 'if-match': u1.body.rev } });
    const d1 = await doc(node, 'src', 'd01', '');
    const del = await node.request('DELETE', '/db/src/d01', { headers: { 'if-match': d1._rev } });
    t.equal(del.status, 200);
    const r = await replicate(node, 'src', { target: 'dst' });
    t.match(r, { docs_written: 2, doc_write_failures: 0 });
    const got = await doc(node, 'dst', 'd00');
    t.equal(got._rev, u2.body.rev);
    t.equal(got.n, 101);
    t.same(got._revisions, (await doc(node, 'src', 'd00'))._revisions, 'same history on both sides');
    t.notOk(got._conflicts, 'an edited document is no conflict on the target');
    t.equal((await node.request('GET', '/db/dst/d01')).status, 404, 'the deletion travelled');
    const tomb = await node.request('GET', `/db/dst/d01?rev=${del.body.rev}`);
    t.equal(tomb.body._deleted, true);
  });

  t.test('conflicts travel: every leaf reaches the target, same winner', async (t) => {
    const base = await doc(node, 'src', 'd02', '');
    const parent = base._rev.split('-')[1];
    const branch = (c: string) => ({ _id: 'd02', _rev: `2-${hash(c)}`, n: c, _revisions: { start: 2, ids: [hash(c), parent] } });
    const w = await node.request('POST', '/db/src/_bulk_docs', { body: { docs: [branch('b'), branch('c')], new_edits: false } });
    t.equal(w.status, 201);
    const src = await doc(node, 'src', 'd02');
    t.equal(src._conflicts.length, 1, 'the source has a conflict');
    await replicate(node, 'src', { target: 'dst' });
    const dst = await doc(node, 'dst', 'd02');
    t.equal(dst._rev, src._rev, 'same winner');
    t.same(dst._conflicts, src._conflicts, 'same conflicts');
  });

  t.test('attachments travel', async (t) => {
    const data = Buffer.from('attachment bytes '.repeat(1000));
    const put = await node.request('PUT', '/db/src/withatt/_attachments/blob.bin', { body: data, raw: true, headers: { 'content-type': 'application/x-test' } });
    t.equal(put.status, 201);
    await replicate(node, 'src', { target: 'dst' });
    const got = await fetch(`${node.url}/db/dst/withatt/_attachments/blob.bin`, { headers: { authorization: `Bearer ${node.adminKey}` } });
    t.equal(got.status, 200);
    t.equal(got.headers.get('content-type'), 'application/x-test');
    t.ok(Buffer.from(await got.arrayBuffer()).equals(data));
    // A new revision that keeps the attachment: it travels as a stub the target resolves.
    const cur = await doc(node, 'src', 'withatt', '');
    const edit = await node.request('PUT', '/db/src/withatt', { body: { note: 'edited', _attachments: cur._attachments }, headers: { 'if-match': cur._rev } });
    t.equal(edit.status, 201, edit.text);
    const r = await replicate(node, 'src', { target: 'dst' });
    t.match(r, { docs_written: 1, doc_write_failures: 0 });
    const again = await fetch(`${node.url}/db/dst/withatt/_attachments/blob.bin`, { headers: { authorization: `Bearer ${node.adminKey}` } });
    t.ok(Buffer.from(await again.arrayBuffer()).equals(data), 'the attachment is still whole on the target');
    t.equal((await doc(node, 'dst', 'withatt', '')).note, 'edited');
  });

  t.test('the target clock is never behind the replicated change', async (t) => {
    const r = await replicate(node, 'src', { target: 'dst' });
    const info = (await node.request('GET', '/db/dst')).body;
    t.ok(compareHlc(parseHlc(info.update_seq)!, parseHlc(r.last_seq)!) >= 0);
  });

  t.test('filters: paths, query, both AND-ed; each has its own checkpoint', async (t) => {
    const users = await replicate(node, 'src', { target: 'f_users', create_target: true, filter: { paths: ['type/user'] } });
    t.equal(users.start_seq, 'first', 'a filtered run does not reuse the unfiltered checkpoint');
    const all = (await node.request('GET', '/db/f_users/_all_docs')).body.rows.map((r: { id: string }) => r.id);
    t.ok(all.length > 0);
    for (const id of all) t.equal((await doc(node, 'f_users', id, '')).type, 'user', `${id} is a user`);
    const big = await replicate(node, 'src', { target: 'f_big', create_target: true, filter: { query: { where: [{ path: ['n'], op: '>=', value: 20 }] } } });
    t.equal(big.docs_written, 11, 'n 20..29 and d00 (n = 101)');
    const both = await replicate(node, 'src', { target: 'f_both', create_target: true, filter: { paths: ['type/user'], query: { where: [{ path: ['n'], op: '>=', value: 20 }] } } });
    t.equal(both.docs_written, 3, 'users with n >= 20: d21, d24, d27');
    const none = await replicate(node, 'src', { target: 'f_none', create_target: true, filter: { paths: ['type/nothing'] } });
    t.equal(none.docs_written, 0);
    // A tombstone reaches a filtered target only where the document already is.
    const d03 = await doc(node, 'src', 'd03', '');
    await node.request('DELETE', '/db/src/d03', { headers: { 'if-match': d03._rev } });
    const d04 = await doc(node, 'src', 'd04', '');
    await node.request('DELETE', '/db/src/d04', { headers: { 'if-match': d04._rev } });
    const again = await replicate(node, 'src', { target: 'f_users', filter: { paths: ['type/user'] } });
    t.equal(again.docs_written, 1, 'only the deleted user travelled');
    t.equal((await node.request('GET', '/db/f_users/d03')).status, 404);
    t.equal((await node.request('GET', '/db/f_users/d04?rev=' + encodeURIComponent('x'))).status, 400);
    t.equal((await node.request('POST', '/db/f_users/_bulk_get', { body: { docs: [{ id: 'd04' }] } })).body.results[0].docs[0].error.error, 'not_found');
  });

  t.test('a tombstone reaches a filtered target that holds the document, whatever generation it holds it at', async (t) => {
    // g: a matching branch up to 3-cccc (the winner) and another branch ending in a deletion.
    await node.request('PUT', '/db/gen_src');
    const history = (start: number, ids: string[]) => ({ start, ids });
    let put = await node.request('POST', '/db/gen_src/_bulk_docs', {
      body: {
        new_edits: false,
        docs: [
          { _id: 'g', _rev: '3-cccc', type: 'user', _revisions: history(3, ['cccc', 'bbbc', 'aaaa']) },
          { _id: 'g', _rev: '2-dddd', _deleted: true, _revisions: history(2, ['dddd', 'bbbb']) },
        ],
      },
    });
    t.equal(put.status, 201);
    const first = await replicate(node, 'gen_src', { target: 'gen_dst', create_target: true, filter: { paths: ['type/user'] } });
    t.equal(first.docs_written, 1, 'the matching leaf; the tombstone not (the target did not hold g yet)');
    // The deleted branch grows to generation 3: the target holds g at 3-cccc, which
    // `_revs_diff` does not name as a possible ancestor of a generation-3 revision.
    put = await node.request('POST', '/db/gen_src/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'g', _rev: '3-eeee', _deleted: true, _revisions: history(3, ['eeee', 'dddd', 'bbbb']) }] } });
    t.equal(put.status, 201);
    const second = await replicate(node, 'gen_src', { target: 'gen_dst', filter: { paths: ['type/user'] } });
    t.equal(second.docs_written, 1, 'the tombstone travelled: the target holds g');
    const leaf = await node.request('GET', '/db/gen_dst/g?rev=3-eeee');
    t.equal(leaf.status, 200);
    t.equal(leaf.body._deleted, true);
    t.equal((await doc(node, 'gen_dst', 'g', '')).type, 'user', 'the winner is still the live leaf');
  });

  t.test('filters see every leaf: a matching conflict travels though the winner does not match', async (t) => {
    await node.request('PUT', '/db/conf_src');
    const put = await node.request('POST', '/db/conf_src/_bulk_docs', {
      body: {
        new_edits: false,
        docs: [
          { _id: 'c', _rev: '1-bbbb', type: 'other' },
          { _id: 'c', _rev: '1-aaaa', type: 'match' },
          { _id: 'plain', _rev: '1-cccc', type: 'other' },
        ],
      },
    });
    t.equal(put.status, 201);
    t.equal((await doc(node, 'conf_src', 'c', '')).type, 'other', 'the winner (1-bbbb) does not match');
    const r = await replicate(node, 'conf_src', { target: 'conf_dst', create_target: true, filter: { paths: ['type/match'] } });
    t.equal(r.docs_written, 1, 'only the matching leaf');
    const onTarget = await node.request('GET', '/db/conf_dst/c?revs_info=true');
    t.equal(onTarget.body._rev, '1-aaaa');
    t.equal(onTarget.body.type, 'match');
    t.equal((await node.request('GET', '/db/conf_dst/plain')).status, 404);
  });
});
