// Interoperability: PouchDB 9 (memory adapter, HTTP adapter, its own replicator) replicates
// with a Firkin database both ways, one-shot and live, with a bearer key; after concurrent
// edits on both sides both report the same winners and conflicts. The same on a node in
// cluster mode: plain databases stay node-local there and speak the same protocol.
import { createRequire } from 'node:module';
import t from 'tap';
import type { Test } from 'tap';
import { type TestNode, startTestNode } from '../../support/node.js';
import { freePorts } from '../../raft/kv-cluster.js';
import { waitFor } from '../../support/wait.js';

const require = createRequire(import.meta.url);
// PouchDB ships no types; it is a test-only peer.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const PouchDB: any = require('pouchdb-core')
  .plugin(require('pouchdb-adapter-memory'))
  .plugin(require('pouchdb-adapter-http'))
  .plugin(require('pouchdb-replication'));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Pouch = any;

async function state(db: Pouch): Promise<Record<string, { rev: string; conflicts: string[]; body: unknown }>> {
  const all = await db.allDocs({ include_docs: true, conflicts: true });
  const out: Record<string, { rev: string; conflicts: string[]; body: unknown }> = {};
  for (const row of all.rows) {
    const { _id, _rev, _conflicts, id: _plain, ...body } = row.doc;
    out[_id] = { rev: _rev, conflicts: [...(_conflicts ?? [])].sort(), body };
  }
  return out;
}

t.test('PouchDB replicates with Firkin both ways', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await pouchSync(t, node);
});

t.test('PouchDB replicates both ways with a plain database on a cluster node', async (t) => {
  const [grpc] = await freePorts(1);
  const node = await startTestNode({ SERVICE_ENABLE_CLUSTER: 'true', SERVICE_GRPC_PORT: String(grpc), RELEASE_COOKIE: 'pouch-cookie-1234', SERVICE_NODE_NAME: 'c1' });
  t.teardown(() => node.close());
  await waitFor(async () => ((await node.request('GET', '/vectordb/cluster/status')).body.state === 'member' ? true : undefined), { what: 'the node to form its cluster' });
  await pouchSync(t, node);
});

t.test('PouchDB replicates both ways with a virtual database', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await pouchSync(t, node, '/vdb/shared');
});

