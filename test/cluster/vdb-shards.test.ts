// Virtual databases across three real node processes: a VDB of 4 shards, replica_factor 3,
// each shard a Raft group. Writes through one node, reads, `_find` and `_changes` through the
// others; conflicting foreign revisions through different nodes reach one winner everywhere;
// kill -9 of a shard's primary during writes loses nothing acknowledged, writes resume, and
// the restarted node catches up to the same digest as the other replicas and is handed shard
// leaderships back (leader balancing). CouchDB's replication protocol on the VDB: PouchDB
// pushes and pulls through different nodes, its checkpoints are `_local` documents in the
// shards' logs (the digests the replicas agree on include them). The `_find` grammar oracle
// on a VDB of its own, each request through the next node.
import fc from 'fast-check';
import { createRequire } from 'node:module';
import t from 'tap';
import type { Test } from 'tap';
import { fcParams } from '../support/fc.js';
import { type Send, arbFindCase, findRound } from '../support/find-oracle.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';
import { checkVdbFeeds } from '../support/vdb-feeds.js';
import { TEST_ADMIN_KEY } from '../support/node.js';

const require = createRequire(import.meta.url);
// PouchDB ships no types; it is a test-only peer.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const PouchDB: any = require('pouchdb-core').plugin(require('pouchdb-adapter-memory')).plugin(require('pouchdb-adapter-http')).plugin(require('pouchdb-replication'));

interface ReplicaView {
  group: string;
  db: string;
  role: string;
  leader: string | null;
  applied: number;
  docs: number | null;
  snapshots_loaded: number;
  digest: string | null;
  digest_applied: number | null;
}

