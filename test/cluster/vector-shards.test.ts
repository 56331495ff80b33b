// Replicated vector shards on three real node processes (gRPC, RocksDB): a collection of 3
// shards with replication factor 3, writes and reads through every node, search equal to an
// exact oracle, kill -9 of a shard leader during a stream of writes with nothing acknowledged
// lost, and every replica of every shard at one digest after the killed node returns; then
// the idle groups quiesce, and killing their leader's node still fails them over. Filtered
// searches, batches and scrolls of a flat collection of three shards against brute force.
import fc from 'fast-check';
import t from 'tap';
import { exactBm25 } from '../support/bm25-oracle.js';
import { fcParams } from '../support/fc.js';
import { DIMS as ORACLE_DIMS, type Send, arbFilterCase, filterRound } from '../support/filter-oracle.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

const DIMS = 8;
const vec = (i: number) => Array.from({ length: DIMS }, (_, d) => Math.sin(i * 1.7 + d * 0.9) + (d === i % DIMS ? 1.5 : 0));
const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) (dot += a[i]! * b[i]!), (na += a[i]! ** 2), (nb += b[i]! ** 2);
  return dot / Math.sqrt(na * nb);
};

interface ReplicaView {
  group: string;
  role: string;
  leader: string | null;
  applied: number;
  docs: number;
  digest: string | null;
  digest_applied: number | null;
  quiesced: boolean;
  voters: string[];
  learners: string[];
  stopped: string | null;
  followers?: { node: string; match: number; state: string; link: string; queued: number }[];
}

