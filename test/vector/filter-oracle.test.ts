// Filtered vector search over real HTTP, checked against brute force (test/support/filter-oracle.ts):
// a flat collection (`index.m: 0`, f32) searches exactly, so after random upserts (metadata
// changing under the filter), deletes and filters of every operator, each search, each search
// of a batch and each scroll page must answer what a client-side scan answers: the k nearest
// live points whose metadata passes, nearest first, and no more than exist.
// test/cluster/vector-shards.test.ts runs the same rounds on a collection of three shards.
import fc from 'fast-check';
import t from 'tap';
import { fcParams } from '../support/fc.js';
import { DIMS, arbFilterCase, filterRound } from '../support/filter-oracle.js';
import { startTestNode } from '../support/node.js';

t.test('oracle: filtered searches, batches and scrolls of a flat collection answer what brute force answers', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const send = (method: string, path: string, body?: unknown) => node.request(method, path, body === undefined ? {} : { body });
  let round = 0;
  let hitsSeen = 0;
  await fc.assert(
    fc.asyncProperty(arbFilterCase, async (c) => {
      const name = `oracle${round++}`;
      const created = await send('PUT', `/vectordb/collections/${name}`, { dimensions: DIMS, metric: 'l2', index: { m: 0, precision: 'f32' } });
      if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
      try {
        hitsSeen += (await filterRound(send, name, c)).hits;
      } finally {
        await send('DELETE', `/vectordb/collections/${name}`);
      }
    }),
    fcParams(60),
  );
  t.ok(hitsSeen > 0, `searches found points (${hitsSeen})`);
});
