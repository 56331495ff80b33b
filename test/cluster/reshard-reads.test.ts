// Reads racing a reshard's switch on a one-node cluster (in this process). A search takes the
// collection's shard map, then asks each shard; when the switch and the old groups' cleanup
// land in between, the old group no longer exists anywhere. Its read waited out the proposal
// deadline (5 s) and answered 503 `no_quorum` ("holds no replica"), found by the vector route
// fuzzer. Now the router sees the group deleted and routes again on the new map: every read
// during a run of reshards answers, with every document.
import t from 'tap';
import { startClusterTestNode } from '../support/one-node-cluster.js';
import { waitFor } from '../support/wait.js';

const DOCS = 24;

t.test('searches, scrolls and gets during reshards answer, complete, on a one-node cluster', async (t) => {
  const node = await startClusterTestNode({ SERVICE_NODE_NAME: 'r1' });
  t.teardown(() => node.close());
  const P = '/vectordb/collections/c';
  t.equal((await node.request('PUT', P, { body: { dimensions: 2, num_shards: 2, bm25_backend: 'memory' } })).status, 201);
  const documents = Array.from({ length: DOCS }, (_, i) => ({ id: `d${i}`, text: `common word${i}`, vector: [Math.cos(i), Math.sin(i)] }));
  t.equal((await node.request('POST', `${P}/docs`, { body: { documents } })).status, 200);

  const failures: string[] = [];
  let reads = 0;
  let resharding = true;
  const check = (what: string, status: number, ok: boolean, text: string) => {
    reads++;
    if (status !== 200 || !ok) failures.push(`${what}: ${status} ${text.slice(0, 300)}`);
  };
  const reader = async (i: number) => {
    while (resharding) {
      const bm25 = await node.request('POST', `${P}/search/bm25`, { body: { query: 'common', k: 100 } });
      check('bm25', bm25.status, bm25.body.results?.length === DOCS, bm25.text);
      const search = await node.request('POST', `${P}/search`, { body: { vector: [1, 0], k: 5 } });
      check('search', search.status, search.body.results?.length === 5, search.text);
      const scroll = await node.request('POST', `${P}/docs/scroll`, { body: { limit: 100 } });
      check('scroll', scroll.status, scroll.body.documents?.length === DOCS, scroll.text);
      const get = await node.request('GET', `${P}/docs/d${i}`);
      check('get', get.status, get.body.id === `d${i}`, get.text);
    }
  };
  const readers = [0, 1, 2].map(reader);
  for (const shards of [3, 1, 2, 4, 2, 3]) {
    const started = await node.request('POST', `${P}/reshard`, { body: { num_shards: shards } });
    t.equal(started.status, 200, `reshard to ${shards}: ${started.text}`);
    await waitFor(async () => ((await node.request('GET', `${P}/reshard`)).body.state === 'done' ? true : undefined), { what: `the reshard to ${shards} done`, timeoutMs: 60_000, intervalMs: 20 });
  }
  resharding = false;
  await Promise.all(readers);
  t.ok(reads > 0, `${reads} reads during six reshards`);
  t.same(failures, [], 'every read answered, with every document');
});