t.test('VDB shards as Raft groups across three processes', async (t) => {
  // Logs compacted every 8 entries: the killed node comes back behind the compaction point
  // and loads its replicas by a streamed snapshot transfer.
  const cluster = await TestCluster.start(3, { SERVICE_RAFT_SNAPSHOT_ENTRIES: '8', SERVICE_RAFT_RETAIN_ENTRIES: '2' });
  t.teardown(() => cluster.close());
  await cluster.waitVoters(3);
  const nodes = ['n1', 'n2', 'n3'];

  const tooMany = await cluster.request('n1', 'POST', '/vdb', { body: { name: 'wide', shard_count: 2, placement: { replica_factor: 4 } } });
  t.equal(tooMany.status, 400, `replica_factor above the healthy nodes is a 400 (${tooMany.body.message})`);
  t.match(tooMany.body.message, /replica_factor 4 needs 4 nodes; the cluster has 3 \(n1, n2, n3\)/);

  const created = await cluster.request('n1', 'POST', '/vdb', { body: { name: 'v', shard_count: 4, placement: { replica_factor: 3 } } });
  t.equal(created.status, 201, `created through n1 (${JSON.stringify(created.body)})`);
  t.match(created.body, { ok: true, name: 'v', shard_count: 4, placement: { replica_factor: 3 } });
  const again = await cluster.request('n3', 'POST', '/vdb', { body: { name: 'v' } });
  t.equal(again.status, 409, 'a second create anywhere is a conflict');

  // A shard's replica cannot open beside a plain database of its name (its group would lose that
  // replica, or its leader): such names are refused both ways.
  t.equal((await cluster.request('n1', 'PUT', '/db/v_s2')).status, 409, 'a plain database named like a shard of v is refused');
  // Asked through n2 at once: a node catches its copy of the metadata up before it answers
  // for a name like a shard of a VDB it does not know.
  const future = await cluster.request('n2', 'PUT', '/db/v_s9');
  t.match(future, { status: 409, body: { error: 'conflict', message: /database name "v_s9" is reserved: the cluster's virtual database "v" keeps its shards' replicas under the names v_s<n>/ } }, 'and one a split would take');
  t.equal((await cluster.request('n2', 'PUT', '/db/w_s1')).status, 201, 'a plain database named like a shard of no VDB is made');
  t.equal((await cluster.request('n3', 'PUT', '/db/w_s0')).status, 201);
  const nameClash = await cluster.request('n1', 'POST', '/vdb', { body: { name: 'w', shard_count: 1, placement: { replica_factor: 3 } } });
  t.match(nameClash, { status: 409, body: { error: 'conflict', message: /plain databases hold its shards' names \(w_s0 on n3; w_s1 on n2\)/ } }, `a VDB whose shard names plain databases hold on other nodes is refused, naming them (${nameClash.body.message})`);
  t.equal((await cluster.request('n3', 'GET', '/vdb/w')).status, 404, 'and not made');
  for (const [n, db] of [['n2', 'w_s1'], ['n3', 'w_s0']] as const) t.equal((await cluster.request(n, 'DELETE', `/db/${db}`)).status, 200);
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'w', shard_count: 1, placement: { replica_factor: 3 } } })).status, 201, 'made once they are gone');
  t.equal((await cluster.request('n3', 'PUT', '/vdb/w/one', { body: {} })).status, 201, 'and its shard has a leader');
  t.equal((await cluster.request('n2', 'DELETE', '/vdb/w')).status, 200, 'deleted again (the checks below count v\'s groups)');

  for (const n of nodes) {
    const info = await waitFor(async () => {
      const r = await cluster.request(n, 'GET', '/vdb/v');
      return r.status === 200 ? r.body : undefined;
    }, { what: `${n} to answer for the VDB` });
    t.match(info, { name: 'v', shard_count: 4, total_docs: 0 }, `${n} answers its info`);
  }
  // A node's shard replicas are v's, not databases of its own: `_all_dbs` and /health list the
  // databases users made (they listed v_s0..v_s3 beside them).
  t.equal((await cluster.request('n2', 'PUT', '/db/plain')).status, 201);
  for (const n of nodes) {
    // Each node starts its own replicas once it has applied the VDB: the answers above came
    // from the shards' leaders, and a third replica may still be starting.
    const health = await waitFor(async () => {
      const body = (await cluster.request(n, 'GET', '/health')).body;
      return body.shards?.vdb >= 4 ? body : undefined;
    }, { timeoutMs: 30_000, what: `${n} to host its replicas of v` });
    const listed = await cluster.request(n, 'GET', '/_all_dbs');
    t.notOk(listed.body.some((db: string) => /^v_s\d+$/.test(db)), `${n}'s _all_dbs lists no shard replica (${JSON.stringify(listed.body)})`);
    t.notOk(health.docdb.databases.some((d: { name: string }) => /^v_s\d+$/.test(d.name)), `${n}'s /health lists no shard replica as a database`);
    t.ok(health.shards.vdb >= 4, `${n}'s /health counts its VDB replicas under shards (${health.shards.vdb})`);
  }
  t.same((await cluster.request('n2', 'GET', '/_all_dbs')).body, ['plain'], 'n2 lists the plain database it holds');
  t.equal((await cluster.request('n2', 'DELETE', '/db/plain')).status, 200);
  const assignments = (await cluster.request('n2', 'GET', '/vdb/v/_shards')).body;
  t.equal(assignments.shards.length, 4, 'four assignments');
  for (const s of assignments.shards) {
    t.equal(s.replicas.length, 3, `shard ${s.shard_id} has three replicas`);
    t.ok(nodes.includes(s.primary), `shard ${s.shard_id}'s primary is its Raft leader (${s.primary})`);
    t.equal(s.status, 'active');
  }

  // _bulk_docs through n1; reads and _find through n3; _changes through n2.
  const docs = Array.from({ length: 120 }, (_, i) => ({ _id: `d${String(i).padStart(3, '0')}`, i, colour: ['red', 'green', 'blue'][i % 3] }));
  const bulk = await cluster.request('n1', 'POST', '/vdb/v/_bulk_docs', { body: { docs } });
  t.equal(bulk.status, 201);
  t.same(bulk.body.results.map((r: { id: string }) => r.id), docs.map((d) => d._id), 'results in request order');
  t.ok(bulk.body.results.every((r: { ok: boolean }) => r.ok), 'every document written');
  const revs = new Map<string, string>(bulk.body.results.map((r: { id: string; rev: string }) => [r.id, r.rev]));

  for (const id of ['d000', 'd057', 'd119']) {
    const r = await cluster.request('n3', 'GET', `/vdb/v/${id}`);
    t.equal(r.status, 200, `${id} read through n3`);
    t.equal(r.body._rev, revs.get(id));
  }
  const missing = await cluster.request('n3', 'GET', '/vdb/v/nope');
  t.equal(missing.status, 404, 'a missing document is a 404 through any node');
  const found = await cluster.request('n3', 'POST', '/vdb/v/_find', { body: { where: [{ path: ['colour'], value: 'green' }], limit: 10, offset: 5 } });
  t.equal(found.status, 200, JSON.stringify(found.body).slice(0, 200));
  t.equal(found.body.meta.total, 40, '_find counts every match over the shards');
  t.same(found.body.docs.map((d: { _id: string }) => d._id), docs.filter((d) => d.colour === 'green').slice(5, 15).map((d) => d._id), '_find pages in _id order');
  // `_explain`: each shard's leader plans its part; their estimates add up to the matches.
  const explained = await cluster.request('n2', 'POST', '/vdb/v/_explain', { body: { selector: { colour: 'green' }, limit: 10, skip: 5 } });
  t.equal(explained.status, 200, JSON.stringify(explained.body).slice(0, 200));
  t.match(explained.body, { limit: 10, offset: 5, shard_limit: 15 });
  t.same(explained.body.shards.map((s: { shard_id: number }) => s.shard_id), [0, 1, 2, 3], '_explain: one plan a shard');
  t.equal(explained.body.shards.reduce((n: number, s: { plan: { estimated_postings: number } }) => n + s.plan.estimated_postings, 0), 40, 'the shards\' postings add up to the 40 green ones');
  // CouchDB's forms: sort by _id descending, `fields`, and `$gt: null` for every document.
  const last = await cluster.request('n2', 'POST', '/vdb/v/_find', { body: { selector: { _id: { $gt: null }, colour: 'blue' }, sort: [{ _id: 'desc' }], fields: ['_id', 'i'], limit: 3 } });
  const { bookmark, ...lastPage } = last.body;
  t.same(lastPage, { docs: docs.filter((d) => d.colour === 'blue').slice(-3).reverse().map((d) => ({ _id: d._id, i: d.i })), meta: { total: 40, offset: 0, limit: 3 } }, 'the last blue ids first, cut to their fields');
  // CouchDB's bookmark: the next page through another node, merged from the shard leaders.
  const before = await cluster.request('n1', 'POST', '/vdb/v/_find', { body: { selector: { colour: 'blue' }, sort: [{ _id: 'desc' }], fields: ['_id'], limit: 3, bookmark } });
  t.same(before.body.docs.map((d: { _id: string }) => d._id), docs.filter((d) => d.colour === 'blue').slice(-6, -3).reverse().map((d) => d._id), 'the page after the bookmark');
  t.equal((await cluster.request('n2', 'POST', '/vdb/v/_find', { body: { selector: { colour: { $ne: 'x' } }, allow_fallback: false } })).status, 400, 'allow_fallback: false, no usable index: refused on the shard leaders');
  const scanned = await cluster.request('n3', 'POST', '/vdb/v/_find', { body: { selector: { colour: { $ne: 'red' } }, limit: 5, execution_stats: true } });
  t.match(scanned.body.execution_stats, { total_docs_examined: 120, results_returned: 5 }, 'execution_stats: the shard leaders\' counts, summed over the shards');

  const feed = async (via: string, since?: string) => {
    const seen: string[] = [];
    let cursor = since;
    for (;;) {
      const r = await cluster.request(via, 'GET', `/vdb/v/_changes?limit=25${cursor === undefined ? '' : `&since=${encodeURIComponent(cursor)}`}`);
      if (r.status !== 200) throw new Error(`_changes: ${r.status} ${JSON.stringify(r.body)}`);
      seen.push(...r.body.changes.map((c: { id: string }) => c.id));
      cursor = r.body.last_seq;
      if (r.body.changes.length === 0) return { seen, cursor: cursor! };
    }
  };
  const first = await feed('n2');
  t.equal(first.seen.length, 120, '_changes through n2 lists every document');
  t.equal(new Set(first.seen).size, 120, '... exactly once');

  // Conflicting foreign revisions through different nodes: one winner everywhere.
  const a = await cluster.request('n1', 'POST', '/vdb/v/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'c1', _rev: '1-aaaa', side: 'a' }] } });
  const b = await cluster.request('n2', 'POST', '/vdb/v/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'c1', _rev: '1-bbbb', side: 'b' }] } });
  // A replicator's write answers CouchDB's array, as a database's does.
  t.ok(a.body[0].ok && b.body[0].ok, 'both revisions merged');
  for (const n of nodes) {
    const r = await cluster.request(n, 'GET', '/vdb/v/c1?conflicts=true');
    t.equal(r.body._rev, '1-bbbb', `${n}: the same winner`);
    t.same(r.body._conflicts, ['1-aaaa'], `${n}: the same conflicts`);
  }
  const meta = await cluster.request('n3', 'GET', '/vdb/v/c1?meta=true');
  t.match(meta.body, { _rev: '1-bbbb', _conflicts: ['1-aaaa'], _revs_info: [{ rev: '1-bbbb', status: 'available' }] }, 'meta=true through the shard leader');
  t.equal((await cluster.request('n2', 'GET', '/vdb/v/c1?rev=1-aaaa&latest=true')).body._rev, '1-aaaa', 'latest: a leaf is its own');
  const leavesOfC1 = await cluster.request('n1', 'GET', '/vdb/v/c1?open_revs=all');
  t.same((leavesOfC1.body as { ok: { _rev: string; side: string } }[]).map((e) => [e.ok._rev, e.ok.side]).sort(), [['1-aaaa', 'a'], ['1-bbbb', 'b']], 'open_revs=all: both leaves through the shard leader');
  const clash = await cluster.request('n3', 'POST', '/vdb/v/_find', { body: { selector: { _id: 'c1' }, conflicts: true, fields: ['_id', '_rev', '_conflicts'] } });
  t.same(clash.body.docs, [{ _id: 'c1', _rev: '1-bbbb', _conflicts: ['1-aaaa'] }], '_find with conflicts: true lists the losing leaf');
  const fed = await cluster.request('n3', 'GET', `/vdb/v/_changes?include_docs=true&conflicts=true&filter=_doc_ids&doc_ids=${encodeURIComponent('["c1"]')}`);
  t.same(fed.body.changes.map((c: { id: string; doc: { _conflicts?: string[] } }) => [c.id, c.doc._conflicts]), [['c1', ['1-aaaa']]], '_changes with include_docs and conflicts: the losing leaf, from the shard leader');
  // _all_docs: each shard leader's first rows, merged by id through another node.
  const listed = await cluster.request('n1', 'GET', '/vdb/v/_all_docs?descending=true&skip=2&limit=3&include_docs=true&conflicts=true');
  t.equal(listed.status, 200, JSON.stringify(listed.body).slice(0, 200));
  t.match(listed.body, { total_rows: 121, offset: 2 }, '_all_docs: total_rows counts every shard');
  t.same(listed.body.rows.map((r: { id: string }) => r.id), ['d117', 'd116', 'd115'], 'the third to fifth ids from the end, over four shards');
  t.equal(listed.body.rows[0].value.rev, revs.get('d117'));
  const byKeys = await cluster.request('n3', 'POST', '/vdb/v/_all_docs?include_docs=true&conflicts=true', { body: { keys: ['c1', 'nope', 'd007'] } });
  t.same(byKeys.body.rows.map((r: { key: string; error?: string }) => r.error ?? r.key), ['c1', 'not_found', 'd007'], '_all_docs by keys, in their order');
  t.same(byKeys.body.rows[0].doc._conflicts, ['1-aaaa'], 'conflicts=true on the shard leader');
  const tail = await feed('n3', first.cursor);
  t.same(tail.seen, ['c1'], 'the feed resumes from its cursor on another node');
  // Long-poll, an event stream and a continuous feed through n2 while n1 writes (3 documents).
  await checkVdbFeeds(t, 'v', { call: (m, p, o) => cluster.request('n2', m, p, o), url: cluster.url('n2'), key: TEST_ADMIN_KEY }, (m, p, o) => cluster.request('n1', m, p, o));
  await couchReplication(t, cluster);
  await grammarOracle(t, cluster, nodes);

  // Read-only shards go through the metadata: refused writes on every node, reads go on.
  const shard0 = (await cluster.request('n2', 'PUT', '/vdb/v/_shards/0/_status', { body: { status: 'readonly' } }));
  t.same(shard0.body, { shard_id: 0, status: 'readonly' }, 'shard 0 made read-only through n2');
  const ro = await waitFor(async () => {
    for (const d of docs) {
      const r = await cluster.request('n3', 'PUT', `/vdb/v/${d._id}`, { body: { _rev: revs.get(d._id), ro: true } });
      if (r.status === 403) return { id: d._id, r };
      if (r.status === 201) revs.set(d._id, r.body.rev);
    }
    return undefined;
  }, { what: 'a write to the read-only shard to be refused' });
  t.equal(ro.r.body.error, 'forbidden', `a write to the read-only shard is refused through n3 (${ro.id})`);
  t.equal((await cluster.request('n1', 'GET', `/vdb/v/${ro.id}`)).status, 200, 'reads go on');
  // The refusal above shows n3 applied it; n1 reads the status from the metadata it has applied.
  await waitFor(async () => (await cluster.request('n1', 'GET', '/vdb/v/_shards')).body.shards?.[0]?.status === 'readonly', { timeoutMs: 30_000, what: 'shard 0 read-only on n1' });
  t.pass("n1's assignments show shard 0 read-only");
  t.same((await cluster.request('n3', 'PUT', '/vdb/v/_shards/0/_status', { body: { status: 'active' } })).body, { shard_id: 0, status: 'active' }, 'active again');

  // Import from a plain (node-local) database of the node taking the request.
  t.equal((await cluster.request('n3', 'PUT', '/db/plain')).status, 201);
  t.equal((await cluster.request('n3', 'POST', '/db/plain/_bulk_docs', { body: { docs: [{ _id: 'imp1', x: 1 }, { _id: 'imp2', x: 2 }, { _id: 'd001', x: 3 }] } })).status, 201);
  const imported = await cluster.request('n3', 'POST', '/vdb/v/_import', { body: { source_db: 'plain' } });
  t.match(imported.body, { docs_read: 3, docs_written: 2, docs_skipped: 1, errors: 0, status: 'completed' }, 'import through n3: an existing id is skipped');
  t.equal((await cluster.request('n1', 'GET', '/vdb/v/imp2')).body.x, 2, 'an imported document reads through n1');

  // As in CouchDB 2+, every member's /_active_tasks lists every member's tasks, and an import is
  // cancelled through any node: one running on n3 (small batches: many commits), seen and
  // stopped through the others.
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'imports', shard_count: 2, placement: { replica_factor: 3 } } })).status, 201);
  t.equal((await cluster.request('n3', 'PUT', '/db/bulk')).status, 201);
  t.equal((await cluster.request('n3', 'POST', '/db/bulk/_bulk_docs', { body: { docs: Array.from({ length: 6000 }, (_, i) => ({ _id: `b${i}`, i })) } })).status, 201);
  const importing = cluster.request('n3', 'POST', '/vdb/imports/_import', { body: { source_db: 'bulk', batch_size: 5 } });
  const importListed = await waitFor(async () => ((await cluster.request('n1', 'GET', '/_active_tasks')).body as { type: string; vdb?: string }[]).find((task) => task.type === 'vdb_import' && task.vdb === 'imports'), { timeoutMs: 20_000, intervalMs: 20, what: "n3's import in n1's /_active_tasks" });
  t.match(importListed, { type: 'vdb_import', node: 'n3', vdb: 'imports', source_db: 'bulk', total_docs: 6000 }, "n3's import is listed by n1, naming n3");
  const cancelled = await cluster.request('n2', 'DELETE', '/vdb/imports/_import');
  t.same([cancelled.status, cancelled.body], [200, { ok: true, cancelled: 1 }], 'cancelled through n2');
  const stopped = await importing;
  t.match([stopped.status, stopped.body], [200, { status: 'cancelled' }], `the import answers cancelled (${stopped.body.docs_written} of 6000 written)`);
  t.ok(stopped.body.docs_read < 6000, 'before the end');
  const none = await cluster.request('n1', 'DELETE', '/vdb/imports/_import');
  t.same([none.status, none.body.message], [404, 'no import into VDB "imports" is running on any member'], 'none left anywhere');
  t.notOk(((await cluster.request('n2', 'GET', '/_active_tasks')).body as { type: string }[]).some((task) => task.type === 'vdb_import'), 'and none listed');
  t.equal((await cluster.request('n1', 'DELETE', '/vdb/imports')).status, 200);

  // An attachment written through n1 (one log entry carrying its bytes), read through n2 and n3 (their leaders), then removed.
  const blob = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7) % 251));
  const imp1 = await cluster.request('n1', 'GET', '/vdb/v/imp1');
  const attached = await cluster.request('n1', 'PUT', `/vdb/v/imp1/scan.bin?rev=${imp1.body._rev}`, { body: blob, raw: true, headers: { 'content-type': 'application/x-scan' } });
  t.same([attached.status, attached.body.length], [201, blob.length], 'attachment written through n1');
  t.equal((await cluster.request('n1', 'PUT', `/vdb/v/imp1/scan.bin?rev=${imp1.body._rev}`, { body: blob, raw: true })).status, 409, 'a stale rev is a 409');
  for (const n of ['n2', 'n3']) {
    const r = await fetch(`${cluster.url(n)}/vdb/v/imp1/scan.bin`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    t.same([r.status, r.headers.get('content-type'), r.headers.get('content-length')], [200, 'application/x-scan', String(blob.length)], `${n}: status and headers`);
    t.ok(Buffer.from(await r.arrayBuffer()).equals(blob), `${n}: the same bytes`);
  }
  const detached = await cluster.request('n3', 'DELETE', `/vdb/v/imp1/scan.bin?rev=${attached.body.rev}`);
  t.match([detached.status, detached.body], [200, { ok: true, id: 'imp1', rev: /^3-/ }], 'attachment removed through n3');
  t.equal((await cluster.request('n2', 'GET', '/vdb/v/imp1/scan.bin')).status, 404, 'gone through n2');
  t.equal((await cluster.request('n2', 'POST', '/vdb/v/_shards/9/_split')).status, 404, 'split of an unknown shard is a 404 (splits and merges: vdb-rebalance.test.ts)');

  // An updated document keeps its older body until compaction.
  const old = revs.get('d000')!;
  const up = await cluster.request('n1', 'PUT', '/vdb/v/d000', { body: { _rev: old, i: 0, colour: 'red', updated: true } });
  t.equal(up.status, 201, 'd000 updated');
  t.equal((await cluster.request('n2', 'GET', `/vdb/v/d000?rev=${old}`)).status, 200, 'its older revision is readable before compaction');

  // kill -9 the primary of a shard while writes go on.
  const shards = (await cluster.request('n1', 'GET', '/vdb/v/_shards')).body.shards as { shard_id: number; primary: string }[];
  const victim = shards[0]!.primary;
  const writer = nodes.find((n) => n !== victim)!;
  const reader = nodes.find((n) => n !== victim && n !== writer)!;
  const acked = new Map<string, string>();
  let stop = false;
  let failed = 0;
  let ackedAfterKill = 0;
  let killed = false;
  const writing = (async () => {
    for (let i = 0; !stop; i++) {
      const id = `w${i}`;
      const r = await cluster.request(writer, 'PUT', `/vdb/v/${id}`, { body: { i } }).catch(() => undefined);
      if (r?.status === 201) {
        acked.set(id, r.body.rev);
        if (killed) ackedAfterKill++;
      } else failed++;
    }
  })();
  await waitFor(async () => acked.size >= 30, { what: 'writes before the kill' });
  await cluster.kill9(victim);
  killed = true;
  await waitFor(async () => ackedAfterKill >= 40, { timeoutMs: 30_000, what: 'writes to resume after the kill' });
  stop = true;
  await writing;
  t.ok(ackedAfterKill >= 40, `writes resumed after ${victim} was killed (${failed} failed during the election)`);
  const moved = (await cluster.request(reader, 'GET', '/vdb/v/_shards')).body.shards as { primary: string | null }[];
  t.ok(moved.every((s) => s.primary !== null && s.primary !== victim), 'every shard has a new primary');
  // The dead node's replicas say so once the cluster counts it down, whatever lag the leader last saw.
  const downView = await waitFor(async () => {
    const [shardsNow, replication] = await Promise.all([cluster.request(reader, 'GET', '/vdb/v/_shards'), cluster.request(reader, 'GET', '/vdb/v/_replication')]);
    return (shardsNow.body.shards as { down: string[] }[]).every((s) => s.down.includes(victim)) ? { shardsNow: shardsNow.body, replication: replication.body } : undefined;
  }, { timeoutMs: 15_000, what: `${victim} counted down in the VDB's shard views` });
  t.ok((downView.shardsNow.shards as { down: string[] }[]).every((s) => s.down.length === 1), 'only the dead node is down');
  const tasks = (downView.replication.shards as { replication_tasks: { target: string; status: string }[] }[]).flatMap((s) => s.replication_tasks);
  t.ok(tasks.filter((task) => task.target === victim).length === 4 && tasks.every((task) => (task.target === victim) === (task.status === 'down')), `every task to ${victim} is down, none other: ${JSON.stringify(tasks)}`);

  for (const [id, rev] of acked) {
    const r = await cluster.request(reader, 'GET', `/vdb/v/${id}`);
    if (r.status !== 200 || r.body._rev !== rev) t.fail(`acknowledged write ${id} is gone or changed (${r.status} ${r.body._rev})`);
  }
  t.pass(`all ${acked.size} acknowledged writes readable through ${reader}`);

  await cluster.startNode(victim);
  // Compaction is a log entry: every replica drops the older body at the same index.
  t.equal((await cluster.request(reader, 'POST', '/vdb/v/_compact')).status, 202, 'compaction accepted');
  await waitFor(async () => ((await cluster.request(writer, 'GET', `/vdb/v/d000?rev=${old}`)).status === 404 ? true : undefined), { what: 'the older body to be compacted away' });
  t.pass('the older revision is gone after compaction');
  const converged = await waitFor(
    async () => {
      const views = await Promise.all(nodes.map(async (n) => (await cluster.request(n, 'GET', '/_cluster/vdb-shards')).body.replicas as ReplicaView[]));
      const byGroup = new Map<string, ReplicaView[]>();
      for (const v of views.flat()) byGroup.set(v.group, [...(byGroup.get(v.group) ?? []), v]);
      if (byGroup.size !== 4) return undefined;
      for (const replicas of byGroup.values()) {
        if (replicas.length !== 3) return undefined;
        if (new Set(replicas.map((r) => `${r.digest_applied}/${r.digest}`)).size !== 1) return undefined;
      }
      return byGroup;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'every replica of every shard at one digest' },
  );
  t.equal(converged.size, 4, `the restarted ${victim} caught up: every shard's three replicas agree on digest and applied index`);
  const loaded = [...converged.values()].flat().filter((r) => r.snapshots_loaded > 0);
  t.ok(loaded.length > 0, `the restarted node loaded ${loaded.length} replica(s) from another replica's snapshot`);
  const total = [...converged.values()].reduce((n, rs) => n + (rs[0]!.docs ?? 0), 0);
  t.equal(total, 120 + 1 + 2 + 30 + 1 + 1 + 1 + 1 + 5 + 2 + acked.size, 'the replicas hold every document: the bulk, the conflict, the fed ones, the replicated ones, the imported ones and the acknowledged writes');

  // Leader balancing: the restarted node came back leading nothing (its shards elected leaders
  // elsewhere while it was down); the leaders hand it shards until no node leads two more than
  // another, here 2/1/1.
  const leaderCounts = await waitFor(async () => {
    const now = (await cluster.request(reader, 'GET', '/vdb/v/_shards')).body.shards as { primary: string | null }[];
    const counts = nodes.map((n) => now.filter((s) => s.primary === n).length);
    return now.every((s) => s.primary !== null) && Math.max(...counts) - Math.min(...counts) <= 1 ? counts : undefined;
  }, { timeoutMs: 30_000, intervalMs: 200, what: 'the shard leaders spread over the three nodes' });
  t.ok(leaderCounts[nodes.indexOf(victim)]! >= 1, `the restarted ${victim} leads shards again (leaders per node ${nodes.map((n, i) => `${n}:${leaderCounts[i]}`).join(' ')})`);
  // Every node's admin view counts them too (a peer's count from its link heartbeats).
  const viewed = await waitFor(async () => {
    const views = await Promise.all(nodes.map(async (n) => ((await cluster.request(n, 'GET', '/_cluster/nodes')).body.nodes as { name: string; shard_leaders: number | null }[]).map((v) => v.shard_leaders)));
    return views.every((v) => JSON.stringify(v) === JSON.stringify(leaderCounts)) ? views : undefined;
  }, { timeoutMs: 10_000, what: `/_cluster/nodes to show the leader counts ${leaderCounts.join('/')} on every node` });
  t.equal(viewed.length, 3, 'every node shows every node\'s shard leaderships');
  const transfers = await Promise.all(nodes.map(async (n) => (await cluster.request(n, 'GET', '/metrics')).text ?? ''));
  t.match(transfers.join('\n'), /firkin_shard_leader_transfers_total\{kind="dshard"\} [1-9]/, 'the transfers are counted');

  // Plain databases stay node-local: a shard's replica database refuses direct writes.
  const replicaDb = [...converged.values()][0]![0]!.db;
  const direct = await cluster.request(victim, 'PUT', `/db/${replicaDb}/x`, { body: {} });
  t.equal(direct.status, 403, `a replica database refuses a direct write (${direct.body.message})`);

  const deleted = await cluster.request('n3', 'DELETE', '/vdb/v');
  t.equal(deleted.status, 200);
  for (const n of nodes) {
    await waitFor(async () => ((await cluster.request(n, 'GET', '/_cluster/vdb-shards')).body.replicas.length === 0 ? true : undefined), { what: `${n} to drop its replicas` });
    t.equal((await cluster.request(n, 'GET', '/vdb/v')).status, 404, `${n}: gone`);
  }
});