/** Sync with the database at `base` (`/db/shared`, or the virtual database `/vdb/shared`). */
async function pouchSync(t: Test, node: TestNode, base = '/db/shared'): Promise<void> {
  if (base.startsWith('/vdb/')) t.equal((await node.request('POST', '/vdb', { body: { name: base.slice(5), shard_count: 3 } })).status, 201);
  else t.equal((await node.request('PUT', base)).status, 201);
  // Count PouchDB's requests in flight: cancelling a live sync returns at once while a
  // checkpoint write may still be on the wire, and the node must outlive it.
  let inFlight = 0;
  const remote = new PouchDB(`${node.url}${base}`, {
    fetch: async (url: string, opts: { headers: Headers }) => {
      opts.headers.set('Authorization', `Bearer ${node.adminKey}`);
      inFlight++;
      try {
        return await PouchDB.fetch(url, opts);
      } finally {
        inFlight--;
      }
    },
  });
  const local = new PouchDB(`local-${Date.now()}`, { adapter: 'memory' });

  await local.bulkDocs([{ _id: 'a', n: 1 }, { _id: 'b', n: 2 }, { _id: 'gone', n: 0 }]);
  const gone = await local.get('gone');
  await local.remove(gone);
  const push = await local.replicate.to(remote);
  t.equal(push.ok, true);
  t.equal((await node.request('GET', `${base}/a`)).body.n, 1, 'pushed document readable over HTTP');
  t.equal((await node.request('GET', `${base}/gone`)).status, 404, 'the deletion travelled');

  await node.request('PUT', `${base}/c`, { body: { n: 3, from: 'firkin' } });
  const pull = await local.replicate.from(remote);
  t.equal(pull.ok, true);
  t.equal((await local.get('c')).from, 'firkin', 'a Firkin document pulled into PouchDB');

  // Concurrent edits of the same document on both sides make a conflict.
  const la = await local.get('a');
  await local.put({ ...la, n: 10, side: 'pouch' });
  const fa = await node.request('GET', `${base}/a`);
  await node.request('PUT', `${base}/a`, { body: { n: 20, side: 'firkin' }, headers: { 'if-match': fa.body._rev } });
  await local.replicate.to(remote);
  await local.replicate.from(remote);
  const ours = await state(local);
  const firkinA = await node.request('GET', `${base}/a?conflicts=true`);
  t.equal(firkinA.body._rev, ours.a!.rev, 'same winner on both sides');
  t.same([...(firkinA.body._conflicts ?? [])].sort(), ours.a!.conflicts, 'same conflicts on both sides');
  t.equal(ours.a!.conflicts.length, 1);
  const theirs = await state(remote);
  t.same(theirs, ours, 'PouchDB sees the same winners, bodies and conflicts through Firkin');

  // Filtered pulls: CouchDB's `_doc_ids` and `_selector` filters (PouchDB's POST _changes).
  const only = new PouchDB(`only-${Date.now()}`, { adapter: 'memory' });
  await only.replicate.from(remote, { doc_ids: ['a', 'c'] });
  t.same((await only.allDocs()).rows.map((r: { id: string }) => r.id), ['a', 'c'], 'doc_ids: only those documents');
  const picked = new PouchDB(`picked-${Date.now()}`, { adapter: 'memory' });
  await picked.replicate.from(remote, { selector: { from: 'firkin' } });
  t.same((await picked.allDocs()).rows.map((r: { id: string }) => r.id), ['c'], 'selector: only the matching documents');
  const none = await node.request('POST', `${base}/_changes?filter=_doc_ids&style=all_docs`, { body: { doc_ids: ['later'] } });
  t.same(none.body.results, [], 'a filter matching nothing');
  t.equal((await node.request('PUT', `${base}/later`, { body: { n: 9 } })).status, 201);
  const next = await node.request('POST', `${base}/_changes?filter=_doc_ids&style=all_docs&since=${encodeURIComponent(none.body.last_seq)}`, { body: { doc_ids: ['later'] } });
  t.same(next.body.results.map((c: { id: string }) => c.id), ['later'], '... resumed from its last_seq, the next match is there');

  // The info's update_seq is the feed's end, as CouchDB's (PouchDB's replication progress reads it).
  const info = (await node.request('GET', base)).body;
  t.equal(info.doc_count, Object.keys(await state(remote)).length, 'doc_count counts the live documents');
  const tail = await node.request('GET', `${base}/_changes?style=all_docs&since=${encodeURIComponent(info.update_seq)}`);
  t.same(tail.body.results, [], 'nothing after update_seq');
  // CouchDB's continuous feed (its replicator's, in continuous mode): a JSON line per change, then `last_seq`.
  const following = fetch(`${node.url}${base}/_changes?feed=continuous&style=all_docs&limit=1&since=${encodeURIComponent(info.update_seq)}`, { headers: { authorization: `Bearer ${node.adminKey}` } }).then((r) => r.text());
  t.equal((await node.request('PUT', `${base}/followed`, { body: { n: 10 } })).status, 201);
  const lines = (await following).trim().split('\n').map((l) => JSON.parse(l));
  t.match(lines, [{ id: 'followed', changes: [{ rev: /^1-/ }] }, { last_seq: lines[0].seq }], 'continuous: the change, then last_seq');
  const idle = await fetch(`${node.url}${base}/_changes?feed=continuous&timeout=200&since=${encodeURIComponent(lines[1].last_seq)}`, { headers: { authorization: `Bearer ${node.adminKey}` } });
  t.same((await idle.text()).trim().split('\n').map((l) => JSON.parse(l)), [{ last_seq: lines[1].last_seq }], 'without a heartbeat it ends after timeout idle');

  t.test('live replication both ways', async (t) => {
    const sync = local.sync(remote, { live: true, retry: false });
    let complete = false;
    sync.on('complete', () => (complete = true));
    t.teardown(async () => {
      sync.cancel();
      await waitFor(() => complete && inFlight === 0, { what: 'the sync to stop and its last requests to finish' });
    });
    await local.put({ _id: 'live-from-pouch', v: 1 });
    await waitFor(async () => (await node.request('GET', `${base}/live-from-pouch`)).status === 200, { what: 'a live push' });
    await node.request('PUT', `${base}/live-from-firkin`, { body: { v: 2 } });
    await waitFor(async () => (await local.get('live-from-firkin').catch(() => undefined))?.v === 2, { what: 'a live pull' });
    t.pass('live replication carried both writes');
  });
}
