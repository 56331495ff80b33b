// Cluster job progress as the Cluster page shows it: a leave's steps read off the nodes and
// shard groups; replica moves where a shard group differs from its placement.
import t from 'tap';
import { type CollectionShards, type JobRecord, type NodeState, cancelCall, jobProgress, replicaMoves } from '../../console/src/jobs.js';

const leave: JobRecord = { id: 'j1', kind: 'leave', target: 'n3', step: 'leave_voters', createdAtMs: 0, updatedAtMs: 0 };
const nodes = (role: NodeState['role'], status = 'leaving'): NodeState[] => [
  { name: 'n1', status: 'up', role: 'voter' },
  { name: 'n2', status: 'up', role: 'voter' },
  { name: 'n3', status, role },
];
const shards = (replicas: string[], voters: string[], learners: string[] = [], lag: Record<string, number | null> = {}, commit = 100): CollectionShards[] => [
  { name: 'c', shards: [{ shard: 0, replicas, leader: voters[0] ?? null, voters, learners, lag, commit }] },
];

t.test('a leave advances through its steps', (t) => {
  const inGroup = jobProgress(leave, nodes('voter'), shards(['n1', 'n3'], ['n1', 'n3']));
  t.equal(inGroup.fraction, 1 / 4);
  t.equal(inGroup.current, 'step 2 of 4: leaving the metadata group');

  const outOfMeta = jobProgress(leave, nodes('none'), shards(['n1', 'n2'], ['n1', 'n3'], ['n2']));
  t.equal(outOfMeta.fraction, 2 / 4);
  t.equal(outOfMeta.current, 'step 3 of 4: moving shard replicas (1 left)', 'the shard group still holds n3 though the placement moved it');

  const moved = jobProgress(leave, nodes('none'), shards(['n1', 'n2'], ['n1', 'n2']));
  t.equal(moved.fraction, 3 / 4);
  t.equal(moved.current, 'step 4 of 4: waiting for the node to stop');

  const stuck = jobProgress({ ...leave, waiting: "no other live node can take n3's replicas of collection c (shard group vs0)" }, nodes('none'), shards(['n1', 'n2', 'n3'], ['n1', 'n2', 'n3']));
  t.equal(stuck.current, "step 3 of 4: moving shard replicas (1 left); waiting: no other live node can take n3's replicas of collection c (shard group vs0)", "the server's reason a leave cannot go on");

  const left = jobProgress(leave, nodes('none', 'left'), shards(['n1', 'n2'], ['n1', 'n2']));
  t.equal(left.fraction, 1);
  t.equal(left.current, 'done');
  t.end();
});

t.test('kinds whose steps are not known here show the server step and no fraction', (t) => {
  const p = jobProgress({ ...leave, kind: 'reshard', step: 'copy' }, nodes('voter'), []);
  t.same(p, { steps: [], fraction: null, current: 'copy' });
  t.end();
});

t.test('replica moves: adding, catching up (share of the log), removing', (t) => {
  t.same(replicaMoves(shards(['n1', 'n2'], ['n1', 'n2'])), [], 'a settled shard has no move');
  t.same(replicaMoves(shards(['n1', 'n2'], ['n1', 'n3'])), [
    { collection: 'c', shard: 0, node: 'n2', state: 'adding', fraction: null },
    { collection: 'c', shard: 0, node: 'n3', state: 'removing', fraction: null },
  ]);
  t.same(replicaMoves(shards(['n1', 'n2'], ['n1', 'n3'], ['n2'], { n2: 25 }, 100)), [
    { collection: 'c', shard: 0, node: 'n2', state: 'catching_up', fraction: 0.75 },
    { collection: 'c', shard: 0, node: 'n3', state: 'removing', fraction: null },
  ]);
  t.equal(replicaMoves(shards(['n1', 'n2'], ['n1'], ['n2'], { n2: null }))[0]?.fraction, 0, 'an unknown match is no progress yet');
  t.same(replicaMoves([{ name: 'c', shards: [{ shard: 0, replicas: ['n1'], leader: null }] }]), [], 'an unreachable shard shows nothing');
  t.end();
});