/**
 * The `_find` grammar oracle (test/support/find-oracle.ts) on a VDB of 3 shards replicated on
 * the three nodes, each request through the next node: the merged pages, totals and bookmarks
 * of the shard leaders' answers must be brute force's. Rounds share the VDB (ids prefixed by
 * the round); each clears its documents for the next.
 */
async function grammarOracle(t: Test, cluster: TestCluster, nodes: readonly string[]): Promise<void> {
  const created = await cluster.request('n2', 'POST', '/vdb', { body: { name: 'g', shard_count: 3, placement: { replica_factor: 3 } } });
  t.equal(created.status, 201, 'the oracle\'s VDB');
  let turn = 0;
  const send: Send = (method, path, body) => cluster.request(nodes[turn++ % nodes.length]!, method, path, body === undefined ? {} : { body });
  let round = 0;
  let hits = 0;
  await fc.assert(
    fc.asyncProperty(arbFindCase, async (c) => {
      const r = await findRound(send, '/vdb/g', c, `r${round++}-`);
      if (r.matched > 0) hits++;
      if (r.mismatch !== undefined) throw new Error(r.mismatch);
      const cleared = await send('POST', '/vdb/g/_bulk_docs', { docs: [...r.live].map(([_id, _rev]) => ({ _id, _rev, _deleted: true })) });
      if (cleared.status !== 201 || cleared.body.results.some((x: { ok: boolean }) => !x.ok)) throw new Error(`clearing the round answered ${cleared.status}: ${JSON.stringify(cleared.body)}`);
    }),
    fcParams(50),
  );
  t.ok(hits > 0, `_find across the cluster answered brute force's pages (${round} rounds, ${hits} with matches)`);
  t.equal((await cluster.request('n1', 'DELETE', '/vdb/g')).status, 200);
}

