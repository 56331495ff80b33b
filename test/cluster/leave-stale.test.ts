// A leaving node that hears nothing while the cluster moves its replicas, drops it from the
// metadata group and deletes the VDB those replicas belonged to: four real processes whose
// peer links pass through the chaos fault proxy. Once it hears again, no group it hosts has a
// leader to say it was removed (they are deleted), and its own metadata still places them on
// it; it learns of the deletion by asking a member, drops them, and its leave ends (found by
// the chaos runner: seed 73, `--workload cas --rebalance true --nemesis replace,...`, a merge's
// source group deleted while the leaving node was out of the metadata group).
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface ReplicaView {
  group: string;
}

t.test('a leaving node cut off while its VDB is deleted drops the deleted groups when it hears again, and its leave ends', async (t) => {
  const names = ['n1', 'n2', 'n3', 'n4'];
  const { cluster, net, close } = await TestCluster.behindProxy(names);
  t.teardown(close);

  // Four shards of three replicas on four nodes: n4 holds some.
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'v', shard_count: 4, placement: { replica_factor: 3 } } })).status, 201);
  const hostedOn = async (n: string) => ((await cluster.request(n, 'GET', '/_cluster/vdb-shards')).body.replicas as ReplicaView[]).map((r) => r.group);
  const before = await waitFor(async () => {
    const g = await hostedOn('n4');
    return g.length > 0 ? g : undefined;
  }, { timeoutMs: 30_000, what: 'n4 to host its replicas' }); // 12 replicas started on a loaded CI machine

  // n4 hears nothing from now on; what it sends still arrives (so its leave is proposed).
  net.apply(names.filter((n) => n !== 'n4').map((from) => ({ kind: 'one-way' as const, from, to: 'n4' })));
  // Its answer is lost with everything else sent to it; the entry commits regardless.
  await cluster.request('n4', 'POST', '/vectordb/cluster/leave');
  await waitFor(async () => {
    const nodes = (await cluster.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string; role: string }[] | undefined;
    const n4 = nodes?.find((n) => n.name === 'n4');
    return n4?.status === 'leaving' && n4.role === 'none' ? true : undefined;
  }, { timeoutMs: 60_000, what: "n4 leaving, its replicas moved, out of the metadata group (n1's view)" }).catch(async (err: Error) => {
    // What n1 sees, for the failure's report.
    t.comment(JSON.stringify((await cluster.request('n1', 'GET', '/_cluster/nodes')).body));
    throw err;
  });
  t.equal((await cluster.request('n1', 'DELETE', '/vdb/v')).status, 200, 'the VDB is deleted while n4 hears nothing');
  t.same((await hostedOn('n4')).sort(), [...before].sort(), 'n4 still hosts the groups it had: nobody could tell it');

  net.heal();
  await waitFor(async () => ((await cluster.status('n4')).state === 'left' ? true : undefined), { timeoutMs: 60_000, what: 'n4 to learn the deletion, drop the groups and leave' });
  t.match(cluster.node('n4').child!.output(), /the metadata deleted its group, as n\d says/, 'it dropped them on a member\'s word');
  // n4 learns it left from whichever member it asks: n1 may apply the entry after that member.
  await waitFor(async () => {
    const nodes = (await cluster.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string }[];
    return nodes.find((n) => n.name === 'n4')?.status === 'left';
  }, { timeoutMs: 30_000, what: "n4 recorded left in n1's metadata" });
  t.pass('and the cluster recorded it left');
});
