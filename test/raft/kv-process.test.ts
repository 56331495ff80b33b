// Three real processes replicate a key-value state machine over gRPC: kill -9 the leader ->
// a new leader takes writes within 3 s; restart it -> it catches up; no acknowledged write lost.
import t from 'tap';
import { tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';
import { findLeader, freePorts, put, spawnKv, status, type KvProc } from './kv-cluster.js';

t.test('kill -9 the leader, fail over, restart, catch up, lose nothing', async (t) => {
  const ids = ['n1', 'n2', 'n3'];
  const ports = await freePorts(3);
  const peers = ids.map((id, i) => `${id}=127.0.0.1:${ports[i]}`).join(',');
  const dirs = new Map(ids.map((id) => [id, tempDir()]));
  const nodes = new Map<string, KvProc>();
  t.teardown(async () => {
    for (const n of nodes.values()) await n.kill9();
  });
  await Promise.all(ids.map(async (id) => nodes.set(id, await spawnKv(id, dirs.get(id)!, peers))));
  const all = () => [...nodes.values()];

  const acked = new Map<string, string>();
  const leader = await waitFor(() => findLeader(all()), { timeoutMs: 15_000, what: 'first leader' });
  for (let i = 0; i < 30; i++) {
    const r = await put(leader, `k${i}`, `v${i}`);
    t.ok(r.ok, `write k${i} acknowledged`);
    if (r.ok) acked.set(`k${i}`, `v${i}`);
  }
  // A follower names the leader it follows; one whose election timer just fired on a busy
  // machine knows none for a moment (a pre-candidate, as etcd's), so it is asked again until
  // it names one (a refused write changes nothing). Seen once in CI: leader null.
  const follower = all().find((n) => n !== leader)!;
  const fromFollower = await waitFor(
    async () => {
      const r = await put(follower, 'x', 'y');
      return r.status === 421 && r.body.leader !== null ? r : undefined;
    },
    { timeoutMs: 10_000, what: `${follower.id} to answer not_leader naming its leader` },
  );
  t.equal(fromFollower.status, 421, 'a follower answers not_leader');
  t.equal(fromFollower.body.leader, leader.id, 'and names the leader');

  // kill -9 the leader; keep writing to the survivors until one accepts.
  await leader.kill9();
  nodes.delete(leader.id);
  const killedAt = Date.now();
  let failoverMs = 0;
  await waitFor(
    async () => {
      for (const n of all()) {
        const r = await put(n, 'after-failover', '1');
        if (r.ok) {
          failoverMs = Date.now() - killedAt;
          acked.set('after-failover', '1');
          return true;
        }
      }
      return false;
    },
    { timeoutMs: 10_000, intervalMs: 50, what: 'a write after failover' },
  );
  t.comment(`failover: first successful write ${failoverMs} ms after kill -9`);
  t.ok(failoverMs < 3_000, `new leader took writes within 3 s (${failoverMs} ms)`);
  const newLeader = (await findLeader(all()))!;
  for (let i = 30; i < 60; i++) {
    const r = await put(newLeader, `k${i}`, `v${i}`);
    if (r.ok) acked.set(`k${i}`, `v${i}`);
  }

  // Restart the old leader from its data dir: it catches up.
  const back = await spawnKv(leader.id, dirs.get(leader.id)!, peers);
  nodes.set(leader.id, back);
  const target = (await status(newLeader))!.commit;
  await waitFor(async () => ((await status(back))?.applied ?? 0) >= target, { timeoutMs: 15_000, what: 'restarted node to catch up' });
  for (const n of all()) {
    const dump = (await (await fetch(`${n.url}/dump`)).json()) as { map: Record<string, string> };
    const lost = [...acked].filter(([k, v]) => dump.map[k] !== v);
    t.same(lost, [], `${n.id}: no acknowledged write lost`);
  }
  const r = await fetch(`${back.url}/get?k=k59`);
  t.ok(r.status === 200 || r.status === 421, 'linearizable read served or redirected');
});
