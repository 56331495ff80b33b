// Split and merge of a clustered VDB as jobs of the metadata group, across three real node
// processes: a VDB of 2 shards, replica_factor 3, with documents that have revision
// histories, a conflict, a deletion and attachments; two writers run through a split of
// shard 1 (its coordinator, the metadata leader, killed -9 during the copy and the job resumed
// by the next leader) and then a merge of shard 0 into shard 1. Afterwards every acknowledged write is
// present exactly once with its history, attachments are byte-equal, every replica of every
// shard has one digest, and `_changes` from a cursor taken before both still reaches every
// document. Replication checkpoints (`_local`) move with their range, revisions kept: one
// written all along is never refused, and each written before both jobs reads as it was.
import t from 'tap';
import { compareStrings } from '../../src/core/keys.js';
import { TEST_ADMIN_KEY } from '../support/node.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface ReplicaView {
  group: string;
  digest: string | null;
  digest_applied: number | null;
  docs: number | null;
  local_docs: number | null;
}

t.test('VDB split and merge under writes, across three processes', async (t) => {
  const cluster = await TestCluster.start(3);
  t.teardown(() => cluster.close());
  await cluster.waitVoters(3);
  const nodes = ['n1', 'n2', 'n3'];

  const created = await cluster.request('n1', 'POST', '/vdb', { body: { name: 'rb', shard_count: 2, placement: { replica_factor: 3 } } });
  t.equal(created.status, 201, JSON.stringify(created.body));

  // Seed: 60 documents, every third updated once (a history of two), one conflict, one deletion, attachments.
  const acked = new Map<string, { rev: string; gen: number }>();
  const seed = Array.from({ length: 60 }, (_, i) => ({ _id: `s${String(i).padStart(2, '0')}`, i }));
  const bulk = await cluster.request('n1', 'POST', '/vdb/rb/_bulk_docs', { body: { docs: seed } });
  t.ok(bulk.body.results.every((r: { ok: boolean }) => r.ok), 'seeded');
  for (const r of bulk.body.results as { id: string; rev: string }[]) acked.set(r.id, { rev: r.rev, gen: 1 });
  for (const [i, d] of seed.entries()) {
    if (i % 3 !== 0) continue;
    const r = await cluster.request('n2', 'PUT', `/vdb/rb/${d._id}`, { body: { i, updated: true, _rev: acked.get(d._id)!.rev } });
    t.equal(r.status, 201);
    acked.set(d._id, { rev: r.body.rev, gen: 2 });
  }
  const blobs = new Map<string, Buffer>();
  for (const id of ['s01', 's22', 's44', 's58']) {
    const blob = Buffer.from(Array.from({ length: 50_000 }, (_, k) => (k * (id.charCodeAt(2) + 3)) % 256));
    const r = await cluster.request('n3', 'PUT', `/vdb/rb/${id}/blob.bin?rev=${acked.get(id)!.rev}`, { body: blob, raw: true, headers: { 'content-type': 'application/x-test' } });
    t.equal(r.status, 201, `attachment on ${id}`);
    acked.set(id, { rev: r.body.rev, gen: acked.get(id)!.gen + 1 });
    blobs.set(id, blob);
  }
  await cluster.request('n1', 'POST', '/vdb/rb/_bulk_docs', { body: { new_edits: false, docs: [{ _id: 'cf', _rev: '1-aaaa', side: 'a' }, { _id: 'cf', _rev: '1-bbbb', side: 'b' }] } });
  const gone = await cluster.request('n1', 'PUT', '/vdb/rb/gone', { body: { x: 1 } });
  t.equal((await cluster.request('n1', 'DELETE', `/vdb/rb/gone?rev=${gone.body.rev}`)).status, 200);

  const feed = async (via: string, since?: string) => {
    const seen: string[] = [];
    let cursor = since;
    for (;;) {
      const r = await cluster.request(via, 'GET', `/vdb/rb/_changes?limit=50${cursor === undefined ? '' : `&since=${encodeURIComponent(cursor)}`}`);
      if (r.status !== 200) throw new Error(`_changes: ${r.status} ${JSON.stringify(r.body)}`);
      seen.push(...r.body.changes.map((c: { id: string }) => c.id));
      cursor = r.body.last_seq;
      if (r.body.changes.length === 0) return { seen, cursor: cursor! };
    }
  };
  // Checkpoints at their second revision, spread over the hash space: they move with their range.
  const cps = Array.from({ length: 16 }, (_, i) => `cp${i}`);
  for (const id of cps) {
    await cluster.request('n1', 'PUT', `/vdb/rb/_local/${id}`, { body: { seq: 1 } });
    t.equal((await cluster.request('n2', 'PUT', `/vdb/rb/_local/${id}`, { body: { seq: 2, _rev: '0-1' } })).status, 201);
  }
  const before = await feed('n2');
  t.equal(new Set(before.seen).size, 62, 'the feed lists the seeded documents, the conflict and the deletion');

  // Errors first: unknown shard, not adjacent, read-only.
  t.equal((await cluster.request('n2', 'POST', '/vdb/rb/_shards/7/_split')).status, 404, 'split of an unknown shard: 404');
  t.equal((await cluster.request('n2', 'POST', '/vdb/rb/_shards/0/_merge', { body: { target_shard: 7 } })).status, 404, 'merge into an unknown shard: 404');
  await cluster.request('n2', 'PUT', '/vdb/rb/_shards/0/_status', { body: { status: 'readonly' } });
  const ro = await cluster.request('n3', 'POST', '/vdb/rb/_shards/0/_split');
  t.same([ro.status, ro.body.error], [409, 'conflict'], 'a read-only shard does not split');
  await cluster.request('n2', 'PUT', '/vdb/rb/_shards/0/_status', { body: { status: 'active' } });
  for (const n of nodes) {
    await waitFor(async () => ((await cluster.request(n, 'GET', '/vdb/rb/_shards')).body.shards[0].status === 'active' ? true : undefined), { what: `${n} to see shard 0 active again` });
  }

  // Two writers, through the nodes that do not lead the metadata group (it is killed during
  // the split): new documents, every third updated right after (a history of two).
  const metaLeader = await cluster.leader();
  const [w1, w2] = nodes.filter((n) => n !== metaLeader) as [string, string];
  let running = true;
  const failures: string[] = [];
  // Creates answered 503 or not at all: such a write may still commit (the answer says so).
  const maybeCommitted = new Set<string>();
  const writer = (via: string, prefix: string) =>
    (async () => {
      for (let i = 0; running; i++) {
        const id = `${prefix}${i}`;
        const r = await cluster.request(via, 'PUT', `/vdb/rb/${id}`, { body: { i } }).catch((e: Error) => ({ status: 0, body: { message: e.message } }) as never);
        if (r.status !== 201) {
          failures.push(`${id}: ${r.status} ${JSON.stringify(r.body)}`);
          if (r.status === 503 || r.status === 0) maybeCommitted.add(id);
          continue;
        }
        acked.set(id, { rev: r.body.rev, gen: 1 });
        if (i % 3 !== 0) continue;
        const u = await cluster.request(via, 'PUT', `/vdb/rb/${id}`, { body: { i, again: true, _rev: r.body.rev } }).catch((e: Error) => ({ status: 0, body: { message: e.message } }) as never);
        if (u.status === 201) acked.set(id, { rev: u.body.rev, gen: 2 });
        else failures.push(`${id} update: ${u.status} ${JSON.stringify(u.body)}`);
      }
    })();
  // A lister beside them: every `_all_docs` through w2 lists ids once, in order, whatever the
  // split and the merge are doing (a shard switched away mid-listing restarts the cursors).
  const listingFaults: string[] = [];
  let listings = 0;
  const lister = (async () => {
    while (running) {
      const r = await cluster.request(w2, 'GET', '/vdb/rb/_all_docs').catch((e: Error) => ({ status: 0, body: { message: e.message } }) as never);
      if (r.status !== 200) {
        if (r.status !== 503) listingFaults.push(`${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        continue;
      }
      listings++;
      const ids = (r.body.rows as { id: string }[]).map((row) => row.id);
      if (ids.some((id, i) => i > 0 && compareStrings(ids[i - 1]!, id) >= 0)) listingFaults.push(`a listing of ${ids.length} out of order or with an id twice`);
    }
  })();
  // A replication checkpoint written all along (`_local`, a `local` entry in its shard's log),
  // each write naming the revision it last saw: a split or merge carries it as it is, and a
  // write routed by an older map is refused by the fence and routed again, never lost or
  // failed. A 409 is a fault, unless the write before it was a 503 (the kill's election: it
  // may have been applied, so the revision named next is behind).
  const localFaults: string[] = [];
  let checkpoints = 0;
  let lastCheckpoint = -1;
  const checkpointer = (async () => {
    let rev: string | undefined;
    let ambiguous = false;
    for (let n = 0; running; n++) {
      const r = await cluster.request(w1, 'PUT', '/vdb/rb/_local/checkpoint', { body: { n, ...(rev === undefined ? {} : { _rev: rev }) } }).catch((e: Error) => ({ status: 0, body: { message: e.message } }) as never);
      if (r.status === 201) {
        rev = r.body.rev;
        checkpoints++;
        lastCheckpoint = n;
        ambiguous = false;
      } else if (r.status === 409 && ambiguous) {
        const g = await cluster.request(w1, 'GET', '/vdb/rb/_local/checkpoint');
        rev = g.status === 200 ? g.body._rev : undefined;
        if (g.status === 200) lastCheckpoint = g.body.n;
      } else if (r.status === 503 || r.status === 0) ambiguous = true;
      else localFaults.push(`${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    }
  })();
  const writers = [writer(w1, 'a'), writer(w2, 'b'), lister, checkpointer];
  const writes = () => [...acked.keys()].filter((k) => /^[ab]/.test(k)).length;
  await waitFor(() => writes() >= 20, { timeoutMs: 20_000, what: 'writes before the split' });

  // Split shard 1; while it runs, the job shows in /_cluster/jobs and a second job is refused;
  // the metadata leader that runs it is killed -9, and the next one resumes it.
  const split = cluster.request(w1, 'POST', '/vdb/rb/_shards/1/_split');
  // CouchDB's _active_tasks on another node lists it too, with its progress.
  const active = waitFor(async () => {
    const tasks = (await cluster.request(w2, 'GET', '/_active_tasks')).body as { type: string; target?: string }[];
    return tasks.find((task) => task.type === 'cluster_vdb_rebalance' && task.target === 'rb');
  }, { timeoutMs: 20_000, intervalMs: 5, what: 'the split in /_active_tasks' });
  const shown = await waitFor(async () => {
    const jobs = (await cluster.request(w2, 'GET', '/_cluster/jobs')).body.jobs as { kind: string; target: string; step: string; vdb?: { copied: number } }[];
    return jobs.find((j) => j.kind === 'vdb-rebalance' && j.target === 'rb');
  }, { timeoutMs: 20_000, intervalMs: 5, what: 'the split job in /_cluster/jobs' });
  t.match(shown, { kind: 'vdb-rebalance', vdb: { op: 'split', source: 1, target: 2 } }, `the split shows in /_cluster/jobs (${shown.step})`);
  t.match(await active, { type: 'cluster_vdb_rebalance', node: w2, target: 'rb', step: String, vdb: { op: 'split', source: 1, target: 2 }, started_on: Number, updated_on: Number }, 'and in /_active_tasks');
  const second = await cluster.request(w2, 'POST', '/vdb/rb/_shards/0/_split');
  t.same([second.status, second.body.error], [409, 'conflict'], 'another job on the VDB is a 409 while one runs');
  await cluster.kill9(metaLeader);
  const killedAt = (await cluster.request(w2, 'GET', '/_cluster/jobs')).body.jobs.find((j: { kind: string }) => j.kind === 'vdb-rebalance');
  t.pass(`killed the coordinating metadata leader ${metaLeader} (job at ${killedAt?.step ?? '?'})`);
  const splitDone = await split;
  await cluster.startNode(metaLeader);
  await cluster.waitMembers();
  await waitFor(async () => ((await cluster.request(metaLeader, 'GET', '/vdb/rb')).status === 200 ? true : undefined), { timeoutMs: 20_000, what: `${metaLeader} to serve the VDB again` });
  t.equal(splitDone.status, 200, JSON.stringify(splitDone.body));
  t.match(splitDone.body, { ok: true, shard_id: 1, new_shard_id: 2 });
  t.ok(splitDone.body.docs_moved > 0, `the split copied ${splitDone.body.docs_moved} documents`);
  // The split answered once w1 applied its end; n3 reads the map from the metadata it has applied.
  const afterSplit = await waitFor(async () => {
    const body = (await cluster.request('n3', 'GET', '/vdb/rb/_shards')).body;
    return body.ranges?.length === 3 ? body : undefined;
  }, { timeoutMs: 30_000, what: 'n3 to apply the split' });
  t.same(afterSplit.ranges.map((r: { shard_id: number }) => r.shard_id), [0, 1, 2], 'three shards after the split');
  const atSplit = writes();
  await waitFor(() => writes() >= atSplit + 20, { timeoutMs: 20_000, what: 'writes between the split and the merge' });
  // Through a node that stayed up: the restarted one may still be catching up its metadata
  // under load (seen: a 504 "committed but not applied yet" there on a loaded machine).
  t.equal((await cluster.request(w1, 'POST', '/vdb/rb/_shards/0/_merge', { body: { target_shard: 2 } })).status, 409, 'shards 0 and 2 are not adjacent: 409');

  const merge = await cluster.request(w1, 'POST', '/vdb/rb/_shards/0/_merge', { body: { target_shard: 1 } });
  t.equal(merge.status, 200, JSON.stringify(merge.body));
  t.match(merge.body, { ok: true, shard_id: 0, target_shard: 1 });
  const atMerge = writes();
  await waitFor(() => writes() >= atMerge + 10, { timeoutMs: 20_000, what: 'writes after the merge' });
  running = false;
  await Promise.all(writers);
  t.same(listingFaults, [], `every listing during the split and the merge in order, each id once (${listings} listings)`);
  t.same(localFaults, [], `every checkpoint write answered 201, or 503 during the kill's elections (${checkpoints} written)`);
  t.ok(checkpoints > 10, 'checkpoints were written all along');
  t.match((await cluster.request(w2, 'GET', '/vdb/rb/_local/checkpoint')).body, { n: lastCheckpoint }, 'the last checkpoint written is the one read, through another node');
  // Only the kill may fail a write (a shard whose leader it was elects a new one): 503s, no other error.
  t.ok(failures.every((f) => / 503 /.test(f)), `no write failed during the split and the merge but for the kill's elections (${writes()} written, ${failures.length} refused with 503: ${failures.slice(0, 2).join('; ')})`);

  // As after the split: the merge answered once w1 applied its end, n2 may apply it later.
  const shards = await waitFor(async () => {
    const body = (await cluster.request('n2', 'GET', '/vdb/rb/_shards')).body;
    return body.ranges !== undefined && !body.ranges.some((r: { shard_id: number }) => r.shard_id === 0) ? body : undefined;
  }, { timeoutMs: 30_000, what: 'n2 to apply the merge' });
  t.same(shards.ranges.map((r: { shard_id: number }) => r.shard_id), [1, 2], 'shards 1 and 2 remain');
  t.same(shards.ranges.map((r: { start_hash: number; end_hash: number }) => [r.start_hash, r.end_hash]), [[0, 3221225471], [3221225472, 4294967295]], 'their ranges tile the hash space');

  // Every acknowledged write, once, with its history; attachments byte-equal; the conflict and the deletion kept.
  const missing: string[] = [];
  for (const [id, want] of acked) {
    const r = await cluster.request(nodes[id.length % 3]!, 'GET', `/vdb/rb/${id}?revs=true`);
    if (r.status !== 200 || r.body._rev !== want.rev || r.body._revisions?.ids?.length !== want.gen) missing.push(`${id}: ${r.status} ${r.body._rev} (want ${want.rev}, ${want.gen} revisions; got ${r.body._revisions?.ids?.length})`);
  }
  t.same(missing, [], `all ${acked.size} acknowledged documents readable with their history`);
  for (const [id, blob] of blobs) {
    const r = await fetch(`${cluster.url('n1')}/vdb/rb/${id}/blob.bin`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    t.ok(r.status === 200 && Buffer.from(await r.arrayBuffer()).equals(blob), `${id}'s attachment moved byte-equal`);
  }
  const cf = await cluster.request('n3', 'GET', '/vdb/rb/cf?conflicts=true');
  t.same([cf.body._rev, cf.body._conflicts], ['1-bbbb', ['1-aaaa']], 'the conflict moved with both leaves');
  t.equal((await cluster.request('n2', 'GET', '/vdb/rb/gone')).status, 404, 'the deletion moved');
  const all = await cluster.request('n2', 'POST', '/vdb/rb/_find', { body: { where: [], limit: 100_000 } });
  const ids = (all.body.docs as { _id: string }[]).map((d) => d._id);
  t.equal(ids.length, new Set(ids).size, '_find lists each document once');
  // Beyond the acknowledged ones and the conflict, only creates answered 503 (the kill's
  // elections, "the write may still commit") may be there: on a loaded machine some did commit.
  const unacked = ids.filter((id) => !acked.has(id) && id !== 'cf');
  t.same(unacked.filter((id) => !maybeCommitted.has(id)), [], `every document not acknowledged is a create answered 503 that committed (${unacked.length} such)`);
  t.equal(all.body.meta.total, acked.size + 1 + unacked.length, '_find counts every live document once (the acknowledged ones, the conflict, and those)');
  const listing = await cluster.request('n1', 'GET', '/vdb/rb/_all_docs');
  t.same(listing.body.rows.map((r: { id: string }) => r.id), [...ids].sort(compareStrings), '_all_docs lists the same documents, each once, in id order');

  // The old cursor (two shards, before both jobs) still reaches every document written since.
  const tail = await feed('n1', before.cursor);
  const reached = new Set(tail.seen);
  const lost = [...acked.keys()].filter((id) => /^[ab]/.test(id) && !reached.has(id));
  t.same(lost, [], `_changes from the old cursor reaches every document written since (${tail.seen.length} entries, duplicates allowed)`);
  const full = new Set((await feed('n3')).seen);
  t.ok([...acked.keys(), 'cf', 'gone'].every((id) => full.has(id)), '_changes from the start lists every document');

  // Every replica of every shard at one digest; the merged shard's replicas are gone.
  const converged = await waitFor(
    async () => {
      const views = await Promise.all(nodes.map(async (n) => (await cluster.request(n, 'GET', '/_cluster/vdb-shards')).body.replicas as ReplicaView[]));
      const byGroup = new Map<string, ReplicaView[]>();
      for (const v of views.flat()) byGroup.set(v.group, [...(byGroup.get(v.group) ?? []), v]);
      if (byGroup.size !== 2) return undefined;
      for (const replicas of byGroup.values()) if (replicas.length !== 3 || new Set(replicas.map((r) => `${r.digest_applied}/${r.digest}`)).size !== 1) return undefined;
      return byGroup;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'every replica of the two remaining shards at one digest' },
  );
  const held = [...converged.values()].reduce((n, rs) => n + (rs[0]!.docs ?? 0), 0);
  t.equal(held, acked.size + 1 + unacked.length, 'the replicas hold each live document once (the split source purged what it gave away)');
  const heldLocals = [...converged.values()].reduce((n, rs) => n + (rs[0]!.local_docs ?? 0), 0);
  t.equal(heldLocals, cps.length + 1, 'and each _local document once (the split source dropped the ones it gave away)');
  for (const id of cps) t.same((await cluster.request(nodes[id.length % 3]!, 'GET', `/vdb/rb/_local/${id}`)).body, { seq: 2, _id: `_local/${id}`, _rev: '0-2' }, `${id} moved with its revision`);
  const listed = await cluster.request('n3', 'GET', '/vdb/rb/_local_docs?include_docs=true');
  t.same(listed.body.rows.map((r: { key: string }) => r.key), [...cps, 'checkpoint'].map((id) => `_local/${id}`).sort(), '_local_docs lists every checkpoint once, in id order, from the shards that own them');
  t.match(listed.body.rows.find((r: { key: string }) => r.key === '_local/checkpoint').doc, { n: lastCheckpoint });
  const jobs = (await cluster.request('n2', 'GET', '/_cluster/jobs')).body.jobs as { kind: string; step: string }[];
  t.ok(jobs.filter((j) => j.kind === 'vdb-rebalance').every((j) => j.step === 'done'), 'the jobs are done');
});