/**
 * CouchDB's replication protocol on the clustered VDB `v`: PouchDB pushes through n2 and pulls
 * through n3, conflicts included; its checkpoint (a `_local` document, written through a
 * shard's log) resumes the next pull; `_local` documents through different nodes; Firkin's own
 * replicator writes a node-local database into the VDB by its URL.
 */
async function couchReplication(t: Test, cluster: TestCluster): Promise<void> {
  const remote = (n: string) =>
    new PouchDB(`${cluster.url(n)}/vdb/v`, {
      fetch: (url: string, opts: { headers: Headers }) => {
        opts.headers.set('Authorization', `Bearer ${TEST_ADMIN_KEY}`);
        return PouchDB.fetch(url, opts);
      },
    });
  const mobile = new PouchDB(`mobile-${Date.now()}`, { adapter: 'memory' });
  await mobile.bulkDocs(Array.from({ length: 30 }, (_, i) => ({ _id: `p${String(i).padStart(2, '0')}`, i })));
  const push = await mobile.replicate.to(remote('n2'));
  t.equal(push.docs_written, 30, 'PouchDB pushed 30 documents through n2');
  t.equal((await cluster.request('n3', 'GET', '/vdb/v/p07')).body.i, 7, '... readable through n3');

  const copy = new PouchDB(`copy-${Date.now()}`, { adapter: 'memory' });
  const pull = await copy.replicate.from(remote('n3'));
  t.equal(pull.ok, true);
  const total = (await cluster.request('n1', 'GET', '/vdb/v')).body.total_docs as number;
  t.equal((await copy.info()).doc_count, total, `PouchDB pulled every document through n3 (${total})`);
  const c1 = await copy.get('c1', { conflicts: true });
  t.equal(c1._rev, '1-bbbb', 'the same winner in PouchDB');
  t.same(c1._conflicts, ['1-aaaa'], 'the losing leaf travelled too (style=all_docs)');
  t.equal((await cluster.request('n1', 'PUT', '/vdb/v/after-pull', { body: { n: 1 } })).status, 201);
  const again = await copy.replicate.from(remote('n3'));
  t.equal(again.docs_read, 1, 'the next pull resumed from its checkpoint: one new document read');
  // Paged as PouchDB pages (each page from its last change's seq): one write's entries share a
  // sequence across shards, so a page cut inside them must not skip the rest.
  const paged: string[] = [];
  for (let since = '0'; ; ) {
    const page = await cluster.request('n2', 'GET', `/vdb/v/_changes?style=all_docs&limit=7&since=${encodeURIComponent(since)}`);
    if (page.body.results.length === 0) break;
    paged.push(...page.body.results.map((c: { id: string }) => c.id));
    since = page.body.results.at(-1).seq;
  }
  t.equal(new Set(paged).size, total + 1, `paged by each page's last change seq, every document once or more (${paged.length} changes)`);

  // Filtered pulls through n1: CouchDB's `_doc_ids` and `_selector`, applied on each shard's leader.
  const only = new PouchDB(`only-${Date.now()}`, { adapter: 'memory' });
  await only.replicate.from(remote('n1'), { doc_ids: ['p03', 'd007', 'c1'] });
  t.same((await only.allDocs()).rows.map((r: { id: string }) => r.id), ['c1', 'd007', 'p03'], 'doc_ids: only those documents, over three shards');
  t.same((await only.get('c1', { conflicts: true }))._conflicts, ['1-aaaa'], '... with their conflicts');
  const picked = new PouchDB(`picked-${Date.now()}`, { adapter: 'memory' });
  await picked.replicate.from(remote('n1'), { selector: { i: { $gte: 27 }, colour: { $exists: false } } });
  t.same((await picked.allDocs()).rows.map((r: { id: string }) => r.id), ['p27', 'p28', 'p29'], 'selector: only the matching documents');
  // A filter that matches nothing moves its cursor past what it examined; the next match still comes.
  const none = await cluster.request('n2', 'POST', '/vdb/v/_changes?filter=_doc_ids&style=all_docs', { body: { doc_ids: ['later'] } });
  t.same(none.body.results, [], 'a filter matching nothing');
  const start = (await cluster.request('n2', 'GET', '/vdb/v/_changes?limit=0')).body.last_seq;
  t.not(none.body.last_seq, start, 'its cursor moved past the documents it examined');
  t.equal((await cluster.request('n1', 'PUT', '/vdb/v/later', { body: {} })).status, 201);
  const next = await cluster.request('n3', 'POST', `/vdb/v/_changes?filter=_doc_ids&style=all_docs&since=${encodeURIComponent(none.body.last_seq)}`, { body: { doc_ids: ['later'] } });
  t.same(next.body.results.map((c: { id: string }) => c.id), ['later'], '... and the next match comes from it');

  // `_local` documents: written through one node's shard log, read and checked through the others.
  const put = await cluster.request('n1', 'PUT', '/vdb/v/_local/probe', { body: { at: 1 } });
  t.match(put, { status: 201, body: { ok: true, id: '_local/probe', rev: '0-1' } });
  t.match((await cluster.request('n2', 'GET', '/vdb/v/_local/probe')).body, { _id: '_local/probe', _rev: '0-1', at: 1 }, '_local read through n2');
  t.equal((await cluster.request('n3', 'PUT', '/vdb/v/_local/probe', { body: { at: 2, _rev: '0-7' } })).status, 409, 'a stale _rev is a conflict through n3');
  t.equal((await cluster.request('n3', 'PUT', '/vdb/v/_local/probe', { body: { at: 2, _rev: '0-1' } })).body.rev, '0-2');
  t.match((await cluster.request('n1', 'GET', '/vdb/v/_local/probe')).body, { _rev: '0-2', at: 2 });

  // CouchDB's info fields: update_seq is the feed's end (a cursor), doc_count the live documents.
  const vinfo = (await cluster.request('n3', 'GET', '/vdb/v')).body;
  t.match(vinfo, { db_name: 'v', doc_count: vinfo.total_docs });
  t.same((await cluster.request('n1', 'GET', `/vdb/v/_changes?style=all_docs&since=${encodeURIComponent(vinfo.update_seq)}`)).body.results, [], 'nothing after update_seq');
  // CouchDB's continuous feed through n2 while n3 writes: the change as a line, then last_seq.
  const following = fetch(`${cluster.url('n2')}/vdb/v/_changes?feed=continuous&style=all_docs&limit=1&since=${encodeURIComponent(vinfo.update_seq)}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } }).then((r) => r.text());
  t.equal((await cluster.request('n3', 'PUT', '/vdb/v/followed', { body: {} })).status, 201);
  const lines = (await following).trim().split('\n').map((l) => JSON.parse(l));
  t.match(lines, [{ id: 'followed', seq: /^c1-/, changes: [{ rev: /^1-/ }] }, { last_seq: /^c1-/ }], 'continuous: the change, then last_seq');

  // Firkin's replicator: a node-local database into the VDB by its URL (through another node).
  t.equal((await cluster.request('n1', 'PUT', '/db/outside')).status, 201);
  await cluster.request('n1', 'POST', '/db/outside/_bulk_docs', { body: { docs: Array.from({ length: 5 }, (_, i) => ({ _id: `o${i}`, i })) } });
  const rep = await cluster.request('n1', 'POST', '/db/outside/_replicate', { body: { target: `${cluster.url('n2')}/vdb/v`, auth: { bearer_token: TEST_ADMIN_KEY } } });
  t.equal(rep.status, 200, `_replicate into the VDB's URL (${JSON.stringify(rep.body).slice(0, 200)})`);
  t.equal((await cluster.request('n3', 'GET', '/vdb/v/o3')).body.i, 3, 'a replicated document read through n3');
  const missing = await cluster.request('n1', 'POST', '/db/outside/_replicate', { body: { target: `${cluster.url('n2')}/vdb/nope`, create_target: true, auth: { bearer_token: TEST_ADMIN_KEY } } });
  t.equal(missing.status, 404, 'create_target does not create a VDB');
  t.match(missing.body.message, /create_target does not create a virtual database: create it with POST \/vdb/);
}
