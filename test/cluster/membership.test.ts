// The cluster foundation with real processes, real gRPC and real RocksDB: join through seeds,
// a wrong cookie, keys through consensus, kill -9 of the metadata leader, a learner, removal of
// a dead node, leave, and the 5-voter cap with promotion of a learner.
import t from 'tap';
import { runNodeExpectingExit } from '../support/process.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

const names = (c: TestCluster) => c.running().sort();

async function roles(c: TestCluster, via: string): Promise<Record<string, string>> {
  const r = await c.request(via, 'GET', '/_cluster/nodes');
  return Object.fromEntries((r.body.nodes as { name: string; role: string; status: string }[]).map((n) => [n.name, `${n.role}/${n.status}`]));
}

t.test('three nodes: join, agree, cookie, keys through consensus, leader failover, leave and remove', async (t) => {
  // Frequent snapshots with almost no log kept behind them: a node that joins or restarts late
  // must catch up from a snapshot.
  const c = await TestCluster.start(3, { SERVICE_RAFT_SNAPSHOT_ENTRIES: '8', SERVICE_RAFT_RETAIN_ENTRIES: '1' });
  t.teardown(() => c.close());

  // Every node sees the same members and the same leader.
  const leader = await c.waitMembers();
  for (const n of names(c)) {
    const s = await c.status(n);
    t.same([s.state, s.nodes, s.healthy_nodes, s.leader, s.is_leader], ['member', ['n1', 'n2', 'n3'], ['n1', 'n2', 'n3'], leader, n === leader], `status on ${n}`);
    t.same((await c.request(n, 'GET', '/vectordb/cluster/nodes')).body, { nodes: ['n1', 'n2', 'n3'] });
  }
  t.same(await waitFor(async () => {
    const r = await roles(c, 'n2');
    return Object.values(r).every((v) => v === 'voter/up') ? r : undefined;
  }, { timeoutMs: 10_000, what: 'three voters' }), { n1: 'voter/up', n2: 'voter/up', n3: 'voter/up' });

  // A node with the wrong cookie is refused, with a line on both sides, and exits non-zero.
  const wrong = await runNodeExpectingExit({
    SERVICE_ENABLE_CLUSTER: 'true',
    SERVICE_NODE_NAME: 'intruder',
    SERVICE_GRPC_PORT: '0',
    SERVICE_GRPC_ADVERTISE: '127.0.0.1:1',
    SERVICE_SEED_NODES: `127.0.0.1:${c.node('n1').grpcPort}`,
    RELEASE_COOKIE: 'not-the-cookie',
    SERVICE_JOIN_TIMEOUT_MS: '1000',
    SERVICE_DATA_DIR: `${c.root}/intruder`,
  });
  t.equal(wrong.code, 1);
  t.match(wrong.output, /cannot join any seed.*RELEASE_COOKIE differs/);
  await waitFor(() => /(bad cookie proof from node intruder|link from node intruder closed during the cookie handshake): its RELEASE_COOKIE differs/.test(c.node('n1').child!.output()), { what: 'the seed to log the refused cookie' });
  t.same(names(c), ['n1', 'n2', 'n3']);

  // A key made on n1 works on n3; revoked on n2, it stops working on n1.
  const made = await c.request('n1', 'POST', '/_keys', { body: { permissions: ['read'], label: 'everywhere' } });
  t.equal(made.status, 201);
  const key = made.body.key as string;
  await waitFor(async () => (await c.request('n3', 'GET', '/db/nothing-here', { key })).status === 404, { what: 'the key to work on n3' });
  t.equal((await c.request('n2', 'DELETE', `/_keys/${made.body.id}`)).status, 200);
  // Acknowledged revocation: refused everywhere at once (no waiting for the apply to spread).
  t.equal((await c.request('n1', 'GET', '/db/nothing-here', { key })).status, 401);
  t.equal((await c.request('n3', 'GET', '/db/nothing-here', { key })).status, 401);

  // kill -9 the metadata leader: a new one is elected; writes go on; the old one catches up.
  const first = await c.leader();
  await c.kill9(first);
  const second = await c.leader();
  t.not(second, first);
  const during = await c.request(second, 'POST', '/_keys', { body: { permissions: ['read'], label: 'made while a node was dead' } });
  t.equal(during.status, 201);
  await c.startNode(first);
  await c.waitMembers();
  await waitFor(async () => (await c.request(first, 'GET', '/db/nothing-here', { key: during.body.key })).status === 404, { timeoutMs: 30_000, what: 'the restarted node to catch up' });

  // A fourth node joins as a learner (4 live nodes: 3 voters keep the count odd). The log it
  // would need was compacted: it is fed a snapshot, and keys made before it joined work there.
  for (let i = 0; i < 10; i++) t.equal((await c.request('n1', 'POST', '/_keys', { body: { permissions: ['read'] } })).status, 201);
  await c.add('n4', { SERVICE_RAFT_SNAPSHOT_ENTRIES: '8', SERVICE_RAFT_RETAIN_ENTRIES: '1' });
  await c.waitMembers();
  // n4 is a member once it has applied its own addition to the group; n1 may apply it later.
  const n4Role = await waitFor(async () => {
    const role = (await roles(c, 'n1')).n4;
    return role === undefined || role.startsWith('none/') ? undefined : role;
  }, { timeoutMs: 30_000, what: 'n4 in the metadata group on n1' });
  t.same(n4Role, 'learner/up');
  await waitFor(async () => (await c.request('n4', 'GET', '/db/nothing-here', { key: during.body.key })).status === 404, { timeoutMs: 30_000, what: 'an old key to work on n4' }); // a snapshot transfer
  t.match(c.node('n4').child!.output(), /restored the metadata from a snapshot/, 'n4 caught up through a snapshot');

  // It dies: down on the others, then removed by an operator. An up node cannot be removed.
  t.equal((await c.request('n1', 'DELETE', '/_cluster/nodes/n2')).status, 409);
  await c.kill9('n4');
  // Every node reads from the metadata it has applied, so wait until each has applied it.
  for (const n of ['n1', 'n2', 'n3']) await waitFor(async () => (await roles(c, n)).n4 === 'learner/down', { timeoutMs: 15_000, what: `n4 to be down on ${n}` });
  t.same((await c.status('n3')).healthy_nodes, ['n1', 'n2', 'n3']);
  // /health says what is wrong, /metrics counts nodes by status and shows the group.
  const health = await c.request('n1', 'GET', '/health');
  t.match(health.text, /node n4 is down/);
  const metrics = (await c.request('n1', 'GET', '/metrics')).text;
  t.match(metrics, /firkin_cluster_nodes\{status="down"\} 1/);
  t.match(metrics, /firkin_raft_commit_index\{group="meta"\} [1-9]/);
  t.match(metrics, /firkin_raft_proposal_seconds_count\{group="meta"\} /);
  const removed = await c.request('n3', 'DELETE', '/_cluster/nodes/n4');
  t.same([removed.status, removed.body], [200, { node: 'n4', status: 'removed' }]);
  await waitFor(async () => JSON.stringify((await c.status('n1')).nodes) === JSON.stringify(['n1', 'n2', 'n3']), { what: 'n4 gone from the members' });
  await waitFor(async () => (await roles(c, 'n1')).n4 === 'none/left', { what: 'n4 out of the metadata group' });
  // n4 comes back with its old data, believing it is a member: it asks, learns it was removed,
  // and stops its cluster side instead of campaigning for ever with no leader.
  await c.startNode('n4');
  await waitFor(async () => (await c.status('n4')).state === 'left', { timeoutMs: 15_000, what: 'the removed n4 to learn it is out' });
  // Its log arrives through a pipe: the line may trail the state /vectordb/cluster/status shows.
  const outLine = /this node is out of its cluster \(it left, or an operator removed it while it was down\)/;
  await waitFor(() => outLine.test(c.node('n4').child!.output()), { timeoutMs: 5_000, what: "n4's log line" }).catch(() => undefined);
  t.match(c.node('n4').child!.output(), outLine, 'and it says so in its log');
  const leftHealth = (await c.request('n4', 'GET', '/health')).body;
  t.equal(leftHealth.cluster.state, 'left', 'and in /health');
  t.equal(leftHealth.status, 'degraded', 'which is not ok: it answers for nothing of the cluster');
  t.ok((leftHealth.problems as string[]).includes('cluster: node n4 is out of its cluster (it left, or an operator removed it): it answers for its own databases only; to serve the cluster again, start it on an empty data directory (it joins as a new node)'), JSON.stringify(leftHealth.problems));
  // A cluster write through it is the cluster's to take: 503, ask a member (it was a 400 not_member).
  const through = await c.request('n4', 'PUT', '/vectordb/collections/through-left', { body: { dimensions: 2 } });
  t.match([through.status, through.body], [503, { error: 'unavailable', message: /^node n4 is out of its cluster \(it left, or an operator removed it\): ask a member/ }]);
  await c.stop('n4');
  c.nodes.delete('n4');

  // n3 leaves: the members shrink, and n3 says it left.
  const leave = await c.request('n3', 'POST', '/vectordb/cluster/leave');
  t.same([leave.status, leave.body], [200, { status: 'leaving', node: 'n3' }]);
  await waitFor(async () => JSON.stringify((await c.status('n1')).nodes) === JSON.stringify(['n1', 'n2']), { timeoutMs: 15_000, what: 'n3 gone from the members' });
  await waitFor(async () => (await c.status('n3')).state === 'left', { timeoutMs: 15_000, what: 'n3 to report left' });
  t.same((await c.request('n3', 'POST', '/vectordb/cluster/leave')).body.error, 'not_member');
  const r = await roles(c, 'n1');
  t.same([r.n1, r.n2, r.n3], ['voter/up', 'voter/up', 'none/left']);
  // The two left still write; one alone cannot: 503 no_quorum, after a bounded wait.
  t.equal((await c.request('n2', 'POST', '/_keys', { body: { permissions: ['read'] } })).status, 201);
  await c.kill9('n2');
  const alone = await c.request('n1', 'POST', '/_keys', { body: { permissions: ['read'] } });
  t.same([alone.status, alone.body.error], [503, 'no_quorum']);
});

