// Ids route to shards through core/shard-hash.ts. A collection whose catalogue entry predates
// hash ranges (no `routing`) keeps the places `hash32(id) % n` gave its documents, so they are
// still found; a new collection records range routing.
import t from 'tap';
import { encodeKey } from '../../src/core/keys.js';
import { hash32 } from '../../src/core/shard-hash.js';
import { createCollectionRequest, docRequest, searchRequest } from '../../src/vector/requests.js';
import { openTestEngine } from './engine-harness.js';
const vec = (i: number) => [Math.cos(i), Math.sin(i), 1 + (i % 5)];

t.test('a collection from before hash ranges still finds its documents where hash32 % n put them', async (t) => {
  // The catalogue entry as the engine wrote it before ranges: no `routing`, three shards.
  const { config } = createCollectionRequest('old', { dimensions: 3, num_shards: 3 });
  const shards = [4, 5, 6];
  const h = await openTestEngine({
    prepare: (store) =>
      store.batch(
        [
          { type: 'put', cf: 'system', key: encodeKey(['vector', 'collection', 'old']), value: Buffer.from(JSON.stringify({ name: 'old', config, shards })) },
          { type: 'put', cf: 'system', key: encodeKey(['vector', 'next_shard']), value: Buffer.from('7') },
        ],
        { sync: true },
      ),
  });
  t.teardown(() => h.close());
  const { engine, store } = h;
  const ids = Array.from({ length: 60 }, (_, i) => `doc-${i}`);
  await engine.putDocs({ collection: 'old', docs: ids.map((id, i) => docRequest({ id, vector: vec(i) })) });
  for (const id of ids) {
    const home = shards[hash32(id, 0) % 3]!;
    const where = await Promise.all(shards.map((s) => store.get('vec', encodeKey([s, 'd', id]))));
    t.same(where.map((w) => w !== undefined), shards.map((s) => s === home), `${id} lives in shard ${home} only`);
  }
  t.same(new Set(ids.map((id) => hash32(id, 0) % 3)).size, 3, 'the ids spread over all three shards');

  await h.restart();
  for (const id of ids) t.equal((await h.engine.getDoc('old', id)).id, id);
  const { results: hits } = await h.engine.search(searchRequest('old', { vector: vec(7), k: 1 }));
  t.equal(hits[0]?.id, 'doc-7', 'search reaches every shard');
  await h.engine.deleteDoc('old', 'doc-7');
  await t.rejects(h.engine.getDoc('old', 'doc-7'), { code: 'not_found' });

  await h.engine.createCollection(createCollectionRequest('new', { dimensions: 3 }));
  const raw = await h.store.get('system', encodeKey(['vector', 'collection', 'new']));
  t.match(JSON.parse(raw!.toString('utf8')), { shards: [7], routing: { scheme: 'ranges', hash: 'xxhash', ranges: [{ shardId: 7, start: 0, end: 2 ** 32 - 1 }] } });
});
