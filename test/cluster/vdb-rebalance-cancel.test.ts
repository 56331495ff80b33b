// Cancelling a clustered VDB split or merge (`DELETE /vdb/:vdb/_rebalance`), on a one-node
// cluster whose copies are slowed to 20 documents a second so the jobs are caught copying.
// A cancelled split leaves the shards as they were (its pending group goes); a cancelled merge
// also takes its copies back out of the target (the counts return to what they were); the
// waiting split/merge request answers 409; nothing is lost or doubled; and a later split runs
// to its end, so a cancel leaves nothing stuck.
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface Info {
  total_docs: number;
  shards: { db: string; doc_count: number }[];
  rebalance?: { id: string; op: string; state: string; documents_copied: number; cancel_requested: boolean; new_group?: { group: string; range: [number, number]; replicas: string[] } };
}

t.test('a VDB split and a merge cancelled while they copy', async (t) => {
  const cluster = await TestCluster.start(1, { SERVICE_VDB_REBALANCE_DOCS_PER_SEC: '20' });
  t.teardown(() => cluster.close());
  const info = async (): Promise<Info> => (await cluster.request('n1', 'GET', '/vdb/rb')).body as Info;

  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'rb', shard_count: 2, placement: { replica_factor: 1 } } })).status, 201);
  const docs = Array.from({ length: 400 }, (_, i) => ({ _id: `d${String(i).padStart(3, '0')}`, i }));
  const bulk = await cluster.request('n1', 'POST', '/vdb/rb/_bulk_docs', { body: { docs } });
  t.ok(bulk.body.results.every((r: { ok: boolean }) => r.ok), 'seeded 400 documents');
  const before = await info();
  t.equal(before.total_docs, 400);

  const none = await cluster.request('n1', 'DELETE', '/vdb/rb/_rebalance');
  t.same([none.status, none.body.error], [404, 'not_found'], 'nothing to cancel');
  t.equal((await cluster.request('n1', 'DELETE', '/vdb/nope/_rebalance')).status, 404, 'unknown VDB');

  // Split of shard 1, cancelled while it copies.
  const split = cluster.request('n1', 'POST', '/vdb/rb/_shards/1/_split');
  await waitFor(async () => ((await info()).rebalance?.state === 'copying' ? true : undefined), { timeoutMs: 30_000, what: 'the split to copy' }); // its new group started first
  t.match((await info()).rebalance?.new_group, { group: /^ds\d+$/, range: [3221225472, 4294967295], replicas: ['n1'] }, "the split's new group and where it is placed");
  const cancelled = await cluster.request('n1', 'DELETE', '/vdb/rb/_rebalance');
  t.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
  t.match(cancelled.body, { op: 'split', state: 'cancelled', cancel_requested: true }, 'the split ended cancelled');
  const splitAnswer = await split;
  t.same([splitAnswer.status, splitAnswer.body.error], [409, 'conflict'], `the split's own request says it was cancelled (${splitAnswer.body.message})`);
  const afterSplit = await info();
  t.same(afterSplit.shards.map((s) => s.doc_count), before.shards.map((s) => s.doc_count), 'the same two shards with the same documents');
  t.equal(afterSplit.rebalance, undefined, 'no job running');
  t.equal((await cluster.request('n1', 'DELETE', '/vdb/rb/_rebalance')).status, 404, 'nothing left to cancel');

  // Merge of shard 0 into shard 1: its first copies land in shard 1, then the cancel takes them out.
  const merge = cluster.request('n1', 'POST', '/vdb/rb/_shards/0/_merge', { body: { target_shard: 1 } });
  await waitFor(async () => {
    const now = await info();
    return now.rebalance?.state === 'copying' && now.shards[1]!.doc_count > before.shards[1]!.doc_count ? true : undefined;
  }, { timeoutMs: 30_000, what: 'copies to land in the merge target' }); // a job's first copies, on a loaded machine
  const mergeCancelled = await cluster.request('n1', 'DELETE', '/vdb/rb/_rebalance');
  t.match(mergeCancelled.body, { op: 'merge', state: 'cancelled' }, 'the merge ended cancelled');
  t.equal((await merge).status, 409);
  const afterMerge = await info();
  t.same(afterMerge.shards.map((s) => s.doc_count), before.shards.map((s) => s.doc_count), "the target holds its own documents only: the merge's copies are purged");
  t.equal(afterMerge.total_docs, 400);

  const found = await cluster.request('n1', 'POST', '/vdb/rb/_find', { body: { selector: {}, limit: 1000 } });
  t.equal(found.status, 200);
  const ids = (found.body.docs as { _id: string }[]).map((d) => d._id).sort();
  t.same(ids, docs.map((d) => d._id), 'every document once');

  // Nothing stuck: a split now runs to its end.
  const again = await cluster.request('n1', 'POST', '/vdb/rb/_shards/1/_split');
  t.equal(again.status, 200, JSON.stringify(again.body));
  const last = await info();
  t.equal(last.shards.length, 3);
  t.equal(last.total_docs, 400, 'after the split, every document once');
  const late = await cluster.request('n1', 'DELETE', '/vdb/rb/_rebalance');
  t.equal(late.status, 404, 'a finished job cannot be cancelled');
});

