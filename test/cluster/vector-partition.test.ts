// The spec's partition table on replicated vector shards, three real processes whose peer
// links pass through the chaos fault proxy: the majority reads and writes; the isolated
// minority refuses writes (503 no_quorum) and linearizable reads, serves stale reads from its
// own replica; after healing it catches up and every replica holds the same data. Then a
// split it has not applied, and the feed's cursor from after it.
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

const DIMS = 4;
const vec = (i: number) => [Math.sin(i), Math.cos(i), (i % 5) / 5, 1];

t.test('minority partition: no writes, stale reads only; healing converges (vector shards and VDB shards)', async (t) => {
  const names = ['n1', 'n2', 'n3'];
  const { cluster, net, close } = await TestCluster.behindProxy(names);
  t.teardown(close);
  await cluster.waitVoters(3);

  const put = await cluster.request('n1', 'PUT', '/vectordb/collections/p', { body: { dimensions: DIMS, num_shards: 2, replication_factor: 3, bm25_backend: 'memory' } });
  t.equal(put.status, 201, JSON.stringify(put.body));
  const documents = Array.from({ length: 20 }, (_, i) => ({ id: `d${i}`, text: `word${i} common`, metadata: { i }, vector: vec(i) }));
  t.equal((await cluster.request('n2', 'POST', '/vectordb/collections/p/docs', { body: { documents } })).status, 200);
  // n3 has applied them (a stale read there sees them) before the cut.
  await waitFor(async () => (await cluster.request('n3', 'GET', '/vectordb/collections/p/docs/d19?consistency=stale')).status === 200, { what: 'n3 to apply the writes' });

  // A VDB beside the collection: its shards are Raft groups too.
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'pv', shard_count: 2, placement: { replica_factor: 3 } } })).status, 201, 'VDB created');
  t.equal((await cluster.request('n2', 'POST', '/vdb/pv/_bulk_docs', { body: { docs: Array.from({ length: 10 }, (_, i) => ({ _id: `v${i}` })) } })).status, 201);
  // Acknowledged on a majority: n3 may not have applied them yet. It has before the cut.
  const staleTotal = async () => (await cluster.request<{ meta?: { total?: number } }>('n3', 'POST', '/vdb/pv/_find?consistency=stale', { body: { where: [], limit: 100 } })).body.meta?.total;
  await waitFor(async () => (await staleTotal()) === 10, { what: 'n3 to apply the VDB writes' });

  net.isolate('n3');
  const vdbRefused = await cluster.request('n3', 'PUT', '/vdb/pv/minority', { body: {} });
  t.equal(vdbRefused.status, 503, 'a VDB write on the minority side is refused');
  t.equal(vdbRefused.body.error, 'no_quorum');
  t.equal((await cluster.request('n3', 'GET', '/vdb/pv/v1')).status, 503, 'a VDB read there is refused too (reads are linearizable)');
  const staleFind = await cluster.request('n3', 'POST', '/vdb/pv/_find?consistency=stale', { body: { where: [], limit: 100 } });
  t.equal(staleFind.body.meta?.total, 10, `a stale _find is answered from the minority's own replicas (${staleFind.status})`);
  const staleGet = await cluster.request('n3', 'GET', '/vdb/pv/v1?consistency=stale&revs=true');
  t.match([staleGet.status, staleGet.body], [200, { _id: 'v1', _rev: /^1-/, _revisions: { start: 1 } }], 'and a stale GET of a VDB document, with its read options');
  t.equal((await cluster.request('n3', 'GET', '/vdb/pv/v1?consistency=eventual')).status, 400, 'consistency is linearizable or stale');
  const refused = await cluster.request('n3', 'POST', '/vectordb/collections/p/docs', { body: { id: 'minority', text: 'x', metadata: {}, vector: vec(99) } });
  t.equal(refused.status, 503, 'a write on the minority side is refused');
  t.equal(refused.body.error, 'no_quorum');
  const linearizable = await cluster.request('n3', 'GET', '/vectordb/collections/p/docs/d3');
  t.equal(linearizable.status, 503, 'a linearizable read there is refused too');
  const stale = await cluster.request('n3', 'GET', '/vectordb/collections/p/docs/d3?consistency=stale');
  t.match(stale.body, { id: 'd3', text: 'word3 common' }, 'a stale read is served from the local replica');
  const staleSearch = await cluster.request('n3', 'POST', '/vectordb/collections/p/search', { body: { vector: vec(7), k: 1, consistency: 'stale' } });
  t.equal(staleSearch.body.results[0]?.id, 'd7', 'stale search too');
  t.notOk(staleSearch.body.partial, 'every shard answered from its local replica');
  const staleKeyword = await cluster.request('n3', 'POST', '/vectordb/collections/p/search/bm25', { body: { query: 'word5', k: 1, consistency: 'stale' } });
  t.equal(staleKeyword.body.results[0]?.id, 'd5', 'and keyword search');

  // The majority goes on.
  const during = await waitFor(async () => {
    const r = await cluster.request('n1', 'POST', '/vectordb/collections/p/docs', { body: { id: 'majority', text: 'written while n3 was cut off', metadata: {}, vector: vec(50) } });
    return r.status === 201 ? r : undefined;
  }, { timeoutMs: 15_000, what: 'a write on the majority side' });
  t.equal(during.status, 201, 'the majority writes');
  const vdbDuring = await waitFor(async () => {
    const r = await cluster.request('n2', 'PUT', '/vdb/pv/majority', { body: {} });
    return r.status === 201 ? r : undefined;
  }, { timeoutMs: 15_000, what: 'a VDB write on the majority side' });
  t.equal(vdbDuring.status, 201, 'the majority writes to the VDB');
  t.equal((await cluster.request('n2', 'GET', '/vectordb/collections/p/docs/majority')).status, 200, 'and reads');
  t.equal((await cluster.request('n3', 'GET', '/vectordb/collections/p/docs/majority?consistency=stale')).status, 404, 'the minority has not seen it (stale)');

  // Made while n3 is cut off: n3's copy of the metadata lacks them. It must not answer that
  // they do not exist (a read of `null` to a client, once the register was written): it
  // brings its copy up to date first, and cut off it cannot (503).
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/late', { body: { dimensions: DIMS, num_shards: 1, replication_factor: 2, bm25_backend: 'memory' } })).status, 201);
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/late/docs', { body: { id: 'x', text: 'late', metadata: {}, vector: vec(1) } })).status, 201);
  t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'latev', shard_count: 1, placement: { replica_factor: 2 } } })).status, 201);
  t.equal((await cluster.request('n1', 'PUT', '/vdb/latev/x', { body: {} })).status, 201);
  for (const path of ['/vectordb/collections/late/docs/x', '/vectordb/collections/late/docs/x?consistency=stale', '/vectordb/collections/late/reshard', '/vdb/latev/x']) {
    const r = await cluster.request('n3', 'GET', path);
    t.same([r.status, r.body.error], [503, 'no_quorum'], `${path} on the cut-off node: 503, not 404 (${r.body.message})`);
  }

  net.apply({ kind: 'heal' });
  for (const path of ['/vectordb/collections/late/docs/x', '/vdb/latev/x']) {
    await waitFor(async () => ((await cluster.request('n3', 'GET', path)).status === 200 ? true : undefined), { timeoutMs: 20_000, what: `n3 to answer ${path} after healing` });
  }
  await waitFor(async () => (await cluster.request('n3', 'GET', '/vectordb/collections/p/docs/majority')).status === 200, { timeoutMs: 20_000, what: 'n3 to catch up after healing' });
  await waitFor(
    async () => {
      const all = (await Promise.all(names.map(async (n) => (await cluster.request(n, 'GET', '/_cluster/shards')).body.replicas as { group: string; digest: string; digest_applied: number }[]))).flat();
      const groups = new Set(all.map((r) => r.group));
      // p's two shards, and late's one
      return groups.size === 3 && [...groups].every((g) => new Set(all.filter((r) => r.group === g).map((r) => `${r.digest}@${r.digest_applied}`)).size === 1);
    },
    { timeoutMs: 20_000, intervalMs: 200, what: 'every replica of every shard at one digest and applied index' },
  );
  t.pass('after healing every replica of every shard holds identical data');
  await waitFor(
    async () => {
      const all = (await Promise.all(names.map(async (n) => (await cluster.request(n, 'GET', '/_cluster/vdb-shards')).body.replicas as { group: string; digest: string; digest_applied: number }[]))).flat();
      const groups = new Set(all.map((r) => r.group));
      // pv's 2 shards × 3 replicas, and latev's 1 × 2
      return all.length === 8 && [...groups].every((g) => new Set(all.filter((r) => r.group === g).map((r) => `${r.digest}@${r.digest_applied}`)).size === 1);
    },
    { timeoutMs: 20_000, intervalMs: 200, what: 'every replica of every VDB shard at one digest and applied index' },
  );
  t.pass('and every replica of every VDB shard too');
  t.equal((await cluster.request('n3', 'GET', '/vdb/pv/majority')).status, 200, 'n3 reads the VDB write made while it was cut off');
  t.equal((await cluster.request('n3', 'GET', '/vdb/pv/minority')).status, 404, 'the refused VDB write never happened');
  t.equal((await cluster.request('n3', 'GET', '/vectordb/collections/p/docs/minority')).status, 404, 'the refused write never happened');

  // A split n3 has not applied: cut off again, at once (so it still counts as live and the
  // split places on it), the split runs on n1 and n2. A `_changes` cursor from after it holds
  // one position more than n3's map has shards. n3 must not refuse the feed's own cursor (a
  // 400: a replicator gives up; the chaos suite's feed follower found it): it brings its map up
  // to date first, and cut off it cannot (503); once healed, it follows the feed from there.
  const n3Up = async () => ((await cluster.request('n1', 'GET', '/_cluster/nodes')).body.nodes as { name: string; status: string }[]).find((n) => n.name === 'n3')?.status === 'up';
  let split: Awaited<ReturnType<typeof cluster.request>> | undefined;
  // The split must be asked before n3 counts as down (1.5 s here): a loaded machine may miss
  // that, and then the split is refused (503, 3 live nodes needed); heal and try again.
  for (let attempt = 1; attempt <= 3 && split?.status !== 200; attempt++) {
    net.apply({ kind: 'heal' });
    await waitFor(n3Up, { timeoutMs: 20_000, what: 'n3 up again in the metadata' });
    net.isolate('n3');
    split = await cluster.request('n1', 'POST', '/vdb/pv/_shards/0/_split', { body: {} });
  }
  t.equal(split!.status, 200, `pv's shard 0 split while n3 is cut off (${JSON.stringify(split!.body).slice(0, 300)})`);
  const afterSplit = await cluster.request<{ changes: unknown[]; last_seq: string }>('n1', 'GET', '/vdb/pv/_changes?since=0&limit=1000');
  t.equal(afterSplit.status, 200);
  const cursor = afterSplit.body.last_seq;
  const lagging = await cluster.request('n3', 'GET', `/vdb/pv/_changes?since=${encodeURIComponent(cursor)}`);
  t.same([lagging.status, lagging.body.error], [503, 'no_quorum'], `a cursor from after the split on the cut-off node: 503, not 400 (${lagging.body.message})`);
  // Five positions where pv has three shards, asked of an up-to-date node: no cursor of pv.
  const fivePositions = `c1-${Buffer.from([0x85, 0xf6, 0xf6, 0xf6, 0xf6, 0xf6]).toString('base64url')}`;
  t.equal((await cluster.request('n1', 'GET', `/vdb/pv/_changes?since=${fivePositions}`)).status, 400, 'a cursor with more positions than the VDB has shards, on an up-to-date node, is refused');
  net.apply({ kind: 'heal' });
  const followed = await waitFor(
    async () => {
      const r = await cluster.request<{ changes: unknown[] }>('n3', 'GET', `/vdb/pv/_changes?since=${encodeURIComponent(cursor)}`);
      return r.status === 200 ? r : undefined;
    },
    { timeoutMs: 20_000, what: 'n3 to follow the feed from the cursor after healing' },
  );
  t.same(followed.body.changes, [], 'n3 follows the feed from the cursor taken after the split: nothing new since');
});
