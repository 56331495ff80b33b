// Two of three machines lost for good, on real processes: the metadata group and the shard
// group each lost a majority of their voters, and Raft waits for ever there. An operator stops
// the survivor, runs `firkin recover force` on its data directory, starts it again, removes
// the lost nodes and starts new machines under their names. Nothing the survivor held is lost,
// writes resume on it alone, and the new nodes catch up and vote again.
import { rmSync } from 'node:fs';
import t from 'tap';
import { runCli } from '../../src/cli/firkin.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface ReplicaView {
  group: string;
  docs: number | null;
  digest: string | null;
  digest_applied: number | null;
  catching_up: boolean;
  voters: string[];
  learners: string[];
}

const vec = (i: number) => [Math.sin(i), Math.cos(i), (i % 7) / 7, 1];
const docs = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: `d${from + i}`, text: `t${from + i}`, metadata: {}, vector: vec(from + i) }));

async function firkin(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, {}, { out: (s) => void (out += s), err: (s) => void (err += s), fetch: globalThis.fetch });
  return { code, out, err };
}

t.test('a survivor of a lost majority, forced to be its groups\' only voter, serves again with everything it held; new nodes catch up', async (t) => {
  const c = await TestCluster.start(3, { SERVICE_REPLICA_REPAIR_GRACE_MS: '1000' });
  t.teardown(() => c.close());
  await c.waitVoters(3);
  t.equal((await c.request('n1', 'PUT', '/vectordb/collections/r', { body: { dimensions: 4, num_shards: 1, replication_factor: 3 } })).status, 201);
  t.equal((await c.request('n1', 'POST', '/vectordb/collections/r/docs', { body: { documents: docs(0, 40) } })).status, 200);
  const dir = c.node('n1').dir;

  const inUse = await firkin('recover', 'force', '--data-dir', dir, '--node', 'n1', '--all');
  t.equal(inUse.code, 1, 'refused while the node runs');
  t.match(inUse.err, /^firkin: unavailable: .* is in use: stop the node first/);

  for (const lost of ['n2', 'n3']) {
    await c.kill9(lost);
    rmSync(c.node(lost).dir, { recursive: true, force: true });
  }
  // What the operator sees first: the survivor's /health names the leaderless group and the way out.
  let lastHealth: unknown;
  const health = await waitFor(async () => {
    const body = (await c.request('n1', 'GET', '/health')).body;
    lastHealth = body;
    return /shard replica vs\d+ has had no leader for \d+ s \(voters n1, n2, n3; live n1\).*see firkin recover/.test(JSON.stringify(body)) ? body : undefined;
  }, { timeoutMs: 30_000, what: "n1's /health to name the group without a leader" }).catch((err: Error) => {
    throw new Error(`${err.message}; its last /health: ${JSON.stringify(lastHealth)}`);
  });
  t.not(health.status, 'ok');
  await c.kill9('n1');

  const listed = await firkin('recover', 'list', '--data-dir', dir);
  t.equal(listed.code, 0, listed.err);
  t.match(listed.out, /^GROUP\s+VOTERS\s+LEARNERS\s+TERM\s+COMMIT\s+LAST\s+STATE\n/);
  t.match(listed.out, /\nmeta\s+n1,n2,n3\s/, 'the metadata group, with its three voters');
  const shardGroup = /\n(vs\d+)\s+n1,n2,n3\s/.exec(listed.out)?.[1];
  t.ok(shardGroup !== undefined, `the shard group, with its three voters:\n${listed.out}`);

  const forced = await firkin('recover', 'force', '--data-dir', dir, '--node', 'n1', '--all');
  t.equal(forced.code, 0, forced.err);
  t.match(forced.out, /^meta: n1 is now its only voter \(removed n2, n3 at term \d+; everything up to index \d+ committed\)$/m);
  t.match(forced.out, new RegExp(`^${shardGroup}: n1 is now its only voter`, 'm'));
  t.match((await firkin('recover', 'list', '--data-dir', dir)).out, /\nmeta\s+n1\s/, 'listed again: n1 votes alone');
  t.match((await firkin('recover', 'force', '--data-dir', dir, '--node', 'n1', '--group', 'meta')).out, /^meta: nothing to do: n1 is already its only voter$/m, 'a second run changes nothing');

  // The survivor alone: everything it held, and new writes.
  await c.startNode('n1');
  await waitFor(async () => {
    const r = await c.request('n1', 'GET', '/vectordb/collections/r');
    return r.status === 200 && r.body.count === 40 ? true : undefined;
  }, { timeoutMs: 30_000, what: 'n1 to serve the 40 documents it held' });
  t.equal((await c.request('n1', 'POST', '/vectordb/collections/r/docs', { body: { documents: docs(40, 20) } })).status, 200, 'a write is acknowledged by n1 alone');

  // The operator removes the lost nodes and starts new machines under their names.
  await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string }[]).filter((n) => n.status === 'down').length === 2 ? true : undefined, { timeoutMs: 30_000, what: 'n2 and n3 down' });
  for (const lost of ['n2', 'n3']) t.same((await c.request('n1', 'DELETE', `/_cluster/nodes/${lost}`)).body, { node: lost, status: 'removed' });
  for (const lost of ['n2', 'n3']) {
    const node = c.node(lost);
    node.env = { ...node.env, SERVICE_SEED_NODES: `127.0.0.1:${c.node('n1').grpcPort}` };
    await c.startNode(lost);
  }
  const settled = await waitFor(
    async () => {
      const views = await Promise.all(['n1', 'n2', 'n3'].map(async (n) => ((await c.request(n, 'GET', '/_cluster/shards')).body.replicas as ReplicaView[] | undefined)?.filter((r) => r.digest !== null) ?? []));
      const all = views.flat();
      if (views.some((v) => v.length !== 1) || new Set(all.map((r) => `${r.group} ${r.digest}@${r.digest_applied}`)).size !== 1) return undefined;
      // Vouched for (not catching up) comes before the promotion to voter: without it, the
      // group would have no majority once n1 is gone below.
      const voting = (r: ReplicaView) => [...r.voters].sort().join() === 'n1,n2,n3' && r.learners.length === 0;
      return all[0]!.docs === 60 && all.every((r) => !r.catching_up && voting(r)) ? all : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: 'the new replicas to catch up with n1 and vote in its group' },
  );
  t.equal(settled.length, 3);
  await waitFor(async () => ((await c.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { role: string; status: string }[]).filter((n) => n.role === 'voter' && n.status === 'up').length === 3 ? true : undefined, { timeoutMs: 30_000, what: 'three metadata voters again' });
  // They vote: without n1, the two new nodes still answer for all 60.
  await c.kill9('n1');
  await waitFor(async () => {
    const r = await c.request('n2', 'GET', '/vectordb/collections/r');
    return r.status === 200 && r.body.count === 60 ? true : undefined;
  }, { timeoutMs: 30_000, what: 'n2 and n3 to serve every document without n1' });
});
