// Ids route to shards through core/shard-hash.ts. A collection whose catalogue entry predates
// hash ranges (no `routing`) keeps the places `hash32(id) % n` gave its documents, so they are
// still found; a new collection records range routing.
import { rmSync } from 'node:fs';
import pino from 'pino';
import t from 'tap';
import { encodeKey } from '../../src/core/keys.js';
import { hash32 } from '../../src/core/shard-hash.js';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { VectorEngine } from '../../src/vector/engine.js';
import { createCollectionRequest, docRequest, searchRequest } from '../../src/vector/requests.js';
import { tempDir } from '../support/node.js';

const embedderDeps = { fetch, sleep: async () => undefined, openaiKeyOrigin: 'https://api.openai.com', outbound: { allow: [], allowLoopback: false } };
const open = (dir: string, store: Store) => VectorEngine.open({ store, ann: usearchEngine, dataDir: dir, log: pino({ level: 'silent' }), embedderDeps, saveIntervalMs: 0 });
const vec = (i: number) => [Math.cos(i), Math.sin(i), 1 + (i % 5)];

t.test('a collection from before hash ranges still finds its documents where hash32 % n put them', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = await Store.open(dir);
  // The catalogue entry as the engine wrote it before ranges: no `routing`, three shards.
  const { config } = createCollectionRequest('old', { dimensions: 3, num_shards: 3 });
  const shards = [4, 5, 6];
  await store.batch(
    [
      { type: 'put', cf: 'system', key: encodeKey(['vector', 'collection', 'old']), value: Buffer.from(JSON.stringify({ name: 'old', config, shards })) },
      { type: 'put', cf: 'system', key: encodeKey(['vector', 'next_shard']), value: Buffer.from('7') },
    ],
    { sync: true },
  );
  let engine = await open(dir, store);
  const ids = Array.from({ length: 60 }, (_, i) => `doc-${i}`);
  await engine.putDocs({ collection: 'old', docs: ids.map((id, i) => docRequest({ id, vector: vec(i) })) });
  for (const id of ids) {
    const home = shards[hash32(id, 0) % 3]!;
    const where = await Promise.all(shards.map((s) => store.get('vec', encodeKey([s, 'd', id]))));
    t.same(where.map((w) => w !== undefined), shards.map((s) => s === home), `${id} lives in shard ${home} only`);
  }
  t.same(new Set(ids.map((id) => hash32(id, 0) % 3)).size, 3, 'the ids spread over all three shards');

  await engine.close();
  await store.close();
  store = await Store.open(dir);
  engine = await open(dir, store);
  t.teardown(async () => {
    await engine.close();
    await store.close();
  });
  for (const id of ids) t.equal((await engine.getDoc('old', id)).id, id);
  const hits = await engine.search(searchRequest('old', { vector: vec(7), k: 1 }));
  t.equal(hits[0]?.id, 'doc-7', 'search reaches every shard');
  await engine.deleteDoc('old', 'doc-7');
  await t.rejects(engine.getDoc('old', 'doc-7'), { code: 'not_found' });

  await engine.createCollection(createCollectionRequest('new', { dimensions: 3 }));
  const raw = await store.get('system', encodeKey(['vector', 'collection', 'new']));
  t.match(JSON.parse(raw!.toString('utf8')), { shards: [7], routing: { scheme: 'ranges', hash: 'xxhash', ranges: [{ shardId: 7, start: 0, end: 2 ** 32 - 1 }] } });
});