t.test('replicated vector shards across three processes', async (t) => {
  // Logs compacted every 40 entries: the killed node comes back behind the compaction point
  // and loads its replicas by a streamed snapshot transfer over the cluster link.
  const cluster = await TestCluster.start(3, { SERVICE_RAFT_SNAPSHOT_ENTRIES: '40', SERVICE_RAFT_RETAIN_ENTRIES: '2' });
  t.teardown(() => cluster.close());
  await cluster.waitVoters(3);
  const nodes = ['n1', 'n2', 'n3'];

  const created = await cluster.request('n2', 'PUT', '/vectordb/collections/c', { body: { dimensions: DIMS, num_shards: 3, replication_factor: 3 } });
  t.ok(created.status === 200 || created.status === 201, `created through n2 (${created.status} ${JSON.stringify(created.body)})`);
  for (const n of nodes) {
    const list = await waitFor(async () => {
      const r = await cluster.request(n, 'GET', '/vectordb/collections');
      return r.body.c === undefined ? undefined : r.body;
    }, { what: `${n} to list the collection` });
    t.match(list.c, { dimension: DIMS, shards: 3, replication_factor: 3 }, `${n} lists it`);
  }
  const again = await cluster.request('n3', 'PUT', '/vectordb/collections/c', { body: { dimensions: DIMS } });
  t.equal(again.status, 409, 'a second create anywhere is a conflict');
  // Three replicas on three nodes: a leaving node's replicas would have nowhere to go.
  const leave = await cluster.request('n3', 'POST', '/vectordb/cluster/leave');
  t.equal(leave.status, 409, `a leave that could never end is refused (${leave.body.message})`);
  t.match(leave.body.message, /n3 cannot leave now: no other live node can take n3's replicas of collection c \(shard groups vs\d+, vs\d+, vs\d+\)/);
  t.equal((await cluster.status('n3')).state, 'member', 'n3 is still a member');

  // Writes through every node.
  const acked = new Map<string, number[]>();
  for (const [k, n] of nodes.entries()) {
    const documents = Array.from({ length: 40 }, (_, i) => ({ id: `d${k * 40 + i}`, text: `doc ${k * 40 + i}`, metadata: { n: k * 40 + i }, vector: vec(k * 40 + i) }));
    const r = await cluster.request(n, 'POST', '/vectordb/collections/c/docs', { body: { documents } });
    t.equal(r.status, 200, `batch through ${n}`);
    t.ok(r.body.results.every((x: { status?: string }) => x.status === 'created'), `every document of ${n}'s batch created`);
    for (const d of documents) acked.set(d.id, d.vector);
  }
  for (const n of nodes) {
    const doc = await cluster.request(n, 'GET', '/vectordb/collections/c/docs/d77');
    t.match(doc.body, { id: 'd77', text: 'doc 77', metadata: { n: 77 } }, `${n} reads a document written through n2`);
    const info = await cluster.request(n, 'GET', '/vectordb/collections/c');
    t.equal(info.body.count, 120, `${n} counts every document`);
  }
  // Search from every node equals the exact oracle (a high ef on 120 documents).
  const query = vec(1000);
  const exact = [...acked].map(([id, v]) => ({ id, s: cosine(query, v) })).sort((a, b) => b.s - a.s).slice(0, 10).map((x) => x.id);
  for (const n of nodes) {
    const r = await cluster.request(n, 'POST', '/vectordb/collections/c/search', { body: { vector: query, k: 10, ef: 500 } });
    t.same(r.body.results.map((h: { id: string }) => h.id), exact, `${n}: the same top 10 as exact search`);
  }
  const bare = await cluster.request('n3', 'POST', '/vectordb/collections/c/search', { body: { vector: query, k: 10, ef: 500, with_payload: false } });
  t.same(bare.body.results.map((h: { id: string }) => h.id), exact, 'with_payload: false through the shard leaders: the same top 10');
  t.ok(bare.body.results.every((h: object) => Object.keys(h).sort().join() === 'id,score'), '...with id and score only');
  // Scroll through a node: every document once, in id order, from the shard leaders.
  const scrolled: string[] = [];
  let offset: string | null = null;
  do {
    const page: { status: number; body: { documents: { id: string }[]; next_offset: string | null } } = await cluster.request('n2', 'POST', '/vectordb/collections/c/docs/scroll', { body: { limit: 25, ...(offset === null ? {} : { offset }), filter: { n: { $gte: 0 } } } });
    t.equal(page.status, 200);
    scrolled.push(...page.body.documents.map((d) => d.id));
    offset = page.body.next_offset;
  } while (offset !== null && scrolled.length <= acked.size);
  t.same(scrolled, [...acked.keys()].sort(), 'scroll lists every document once, in id order');

  // BM25 over three shards ranks as one index over the whole collection would: the shards
  // score with the collection's summed statistics, not each with its own.
  const bm25 = await cluster.request('n1', 'PUT', '/vectordb/collections/t', { body: { dimensions: DIMS, num_shards: 3, replication_factor: 3, bm25_backend: 'memory' } });
  t.ok(bm25.status === 200 || bm25.status === 201, `a BM25 collection over 3 shards (${JSON.stringify(bm25.body)})`);
  const words = ['apple', 'pear', 'plum', 'fig', 'kiwi', 'lime'];
  const texts = new Map(Array.from({ length: 60 }, (_, i) => [`t${i}`, Array.from({ length: 2 + (i % 5) }, (_, j) => words[Math.floor(words.length * ((i * 7 + j * 13) % 17) ** 2 / 289)]!).join(' ')]));
  const written = await cluster.request('n2', 'POST', '/vectordb/collections/t/docs', { body: { documents: [...texts].map(([id, text], i) => ({ id, text, metadata: {}, vector: vec(i) })) } });
  t.equal(written.status, 200, 'its documents written');
  for (const q of ['apple', 'fig kiwi', 'lime pear plum']) {
    const want = exactBm25(texts, q, 10);
    for (const n of nodes) {
      const got = (await cluster.request(n, 'POST', '/vectordb/collections/t/search/bm25', { body: { query: q, k: 10 } })).body.results as { id: string; score: number }[];
      t.same(got.map((h) => h.id), want.map((h) => h.id), `${n}: ${JSON.stringify(q)} ranks as one index over the collection`);
      t.ok(got.every((h, i) => Math.abs(h.score - want[i]!.score) < 1e-9), `${n}: ${JSON.stringify(q)} with its scores`);
    }
  }
  t.equal((await cluster.request('n3', 'DELETE', '/vectordb/collections/t')).status, 200, 'the BM25 collection deleted');

  // Filtered searches, batches and scrolls over three shards (each searched exactly, then
  // merged) answer what brute force answers (test/support/filter-oracle.ts), each request
  // through the next node; rounds share the collection and delete their points after.
  const flat = await cluster.request('n1', 'PUT', '/vectordb/collections/f', { body: { dimensions: ORACLE_DIMS, metric: 'l2', num_shards: 3, replication_factor: 2, index: { m: 0, precision: 'f32' } } });
  t.equal(flat.status, 201, 'a flat collection of three shards');
  let turn = 0;
  const send: Send = (method, path, body) => cluster.request(nodes[turn++ % nodes.length]!, method, path, body === undefined ? {} : { body });
  let rounds = 0;
  let hits = 0;
  await fc.assert(
    fc.asyncProperty(arbFilterCase, async (c) => {
      const r = await filterRound(send, 'f', c, `r${rounds++}-`);
      hits += r.hits;
      for (const id of r.live) if ((await send('DELETE', `/vectordb/collections/f/docs/${id}`)).status !== 200) throw new Error(`deleting ${id} failed`);
    }),
    fcParams(25),
  );
  t.ok(hits > 0, `filtered searches over three shards answered brute force's hits (${rounds} rounds, ${hits} hits)`);
  t.equal((await cluster.request('n2', 'DELETE', '/vectordb/collections/f')).status, 200, 'the flat collection deleted');

  // Kill -9 the node leading the most shards while writes stream through the others.
  const shards = async (n: string) => (await cluster.request(n, 'GET', '/_cluster/shards')).body.replicas as ReplicaView[];
  // What an operator reads when a replica does not catch up: a leader lists each other member's
  // progress and its own link to it; every replica says whether its group stopped.
  for (const n of nodes) {
    for (const r of await shards(n)) {
      t.equal(r.stopped, null, `${n}'s replica of ${r.group} runs`);
      if (r.role !== 'leader') {
        t.equal(r.followers, undefined, `${n}'s follower replica of ${r.group} lists no followers`);
        continue;
      }
      t.same(r.followers!.map((f) => f.node).sort(), [...r.voters, ...r.learners].filter((v) => v !== n).sort(), `${n} leads ${r.group}: every other member listed`);
      t.ok(r.followers!.every((f) => f.link === 'up' && f.match > 0 && ['probe', 'replicate', 'snapshot'].includes(f.state)), `with a live link and a match (${JSON.stringify(r.followers)})`);
    }
    const links = ((await cluster.request(n, 'GET', '/_cluster/nodes')).body.nodes as { name: string; link: string | null }[]).map((m) => [m.name, m.link]);
    t.same(links, nodes.map((m) => [m, m === n ? null : 'up']), `${n}'s /_cluster/nodes names its own link to each other node`);
  }
  const leaders = new Map<string, number>();
  for (const n of nodes) for (const r of await shards(n)) if (r.role === 'leader') leaders.set(n, (leaders.get(n) ?? 0) + 1);
  const victim = [...leaders].sort((a, b) => b[1] - a[1])[0]![0];
  const survivors = nodes.filter((n) => n !== victim);
  let stop = false;
  let next = 1000;
  const failures: string[] = [];
  const stream = (async () => {
    while (!stop) {
      const id = `s${next++}`;
      const via = survivors[next % survivors.length]!;
      const r = await cluster.request(via, 'POST', '/vectordb/collections/c/docs', { body: { id, text: id, metadata: {}, vector: vec(next) } }).catch((err: Error) => ({ status: 0, body: err.message }));
      if (r.status === 201) acked.set(id, vec(next));
      else failures.push(`${r.status}`);
    }
  })();
  await waitFor(() => acked.size >= 130, { what: 'writes before the kill' });
  await cluster.kill9(victim);
  const countAtKill = acked.size;
  await waitFor(() => acked.size >= countAtKill + 150, { timeoutMs: 60_000, what: 'writes to resume after the leader died (and move the logs past their compaction point)' });
  stop = true;
  await stream;
  t.ok(acked.size >= countAtKill + 150, `writes resumed (${failures.length} refused or timed out during the failover)`);

  // Nothing acknowledged is lost: every id reads back through a survivor.
  const missing: string[] = [];
  for (const id of acked.keys()) {
    const r = await cluster.request(survivors[0]!, 'GET', `/vectordb/collections/c/docs/${id}`);
    if (r.status !== 200) missing.push(`${id}:${r.status}`);
  }
  t.same(missing, [], 'every acknowledged write is there after the failover');
  // The collection's shard view marks the dead node's replicas once the cluster counts it down.
  const view = await waitFor(async () => {
    const body = (await cluster.request(survivors[0]!, 'GET', '/_cluster/collections/c/shards')).body as { shards: { replicas: string[]; down: string[] }[] };
    return body.shards.every((s) => s.down.includes(victim)) ? body : undefined;
  }, { timeoutMs: 15_000, what: `${victim} counted down in the collection's shard view` });
  t.ok(view.shards.every((s) => s.replicas.includes(victim) && s.down.length === 1), `every shard lists ${victim}, and only it, as down`);

  // The killed node returns and catches up: every replica of every shard at one digest.
  await cluster.startNode(victim);
  const converged = await waitFor(
    async () => {
      const all = (await Promise.all(nodes.map(shards))).flat();
      const byGroup = new Map<string, ReplicaView[]>();
      for (const r of all) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), r]);
      if (byGroup.size !== 3) return undefined;
      for (const rs of byGroup.values()) {
        if (rs.length !== 3 || rs.some((r) => r.digest !== rs[0]!.digest || r.digest_applied !== rs[0]!.digest_applied)) return undefined;
      }
      return [...byGroup.values()].reduce((n, rs) => n + rs[0]!.docs, 0);
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'every replica of every shard to report one digest at one applied index' },
  );
  t.ok(converged >= acked.size, `replicas converged, holding every acknowledged document (${converged} >= ${acked.size})`);
  for (const n of nodes) {
    const health = (await cluster.request(n, 'GET', '/health')).body;
    t.same(health.vector.cluster, { collections: 1, replicas_hosted: 3, documents_hosted: converged }, `${n}'s /health counts the replicated collection and the replicas it hosts`);
  }
  t.match(cluster.node(victim).child!.output(), /loaded shard replica vs\d+: \d+ documents at applied index \d+/, 'the returning node loaded at least one replica by snapshot transfer');

  const del = await cluster.request(victim, 'DELETE', '/vectordb/collections/c/docs/d0');
  t.equal(del.status, 200, 'a delete through the returned node');
  t.equal((await cluster.request('n1' === victim ? 'n2' : 'n1', 'GET', '/vectordb/collections/c/docs/d0')).status, 404, 'gone everywhere');

  // Left idle, every group goes silent; a silent group whose leader is killed still fails
  // over (its followers watch the leader's node on the cluster link).
  await waitFor(async () => (await Promise.all(nodes.map(shards))).flat().every((r) => r.quiesced), { timeoutMs: 30_000, intervalMs: 200, what: 'every replica quiesced' });
  t.pass('every replica of every shard quiesced once idle');
  const quietLeaders = new Map<string, number>();
  for (const n of nodes) for (const r of await shards(n)) if (r.role === 'leader') quietLeaders.set(n, (quietLeaders.get(n) ?? 0) + 1);
  const quietVictim = [...quietLeaders].sort((a, b) => b[1] - a[1])[0]![0];
  const rest = nodes.filter((n) => n !== quietVictim);
  await cluster.kill9(quietVictim);
  const ids = Array.from({ length: 30 }, (_, i) => `q${i}`); // enough ids to land on every shard
  for (const id of ids) {
    await waitFor(async () => (await cluster.request(rest[0]!, 'POST', '/vectordb/collections/c/docs', { body: { id, text: id, metadata: {}, vector: vec(2000) } })).status === 201, {
      timeoutMs: 30_000,
      what: `write ${id} after the quiesced leader died`,
    });
  }
  for (const id of ids) t.equal((await cluster.request(rest[1]!, 'GET', `/vectordb/collections/c/docs/${id}`)).status, 200, `${id} reads back linearizably through ${rest[1]}`);

  // The dead node stays down: /health says which shards are short of replicas, and that no
  // node can take them (three replicas on three nodes); so does the metric.
  const shortfall = await waitFor(
    async () => ((await cluster.request(rest[0]!, 'GET', '/health')).body.cluster?.problems as string[] | undefined)?.find((p) => p.startsWith('collection c:')),
    { timeoutMs: 30_000, what: `${rest[0]}'s /health to name the shards short of a replica` },
  );
  t.match(shortfall, /^collection c: 3 shard groups with replicas on nodes that are not live \(vs\d+ 2\/3, vs\d+ 2\/3, vs\d+ 2\/3 live\); no other live node can take the missing ones: a node must join$/, `health names them (${shortfall})`);
  // Each node counts from the metadata it has applied: rest[1] may apply the node's change of
  // status a heartbeat after rest[0].
  const underReplicated = /^firkin_cluster_under_replicated_shard_groups 3$/m;
  await waitFor(async () => underReplicated.test((await cluster.request(rest[1]!, 'GET', '/metrics')).text), { timeoutMs: 30_000, what: `${rest[1]}'s metric to count the shards short of a replica` });
  t.pass('and the metric counts them');

  // A new collection wanting more replicas than the cluster can place: asking again helps
  // once the dead node is back (503), never while the cluster is too small (400).
  const away = await cluster.request(rest[0]!, 'PUT', '/vectordb/collections/c3', { body: { dimensions: DIMS, replication_factor: 3 } });
  t.equal(away.status, 503, `three replicas while a node is down: unavailable (${JSON.stringify(away.body)})`);
  t.match(away.body, { error: 'unavailable', message: `replication_factor 3 needs 3 live nodes; 2 are up or suspect (${rest.join(', ')}), ${quietVictim} is not: try again when they are back` });
  const tooMany = await cluster.request(rest[1]!, 'PUT', '/vectordb/collections/c4', { body: { dimensions: DIMS, replication_factor: 4 } });
  t.equal(tooMany.status, 400, `four replicas on a three-node cluster: a bad request (${JSON.stringify(tooMany.body)})`);
  t.match(tooMany.body.message, /^replication_factor 4 needs 4 nodes; the cluster has 3 \(n1, n2, n3\)/);
});
