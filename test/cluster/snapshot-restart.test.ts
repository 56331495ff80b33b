// A replica that crashed in the middle of a snapshot transfer (its own data dropped, the
// snapshot recorded in its Raft log) restores that snapshot on the next start, while it is
// being opened. It must find a replica to stream from then, finish starting and converge.
// Found by a chaos run (seed 31, set workload): the restarted node looked for the group's
// replicas among the replicas it had already opened, found none, and retried forever before
// its HTTP port opened. The transfer is a repair's (a replica moved to a node that holds
// nothing, which always takes a snapshot); the crash is placed by
// FIRKIN_UNSAFE_FIXTURE=exit-in-snapshot-load. The restart happens while every other replica
// is down, so the snapshot has no source at first: the node must listen meanwhile (it did not:
// opening the replica held up the node's start until a source answered).
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface Replica {
  group: string;
  role: string;
  leader: string | null;
  digest: string | null;
  digest_applied: number | null;
  docs: number | null;
}

t.test('a node killed during a snapshot transfer starts again and converges', async (t) => {
  // Small logs (the leader's is compacted: a new replica needs a snapshot), a quick repair.
  const env = { SERVICE_RAFT_SNAPSHOT_ENTRIES: '8', SERVICE_RAFT_RETAIN_ENTRIES: '1', SERVICE_REPLICA_REPAIR_GRACE_MS: '500' };
  const cluster = await TestCluster.start(4, env);
  t.teardown(() => cluster.close());
  const nodes = ['n1', 'n2', 'n3', 'n4'];
  await cluster.waitVoters(3);
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/c', { body: { dimensions: 4, num_shards: 1, replication_factor: 3 } })).status, 201);
  const hosted = async (n: string) => (await cluster.request(n, 'GET', '/_cluster/shards')).body.replicas as Replica[];
  const placed = await waitFor(async () => {
    const by = await Promise.all(nodes.map(async (n) => ({ n, r: (await hosted(n))[0] })));
    return by.filter((x) => x.r !== undefined).length === 3 && by.some((x) => x.r?.role === 'leader') ? by : undefined;
  }, { timeoutMs: 30_000, what: 'the shard to be hosted on three nodes with a leader' }); // replicas starting on a loaded machine
  const spare = placed.find((x) => x.r === undefined)!.n;
  const victim = placed.find((x) => x.r !== undefined && x.r.role !== 'leader')!.n;
  const writer = placed.find((x) => x.r?.role === 'leader')!.n;
  for (let i = 0; i < 30; i++) {
    const r = await cluster.request(writer, 'POST', '/vectordb/collections/c/docs', { body: { documents: [{ id: `d${i}`, text: `doc ${i}`, metadata: { i }, vector: [i, 1, 0, 1] }] } });
    t.equal(r.status, 200, `write ${i}`);
  }

  // The spare runs with the fixture; the victim dies; the repair moves its replica to the spare,
  // which takes the leader's snapshot, drops its (empty) data and exits as it starts streaming.
  const node = cluster.node(spare);
  await cluster.stop(spare);
  node.env = { ...node.env, FIRKIN_UNSAFE_FIXTURE: 'exit-in-snapshot-load' };
  await cluster.startNode(spare);
  const gone = new Promise<number | null>((resolve) => node.child!.proc.once('exit', (code) => resolve(code)));
  await cluster.kill9(victim);
  const exited = await Promise.race([gone, new Promise<string>((resolve) => setTimeout(() => resolve(`no exit within 60 s: ${node.child?.output().split('\n').slice(-8).join('\n')}`), 60_000).unref())]);
  if (exited !== 86) {
    await cluster.kill9(spare);
    t.fail(`${spare} should have exited (86) in the middle of the transfer: ${String(exited)}`);
    return;
  }
  t.pass(`${spare} exited in the middle of the transfer`);
  node.child = undefined;

  // A plain restart while every other replica is down too (a whole cluster coming back, this
  // node first): it restores the recorded snapshot, which has no source to stream from. It
  // must listen anyway and say on /health which replica waits for what.
  const sources = placed.filter((x) => x.r !== undefined && x.n !== victim).map((x) => x.n);
  for (const n of sources) await cluster.stop(n);
  const { FIRKIN_UNSAFE_FIXTURE: _fixture, ...plain } = node.env;
  node.env = plain;
  await cluster.startNode(spare);
  t.pass(`${spare} started again and listens while no replica can send it the snapshot`);
  const group = placed.find((x) => x.r !== undefined)!.r!.group;
  const health = await waitFor(
    async () => {
      const h = (await cluster.request(spare, 'GET', '/health')).body as { shards?: { status: string; problems?: string[] } };
      return h.shards?.problems?.some((p) => p.includes(group) && p.includes('loading its snapshot')) ? h.shards : undefined;
    },
    { what: `${spare}'s /health to name ${group} as loading its snapshot` },
  );
  t.equal(health.status, 'degraded', '/health: the shards are degraded while the replica loads');
  t.same((await hosted(spare)).length, 0, 'the loading replica is not hosted (nothing is routed to it)');

  // The sources come back: the transfer completes and the replica joins its group.
  for (const n of sources) await cluster.startNode(n);
  const live = nodes.filter((n) => n !== victim);
  await waitFor(
    async () => {
      const replicas = (await Promise.all(live.map(hosted))).flat();
      const digests = new Set(replicas.map((r) => `${r.digest}@${r.digest_applied}`));
      return replicas.length === 3 && digests.size === 1 && replicas.every((r) => r.docs === 30) ? replicas : undefined;
    },
    { timeoutMs: 60_000, what: 'the three live replicas to hold the same 30 documents' },
  );
  t.pass('the three replicas agree on one digest with all 30 documents');
  // Its first reads may meet a shard leader still settling in: a 503 to retry, until a deadline.
  await waitFor(async () => ((await cluster.request(spare, 'GET', '/vectordb/collections/c/docs/d29')).status === 200 ? true : undefined), { timeoutMs: 30_000, what: `${spare} to answer reads` });
  t.pass('and the restarted node answers reads');
});
