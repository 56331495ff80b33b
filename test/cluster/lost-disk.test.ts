// A node's disk is lost, on real processes: an operator removes the dead node and starts a
// new one under the same name on an empty data directory. On 3 nodes its shard replica has
// nowhere else to go, so the shard group still lists the name: the new node must be caught
// up with every acknowledged write, and vote only then. Before, the leader's probes stopped at
// what the old node had acknowledged, which the empty log always rejected: the new replica
// stayed empty for ever, a voter in name only whose vote could elect a replica missing
// acknowledged writes (Raft's lost-disk hazard; raft/core.test.ts shows it).
import { rmSync } from 'node:fs';
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface ReplicaView {
  group: string;
  catching_up: boolean;
  voters: string[];
  learners: string[];
  docs: number | null;
  digest: string | null;
  digest_applied: number | null;
}

const vec = (i: number) => [Math.sin(i), Math.cos(i), (i % 7) / 7, 1];
const docs = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: `d${from + i}`, text: `t${from + i}`, metadata: {}, vector: vec(from + i) }));

t.test('a node removed and started again empty under its name: its shard replica catches up with every write, and votes again', async (t) => {
  const c = await TestCluster.start(3, { SERVICE_REPLICA_REPAIR_GRACE_MS: '1000' });
  t.teardown(() => c.close());
  await c.waitVoters(3);
  const put = await c.request('n1', 'PUT', '/vectordb/collections/r', { body: { dimensions: 4, num_shards: 1, replication_factor: 3 } });
  t.equal(put.status, 201, JSON.stringify(put.body));
  t.equal((await c.request('n1', 'POST', '/vectordb/collections/r/docs', { body: { documents: docs(0, 40) } })).status, 200);

  // First, a removal refused: a group of two replicas whose node b is dead has no leader (the
  // survivor alone is no majority), and b's disk is half of what it needs. Removed and wiped,
  // b would leave the group waiting for ever; started again on its disk, it heals.
  t.equal((await c.request('n1', 'PUT', '/vectordb/collections/two', { body: { dimensions: 4, num_shards: 1, replication_factor: 2 } })).status, 201);
  const pair = ((await c.request('n1', 'GET', '/_cluster/collections/two/shards')).body.shards as { group: string; replicas: string[] }[])[0]!;
  const b = pair.replicas.find((n) => n !== 'n1')!;
  await c.kill9(b);
  await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string }[]).some((n) => n.name === b && n.status === 'down'), { timeoutMs: 15_000, what: `${b} to be down` });
  const refused = await c.request('n1', 'DELETE', `/_cluster/nodes/${b}`);
  t.equal(refused.status, 409);
  t.match(refused.body, { error: 'conflict', message: new RegExp(`^removing ${b} now could leave shard groups without a majority holding their data \\(${pair.group} has no leader now .*\\?force=true$`) });
  await c.startNode(b);
  await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string }[]).every((n) => n.status === 'up'), { timeoutMs: 30_000, what: `${b} up again` });
  t.equal((await c.request('n1', 'DELETE', '/vectordb/collections/two')).status, 200);

  // The victim is a follower of the shard group: its leader stays, and its progress still
  // counts what the old victim acknowledged (a new leader would know nothing of it).
  const leader = await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/shards')).body.replicas as { leader: string | null }[])[0]?.leader ?? undefined, { what: 'a leader of the shard' });
  const victim = ['n2', 'n3'].find((n) => n !== leader)!;
  const others = ['n1', 'n2', 'n3'].filter((n) => n !== victim);
  await c.kill9(victim);
  await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string }[]).some((n) => n.name === victim && n.status === 'down'), { timeoutMs: 15_000, what: `${victim} to be down` });
  const removed = await c.request('n1', 'DELETE', `/_cluster/nodes/${victim}`);
  t.same([removed.status, removed.body], [200, { node: victim, status: 'removed' }]);
  // Written while it is out: acknowledged by the other two.
  t.equal((await c.request(others[1]!, 'POST', '/vectordb/collections/r/docs', { body: { documents: docs(40, 20) } })).status, 200);

  // A new machine under the old name: empty data directory, joining through the others.
  const node = c.node(victim);
  rmSync(node.dir, { recursive: true, force: true });
  node.env = { ...node.env, SERVICE_SEED_NODES: others.map((m) => `127.0.0.1:${c.node(m).grpcPort}`).join(',') };
  await c.startNode(victim);
  t.equal((await c.request('n1', 'POST', '/vectordb/collections/r/docs', { body: { documents: docs(60, 20) } })).status, 200);

  // Every node's replica of the shard at one digest, with all 80 documents.
  const settled = await waitFor(
    async () => {
      const views = await Promise.all(['n1', 'n2', 'n3'].map(async (n) => ((await c.request(n, 'GET', '/_cluster/shards')).body.replicas as ReplicaView[]).filter((r) => r.digest !== null)));
      const all = views.flat();
      if (views.some((v) => v.length !== 1) || new Set(all.map((r) => `${r.group} ${r.digest}@${r.digest_applied}`)).size !== 1) return undefined;
      return all[0]!.docs === 80 ? all : undefined;
    },
    { timeoutMs: 45_000, intervalMs: 250, what: `${victim}'s new replica caught up with the others` },
  );
  t.equal(settled.length, 3);
  t.same(settled.map((r) => r.catching_up), [false, false, false], 'the new replica caught up: it votes again');
  await waitFor(async () => {
    const views = await Promise.all(['n1', 'n2', 'n3'].map(async (n) => (await c.request(n, 'GET', '/_cluster/shards')).body.replicas as ReplicaView[]));
    return views.flat().every((r) => JSON.stringify([r.voters, r.learners]) === JSON.stringify([['n1', 'n2', 'n3'], []])) ? true : undefined;
  }, { timeoutMs: 30_000, what: 'every replica to list the three nodes as voters, no learner' }); // the new replica promoted, on a loaded machine
  t.notMatch(JSON.stringify((await c.request(victim, 'GET', '/health')).body), /catching up/, '/health no longer names it');
  await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; role: string; status: string }[]).every((n) => n.role === 'voter' && n.status === 'up'), { timeoutMs: 30_000, what: 'three metadata voters again' });
  // The new node holds the writes and votes: with the shard's old leader gone, it and the
  // third node still answer for all 80.
  await c.kill9(leader);
  await waitFor(async () => {
    const r = await c.request(victim, 'GET', '/vectordb/collections/r');
    return r.status === 200 && r.body.count === 80;
  }, { timeoutMs: 30_000, what: `${victim} and the third node to serve every document` });
});