t.test('a split whose switch runs out of time is rolled back: writes go on through it, the next attempt switches', async (t) => {
  // The node's first switch attempt stalls past its timeout (after the fence and the drain):
  // the coordinator rolls it back, gives the source its range back, waits its backoff, and
  // switches on the second attempt.
  const cluster = await TestCluster.start(1, { SERVICE_RESHARD_SWITCH_TIMEOUT_MS: '1500', FIRKIN_TEST_RESHARD_SWITCH_STALLS: '1' });
  t.teardown(() => cluster.close());
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'rs', shard_count: 2, placement: { replica_factor: 1 } } })).status, 201);
  const seeded = await cluster.request('n1', 'POST', '/vdb/rs/_bulk_docs', { body: { docs: Array.from({ length: 100 }, (_, i) => ({ _id: `s${i}`, n: -1 })) } });
  t.ok(seeded.body.results.every((r: { ok: boolean }) => r.ok), 'seeded');
  // The oracle: each document's last acknowledged `n` (a write is a new document or an update of one of the first 20).
  const last = new Map(Array.from({ length: 100 }, (_, i) => [`s${i}`, -1]));
  const revs = new Map<string, string>(seeded.body.results.map((r: { id: string; rev: string }) => [r.id, r.rev]));
  const failures: string[] = [];
  let writing = true;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const id = i % 2 === 0 ? `s${(i / 2) % 20}` : `w${i}`;
      const r = await cluster.request('n1', 'POST', '/vdb/rs/_bulk_docs', { body: { docs: [{ _id: id, n: i, ...(revs.has(id) ? { _rev: revs.get(id) } : {}) }] } });
      const result = Array.isArray(r.body?.results) ? (r.body.results[0] as { ok?: boolean; rev?: string; error?: string }) : undefined;
      if (result?.ok === true) {
        last.set(id, i);
        revs.set(id, result.rev!);
      } else failures.push(`${id}: ${r.status} ${JSON.stringify(r.body)}`);
    }
  })();
  const jobs = async () => ((await cluster.request('n1', 'GET', '/_cluster/jobs')).body.jobs as { kind: string; step: string; vdb?: { rollbacks?: number; error?: string } }[]).filter((j) => j.kind === 'vdb-rebalance');
  const split = cluster.request('n1', 'POST', '/vdb/rs/_shards/1/_split');
  const rolled = await waitFor(async () => (await jobs()).find((j) => (j.vdb?.rollbacks ?? 0) >= 1), { timeoutMs: 60_000, what: 'the first switch to be rolled back' });
  t.match(rolled.vdb?.error, /switch attempt 1 did not finish within 1500 ms/, 'the job says why');
  const answer = await split;
  writing = false;
  await writer;
  t.equal(answer.status, 200, JSON.stringify(answer.body));
  t.match((await jobs())[0], { step: 'done', vdb: { rollbacks: 1 } }, 'switched on the second attempt');
  t.same(failures.slice(0, 3), [], 'no write failed: those the fence refused ran again once the range was given back, or on the new map');
  const info = (await cluster.request('n1', 'GET', '/vdb/rs')).body as { total_docs: number; shards: unknown[] };
  t.equal(info.shards.length, 3, 'three shards');
  t.equal(info.total_docs, last.size, 'every document once');
  const all = await cluster.request('n1', 'GET', '/vdb/rs/_all_docs?include_docs=true&limit=100000');
  const got = new Map((all.body.rows as { id: string; doc: { n: number } }[]).map((r) => [r.id, r.doc.n]));
  const wrong = [...last].filter(([id, n]) => got.get(id) !== n).map(([id, n]) => `${id}: ${got.get(id)} (want ${n})`);
  t.same(wrong.slice(0, 5), [], `every acknowledged write is there, last one wins (${last.size} documents)`);
});