t.test('a reshard and a VDB split show their step and the documents copied', (t) => {
  const reshard: JobRecord = { id: 'r1', kind: 'reshard', target: 'docs', step: 'copying', createdAtMs: 0, updatedAtMs: 0, reshard: { oldShards: 2, newShards: 5, migrated: 500, expected: 2000 } };
  const copying = jobProgress(reshard, [], []);
  t.equal(copying.fraction, 0.75 * 0.25, 'the copy is the first three quarters of the bar');
  t.equal(copying.current, 'step 1 of 4: copying documents (500 of 2000 documents)');
  const switching = jobProgress({ ...reshard, step: 'switching', reshard: { ...reshard.reshard!, migrated: 2000, error: 'n2: timeout' } }, [], []);
  t.equal(switching.fraction, 0.75 + 0.25 / 3);
  t.equal(switching.current, 'step 3 of 4: switching (writes of the moving range wait) (2000 of 2000 documents); last error: n2: timeout');
  t.same(switching.steps.map((s) => s.done), [true, true, false, false]);
  const past = jobProgress({ ...reshard, step: 'catching_up', reshard: { ...reshard.reshard!, migrated: 2040 } }, [], []);
  t.match(past.current, /\(2040 documents \(2000 when it began\)\)$/, 'copies past the starting count (writes during the copy) say so');
  t.same(jobProgress({ ...reshard, step: 'done' }, [], []).fraction, 1);
  const split: JobRecord = { id: 'v1', kind: 'vdb-rebalance', target: 'orders', step: 'catching_up', createdAtMs: 0, updatedAtMs: 0, vdb: { op: 'split', source: 0, target: 2, copied: 40, cancelRequested: true } };
  const p = jobProgress(split, [], []);
  t.equal(p.fraction, 0.75);
  t.equal(p.current, 'step 2 of 4: copying what changed meanwhile (40 documents); cancel requested');
  t.same(jobProgress({ ...split, step: 'cancelled' }, [], []), { steps: p.steps.map((s) => ({ ...s, done: false })), fraction: 0, current: 'cancelled' });
  t.same(jobProgress({ ...split, step: 'failed', vdb: { ...split.vdb!, error: 'orders was deleted' } }, [], []).current, 'failed: orders was deleted');
  t.same(jobProgress({ ...split, step: 'someday' }, [], []), { steps: [], fraction: null, current: 'someday' }, 'a step this console does not know');
  t.end();
});

t.test('a reshard or a VDB split or merge can be cancelled until its switch', (t) => {
  const reshard: JobRecord = { id: 'r1', kind: 'reshard', target: 'a b', step: 'copying', createdAtMs: 0, updatedAtMs: 0, reshard: { oldShards: 2, newShards: 5, migrated: 0 } };
  t.same(cancelCall(reshard), { method: 'DELETE', path: '/vectordb/collections/a%20b/reshard' });
  t.same(cancelCall({ ...reshard, step: 'catching_up' }), { method: 'DELETE', path: '/vectordb/collections/a%20b/reshard' });
  for (const step of ['switching', 'cleaning', 'done', 'failed', 'cancelled']) t.equal(cancelCall({ ...reshard, step }), null, `not once ${step}`);
  const merge: JobRecord = { id: 'v1', kind: 'vdb-rebalance', target: 'orders', step: 'copying', createdAtMs: 0, updatedAtMs: 0, vdb: { op: 'merge', source: 1, target: 0, copied: 0 } };
  t.same(cancelCall(merge), { method: 'DELETE', path: '/vdb/orders/_rebalance' });
  t.equal(cancelCall({ ...merge, vdb: { ...merge.vdb!, cancelRequested: true } }), null, 'not asked twice');
  t.equal(cancelCall({ id: 'l1', kind: 'leave', target: 'n3', step: 'copying', createdAtMs: 0, updatedAtMs: 0 }), null, 'a leave has no cancel');
  t.end();
});
