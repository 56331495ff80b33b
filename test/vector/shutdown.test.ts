// A vector engine that is stopping answers `unavailable` (503: try again elsewhere or later),
// not `not_found`: the collection still exists. Writes accepted before the stop still land.
import t from 'tap';
import { createCollectionRequest, docRequest, searchRequest } from '../../src/vector/requests.js';
import { openTestEngine } from './engine-harness.js';

t.test('requests during close are unavailable; a write accepted before it is kept', async (t) => {
  const h = await openTestEngine();
  t.teardown(() => h.close());
  const { engine } = h;
  await engine.createCollection(createCollectionRequest('c', { dimensions: 3 }));
  const before = engine.putDoc('c', docRequest({ id: 'before', vector: [1, 0, 0] }));
  const closing = engine.close();
  await t.rejects(engine.putDoc('c', docRequest({ id: 'after', vector: [0, 1, 0] })), { code: 'unavailable' });
  await t.rejects(engine.search(searchRequest('c', { vector: [1, 0, 0] })), { code: 'unavailable' });
  await t.rejects(engine.getDoc('c', 'before'), { code: 'unavailable' });
  await t.rejects(engine.deleteDoc('c', 'before'), { code: 'unavailable' });
  t.equal(await before, 'before');
  await closing;

  await h.restart();
  t.equal((await h.engine.getDoc('c', 'before')).id, 'before');
  await t.rejects(h.engine.getDoc('c', 'after'), { code: 'not_found' });
});