t.test('five voters at most: a sixth node is a learner, promoted when a voter is removed', async (t) => {
  const c = await TestCluster.start(5);
  t.teardown(() => c.close());
  // The sixth joins on demand: started without seeds and without bootstrapping, it waits.
  await c.add('n6', { SERVICE_SEED_NODES: '', SERVICE_CLUSTER_BOOTSTRAP: 'false' });
  t.equal((await c.status('n6')).state, 'joining');
  const join = await c.request('n6', 'POST', '/_cluster/join', { body: { seed: `127.0.0.1:${c.node('n3').grpcPort}` } });
  t.same([join.status, join.body], [202, { status: 'joining', node: 'n6' }]);
  await c.waitMembers();
  t.equal((await c.request('n6', 'POST', '/_cluster/join', { body: { seed: `127.0.0.1:${c.node('n1').grpcPort}` } })).body.error, 'already_member');
  t.equal((await c.request('n6', 'POST', '/_cluster/join', { body: { seed: 'nohost' } })).status, 400);
  const settled = await waitFor(async () => {
    const r = await roles(c, 'n1');
    const voters = Object.entries(r).filter(([, v]) => v === 'voter/up').map(([n]) => n);
    const learners = Object.entries(r).filter(([, v]) => v === 'learner/up').map(([n]) => n);
    return voters.length === 5 && learners.length === 1 ? { voters, learners } : undefined;
  }, { timeoutMs: 20_000, what: '5 voters and 1 learner' });
  const learner = settled.learners[0]!;
  const leader = await c.leader();
  const victim = settled.voters.find((v) => v !== leader)!;
  await c.kill9(victim);
  await waitFor(async () => (await roles(c, leader))[victim] === 'voter/down', { timeoutMs: 15_000, what: `${victim} to be down` });
  t.equal((await c.request(leader, 'DELETE', `/_cluster/nodes/${victim}`)).status, 200);
  c.nodes.delete(victim);
  const after = await waitFor(async () => {
    const r = await roles(c, leader);
    return r[learner] === 'voter/up' && r[victim] === 'none/left' ? r : undefined;
  }, { timeoutMs: 15_000, what: `${learner} to be promoted` });
  t.equal(Object.values(after).filter((v) => v === 'voter/up').length, 5);
});
