// firkin against a real 3-node cluster (real processes, gRPC and RocksDB, started through
// scripts/cluster.sh): on every node it prints the same facts as the HTTP API, as JSON and
// as tables; it splits and merges a VDB's shards, lists the jobs, and removes a dead node.
import t from 'tap';
import { FAST_CLUSTER_ENV } from '../cluster/harness.js';
import { type ClusterNode, type LocalCluster, startCluster } from '../support/cluster.js';
import { waitFor } from '../support/wait.js';
import { runFirkin } from './fixtures.js';

/** The admin view without what moves on its own between two reads (heartbeat ages, indexes, leader counts). */
function facts(body: any) {
  return {
    leader: body.leader,
    term: body.term,
    nodes: body.nodes.map(({ last_heartbeat_ms_ago: _h, shard_leaders: _l, ...n }: any) => n),
  };
}

/** CLI and API read the same node a moment apart: retry until they agree, within a deadline. */
async function agree(c: LocalCluster, n: ClusterNode, args: string[], apiPath: string, view: (body: any) => unknown = (b) => b) {
  return waitFor(
    async () => {
      const [cli, api] = await Promise.all([runFirkin([...args, '--json', '--url', n.url, '--key', c.adminKey]), c.request(n, 'GET', apiPath)]);
      if (cli.code !== 0) throw new Error(cli.stderr);
      const printed = view(JSON.parse(cli.stdout));
      return JSON.stringify(printed) === JSON.stringify(view(api.body)) ? printed : false;
    },
    { timeoutMs: 30_000, what: `firkin ${args.join(' ')} on ${n.name} to match ${apiPath}` },
  );
}

t.test('status and nodes agree with the HTTP API on every node', async (t) => {
  const c = await startCluster({ nodes: 3, env: FAST_CLUSTER_ENV });
  t.teardown(() => c.close());
  const names = c.nodes.map((n) => n.name);

  const leaders = new Set<string>();
  // Each node checked in parallel: a CLI run is a process start.
  const check = async (n: ClusterNode) => {
    const status = (await agree(c, n, ['cluster', 'status'], '/vectordb/cluster/status')) as any;
    t.same([status.node, status.state, [...status.nodes].sort()], [n.name, 'member', names], `${n.name}: status`);
    leaders.add(status.leader);
    const nodes = (await agree(c, n, ['cluster', 'nodes'], '/_cluster/nodes', facts)) as any;
    t.same(nodes.nodes.map((x: any) => x.name).sort(), names, `${n.name}: nodes`);
    // Peers' shard leaderships come with their link heartbeats: known once one arrived.
    await waitFor(async () => ((await c.request(n, 'GET', '/_cluster/nodes')).body.nodes as { shard_leaders: number | null }[]).every((x) => typeof x.shard_leaders === 'number') || undefined, { what: `${n.name} to have heard every peer's shard leaderships` });

    const [table, detail, plain] = await Promise.all([
      runFirkin(['cluster', 'status', '--url', n.url]),
      runFirkin(['cluster', 'nodes', '--url', n.url, '--key', c.adminKey]),
      runFirkin(['cluster', 'nodes', '--url', n.url]),
    ]);
    t.match(table.stdout, new RegExp(`^node +${n.name}\nstate +member\nleader +${status.leader}`), `${n.name}: status table`);
    const rows = detail.stdout.trimEnd().split('\n');
    t.match(rows[0], /^leader n\d +term \d+ +commit \d+ +applied \d+$/);
    t.match(rows[1], /^NAME +STATUS +ROLE +LEADS +ZONE +VERSION +HTTP +GRPC +HEARTBEAT$/);
    t.ok(rows.slice(2).every((r) => / (voter|learner|none) +\d+ /.test(r)), `${n.name}: every live node's shard leaderships are known (${rows.slice(2).join(' | ')})`);
    t.same(rows.slice(2).map((r) => r.split(/ +/)[0]).sort(), names, `${n.name}: a row per node`);
    t.same(plain.stdout.trimEnd().split('\n').sort(), names, `${n.name}: plain names`);
  };
  await Promise.all(c.nodes.map(check));
  t.equal(leaders.size, 1, 'one leader, seen by all');

  // Every member healthy, asked through any one of them.
  const healthy = await waitFor(
    async () => {
      const r = await runFirkin(['cluster', 'health', '--url', c.node('n1').url, '--key', c.adminKey]);
      return r.code === 0 ? r : undefined;
    },
    { timeoutMs: 30_000, what: 'firkin cluster health to report every node ok' },
  );
  t.match(healthy.stdout, /\n3 nodes: 3 ok\n$/, 'cluster health: three nodes ok');

  // A clustered VDB split and merged back through firkin, the jobs listed, a cancel with nothing to cancel.
  const admin = ['--url', c.node('n2').url, '--key', c.adminKey];
  t.equal((await c.request('n1', 'POST', '/vdb', { body: { name: 'cv', shard_count: 1, placement: { replica_factor: 3 } } })).status, 201);
  const docs = Array.from({ length: 40 }, (_, i) => ({ _id: `d${i}`, i }));
  t.ok((await c.request('n1', 'POST', '/vdb/cv/_bulk_docs', { body: { docs } })).body.results.every((r: { ok?: boolean }) => r.ok), 'seeded');
  const split = await runFirkin(['vdb', 'split', 'cv', '0', ...admin]);
  t.match([split.code, split.stdout], [0, /^cv: shard 0 split: shard 1 took the upper half of its range \(\d+ documents moved\)\n$/], 'split');
  const jobs = await runFirkin(['cluster', 'jobs', ...admin]);
  t.match(jobs.stdout, /\nvdb-split-[0-9a-f]+ +vdb-rebalance +cv +done +split 0 -> 1, (\d+\/\d+ documents|\d+ documents \(\d+ when it began\)) /, 'the split in the job list');
  const merge = await runFirkin(['vdb', 'merge', 'cv', '1', '--into', '0', ...admin]);
  t.match([merge.code, merge.stdout], [0, /^cv: shard 1 merged into shard 0 \(\d+ documents moved\)\n$/], 'merge');
  t.equal((await c.request('n3', 'GET', '/vdb/cv')).body.total_docs, 40, 'every document still there once');
  const cancel = await runFirkin(['vdb', 'cancel', 'cv', ...admin]);
  t.same([cancel.code, cancel.stderr], [1, 'firkin: not_found: virtual database "cv" has no split or merge running\n']);

  // A node that dies for good: once it is down, firkin removes it through any member.
  await c.kill9('n3');
  await waitFor(async () => (await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes.find((x: any) => x.name === 'n3')?.status === 'down', {
    timeoutMs: 30_000,
    what: 'n3 to be down',
  });
  const sick = await runFirkin(['cluster', 'health', '--url', c.node('n1').url, '--key', c.adminKey]);
  t.equal(sick.code, 3, 'cluster health exits 3 with a node down');
  t.match(sick.stdout, /\nn3 +unreachable +down +1\n/, 'and shows it unreachable');
  const removed = await runFirkin(['cluster', 'remove', 'n3', '--url', c.node('n2').url, '--key', c.adminKey]);
  t.same([removed.code, removed.stdout, removed.stderr], [0, 'n3: removed\n', '']);
  const after = await waitFor(
    async () => {
      const r = await runFirkin(['cluster', 'nodes', '--url', c.node('n1').url]);
      return !r.stdout.includes('n3') && r.stdout;
    },
    { timeoutMs: 30_000, what: 'n3 to leave the member list' },
  );
  t.equal(after, 'n1\nn2\n');
});
