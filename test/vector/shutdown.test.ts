// A vector engine that is stopping answers `unavailable` (503: try again elsewhere or later),
// not `not_found`: the collection still exists. Writes accepted before the stop still land.
import { rmSync } from 'node:fs';
import pino from 'pino';
import t from 'tap';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { VectorEngine } from '../../src/vector/engine.js';
import { createCollectionRequest, docRequest, searchRequest } from '../../src/vector/requests.js';
import { tempDir } from '../support/node.js';

const embedderDeps = { fetch, sleep: async () => undefined, openaiKeyOrigin: 'https://api.openai.com', outbound: { allow: [], allowLoopback: false } };
const open = (dir: string, store: Store) => VectorEngine.open({ store, ann: usearchEngine, dataDir: dir, log: pino({ level: 'silent' }), embedderDeps, saveIntervalMs: 0 });

t.test('requests during close are unavailable; a write accepted before it is kept', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = await Store.open(dir);
  let engine = await open(dir, store);
  await engine.createCollection(createCollectionRequest('c', { dimensions: 3 }));
  const before = engine.putDoc('c', docRequest({ id: 'before', vector: [1, 0, 0] }));
  const closing = engine.close();
  await t.rejects(engine.putDoc('c', docRequest({ id: 'after', vector: [0, 1, 0] })), { code: 'unavailable' });
  await t.rejects(engine.search(searchRequest('c', { vector: [1, 0, 0] })), { code: 'unavailable' });
  await t.rejects(engine.getDoc('c', 'before'), { code: 'unavailable' });
  await t.rejects(engine.deleteDoc('c', 'before'), { code: 'unavailable' });
  t.equal(await before, 'before');
  await closing;
  await store.close();

  store = await Store.open(dir);
  engine = await open(dir, store);
  t.teardown(async () => {
    await engine.close();
    await store.close();
  });
  t.equal((await engine.getDoc('c', 'before')).id, 'before');
  await t.rejects(engine.getDoc('c', 'after'), { code: 'not_found' });
});
