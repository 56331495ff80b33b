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
  rebalance?: { id: string; op: string; state: string; documents_copied: number; cancel_requested: boolean };
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
  await waitFor(async () => ((await info()).rebalance?.state === 'copying' ? true : undefined), { what: 'the split to copy' });
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
  }, { what: 'copies to land in the merge target' });
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
