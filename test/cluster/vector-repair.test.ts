// Replica moves on real processes: a node leaves with data while reads go on through
// another node (none fails), then a node is killed for good and its replicas are rebuilt on
// a node that joined since, restoring the replication factor with every document there.
// A VDB's shards (Raft groups of documents) move and are repaired by the same reconciler.
import t from 'tap';
import { runCli } from '../../src/cli/firkin.js';
import { TEST_ADMIN_KEY } from '../support/node.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface ReplicaView {
  group: string;
  role: string;
  docs: number;
  digest: string | null;
  digest_applied: number | null;
}

const vec = (i: number) => [Math.sin(i), Math.cos(i), (i % 7) / 7, 1];

t.test('leave with data, then repair after a node is gone for good', async (t) => {
  const cluster = await TestCluster.start(4, { SERVICE_REPLICA_REPAIR_GRACE_MS: '1000' });
  t.teardown(() => cluster.close());
  await cluster.waitVoters(3);
  const put = await cluster.request('n1', 'PUT', '/vectordb/collections/r', { body: { dimensions: 4, num_shards: 2, replication_factor: 3 } });
  t.equal(put.status, 201, JSON.stringify(put.body));
  const documents = Array.from({ length: 60 }, (_, i) => ({ id: `d${i}`, text: `t${i}`, metadata: {}, vector: vec(i) }));
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/r/docs', { body: { documents } })).status, 200);
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'rv', shard_count: 2, placement: { replica_factor: 3 } } })).status, 201, 'VDB created');
  const vdbDocs = Array.from({ length: 30 }, (_, i) => ({ _id: `v${i}`, i }));
  t.equal((await cluster.request('n1', 'POST', '/vdb/rv/_bulk_docs', { body: { docs: vdbDocs } })).status, 201);
  const rvGroups = new Set(((await cluster.request('n1', 'GET', '/vdb/rv/_shards')).body.shards as { group: string }[]).map((s) => s.group));
  /** Both VDB shards on exactly `nodes`, three replicas each at one digest, every document there. */
  const vdbSettledOn = (nodes: string[], what: string) =>
    waitFor(
      async () => {
        const byGroup = new Map<string, { node: string; digest: string | null; applied: number | null; docs: number | null }[]>();
        for (const n of nodes) {
          for (const r of (await cluster.request(n, 'GET', '/_cluster/vdb-shards')).body.replicas as { group: string; digest: string | null; digest_applied: number | null; docs: number | null }[]) {
            if (!rvGroups.has(r.group)) continue;
            byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), { node: n, digest: r.digest, applied: r.digest_applied, docs: r.docs }]);
          }
        }
        if (byGroup.size !== 2) return undefined;
        let docs = 0;
        for (const rs of byGroup.values()) {
          if (rs.length !== 3 || rs[0]!.digest === null || new Set(rs.map((x) => `${x.digest}@${x.applied}`)).size !== 1) return undefined;
          docs += rs[0]!.docs ?? 0;
        }
        return docs === 30 ? byGroup : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250, what },
    );

  /** DEBUG_REPAIR=1: what each node hosts and its move-related log lines, then fail. */
  const dump = async (err: unknown): Promise<never> => {
    if (process.env.DEBUG_REPAIR) {
      for (const n of cluster.running()) {
        console.error(n, JSON.stringify((await cluster.request(n, 'GET', '/_cluster/shards').catch(() => ({ body: 'unreachable' }))).body));
        console.error(cluster.node(n).child!.output().split('\n').filter((l) => /vs[0-9]|repli|leav|moving|left|drain|job/.test(l)).slice(-25).join('\n'));
      }
    }
    throw err;
  };
  const hostedOn = async (nodes: string[]) => {
    const byGroup = new Map<string, { node: string; r: ReplicaView }[]>();
    for (const n of nodes) {
      for (const r of (await cluster.request(n, 'GET', '/_cluster/shards')).body.replicas as ReplicaView[]) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), { node: n, r }]);
    }
    return byGroup;
  };
  /** Both shards on exactly `nodes`' replicas, three each, one digest per shard, every document there. */
  const settledOn = (nodes: string[], what: string) =>
    waitFor(
      async () => {
        const byGroup = await hostedOn(nodes);
        if (byGroup.size !== 2) return undefined;
        let docs = 0;
        for (const rs of byGroup.values()) {
          if (rs.length !== 3 || new Set(rs.map((x) => `${x.r.digest}@${x.r.digest_applied}`)).size !== 1) return undefined;
          docs += rs[0]!.r.docs;
        }
        return docs === 60 ? byGroup : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250, what },
    );

  // Leave: pick a node holding replicas; read through another one the whole time.
  const before = await hostedOn(['n1', 'n2', 'n3', 'n4']);
  const leaver = ['n2', 'n3', 'n4'].find((n) => [...before.values()].some((rs) => rs.some((x) => x.node === n)))!;
  const reader = leaver === 'n4' ? 'n3' : 'n4';
  let reading = true;
  let reads = 0;
  const readFailures: string[] = [];
  const readLoop = (async () => {
    while (reading) {
      const r = await cluster.request(reader, 'GET', '/vectordb/collections/r').catch((err: Error) => ({ status: 0, body: { count: err.message } }));
      if (r.status === 200 && r.body.count === 60) reads++;
      else readFailures.push(`${r.status} ${JSON.stringify(r.body)}`);
    }
  })();
  t.equal((await cluster.request(leaver, 'POST', '/vectordb/cluster/leave')).status, 200, `${leaver} asks to leave`);
  const staying = ['n1', 'n2', 'n3', 'n4'].filter((n) => n !== leaver);
  await settledOn(staying, `the replicas of ${leaver} to move to the others`).catch(dump);
  await waitFor(async () => (await cluster.status(leaver).catch(() => ({ state: 'gone' }))).state === 'left', { timeoutMs: 30_000, what: `${leaver} to finish leaving` }).catch(dump);
  reading = false;
  await readLoop;
  t.same(readFailures, [], `no read failed during the move (${reads} reads)`);
  await vdbSettledOn(staying, `the VDB replicas of ${leaver} to move to the others`).catch(dump);
  t.pass(`the VDB's replicas moved off ${leaver}`);
  await cluster.stop(leaver);
  // Three nodes left for three replicas: another leave would strand them, and is refused.
  const stranded = await cluster.request(staying[0]!, 'POST', '/vectordb/cluster/leave');
  t.equal(stranded.status, 409, `a second leave is refused (${stranded.body.message})`);
  t.match(stranded.body.message, new RegExp(`^node ${staying[0]} cannot leave now: no other live node can take ${staying[0]}'s replicas of collection r \\(shard groups vs\\d+, vs\\d+\\), VDB rv \\(shard groups ds\\d+, ds\\d+\\)`));

  // A new node joins; then a node holding replicas dies for good: they are rebuilt on the new one.
  await cluster.add('n5', { SERVICE_REPLICA_REPAIR_GRACE_MS: '1000' });
  await cluster.waitMembers();
  const victim = staying.find((n) => n !== 'n1')!;
  // And a VDB of one replica a shard: the victim's disk holds the only copy of its shards there.
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'solo', shard_count: 8, placement: { replica_factor: 1 } } })).status, 201);
  t.equal((await cluster.request('n1', 'POST', '/vdb/solo/_bulk_docs', { body: { docs: Array.from({ length: 40 }, (_, i) => ({ _id: `s${i}`, i })) } })).status, 201);
  const soloShards = (await cluster.request('n1', 'GET', '/vdb/solo/_shards')).body.shards as { group: string; replicas: string[] }[];
  const onVictim = soloShards.filter((s) => s.replicas.includes(victim)).map((s) => s.group);
  t.ok(onVictim.length > 0, `solo has shards on ${victim}: ${onVictim.join(', ')}`);
  await cluster.kill9(victim);
  const survivors = [...staying.filter((n) => n !== victim), 'n5'];
  const repaired = await settledOn(survivors, `the replicas of ${victim} to be rebuilt on the survivors`);
  t.ok([...repaired.values()].every((rs) => rs.some((x) => x.node === 'n5')), 'the new node took the dead one’s replicas');
  for (const n of survivors) {
    const r = await cluster.request(n, 'GET', '/vectordb/collections/r/docs/d42');
    t.equal(r.status, 200, `${n} reads through the repaired shards`);
  }
  const write = await cluster.request('n5', 'POST', '/vectordb/collections/r/docs', { body: { id: 'after', text: 'x', metadata: {}, vector: vec(500) } });
  t.equal(write.status, 201, 'writes work on the repaired shards');
  const vdbRepaired = await vdbSettledOn(survivors, `the VDB replicas of ${victim} to be rebuilt on the survivors`);
  t.ok([...vdbRepaired.values()].every((rs) => rs.some((x) => x.node === 'n5')), 'the new node took the dead one’s VDB replicas');
  t.equal((await cluster.request('n5', 'GET', '/vdb/rv/v7')).status, 200, 'the VDB reads through the repaired shards');
  t.equal((await cluster.request('n5', 'PUT', '/vdb/rv/after', { body: {} })).status, 201, 'and writes');

  // solo's shards on the victim, long past the grace period: no live replica could lead a move,
  // so they stay placed where their data is (they were placed on other nodes, as empty replicas
  // waiting for a leader that could not be), requests to them are refused at once, and the
  // victim, their only holder, is not removed without `force`.
  const soloNow = (await cluster.request('n1', 'GET', '/vdb/solo/_shards')).body.shards as { group: string; replicas: string[]; down: string[] }[];
  t.same(soloNow.filter((s) => onVictim.includes(s.group)).map((s) => [s.replicas, s.down]), onVictim.map(() => [[victim], [victim]]), `solo's shards on ${victim} stay there`);
  const refused: string[] = [];
  for (let i = 0; i < 40; i++) {
    const r = await cluster.request('n5', 'GET', `/vdb/solo/s${i}`);
    if (r.status === 200) continue;
    t.match([r.status, r.body], [503, { error: 'no_quorum', message: new RegExp(`^shard ds\\d+ has no live replica: the cluster counts every node it is on down \\(${victim}\\)`) }], `s${i}: ${r.body.message}`);
    refused.push(`s${i}`);
  }
  t.ok(refused.length > 0 && refused.length < 40, `the documents on ${victim}'s shards are refused at once (${refused.length}), the others read`);
  const removal = await cluster.request('n1', 'DELETE', `/_cluster/nodes/${victim}`);
  t.equal(removal.status, 409, `removing ${victim} is refused: ${removal.body.message}`);
  for (const g of onVictim) t.match(removal.body.message, new RegExp(`${g} has no leader now`));

  // The operator's view: firkin cluster shards r (shard, replicas, leader, lag). The leaders
  // finish the membership change (promote the new replica, remove the dead one) shortly after
  // the data is in place.
  const shardsView = async () => {
    let out = '';
    const code = await runCli(['cluster', 'shards', 'r', '--url', cluster.url('n1'), '--key', TEST_ADMIN_KEY], {}, { out: (x) => (out += x), err: (x) => (out += x), fetch });
    return { code, out };
  };
  const view = await waitFor(async () => {
    const v = await shardsView();
    return v.code === 0 && !new RegExp(`${victim}[+]?:`).test(v.out) && !/\+:/.test(v.out) ? v : undefined;
  }, { timeoutMs: 20_000, what: 'both groups to drop the dead node and promote the new one' });
  t.match(view.out, /^r: replication factor 3\n/);
  t.match(view.out, /SHARD +GROUP +REPLICAS +LEADER +LAG/);
  t.equal(view.out.match(/\(term \d+\)/g)?.length, 2, 'both shards show a leader and term');
});
