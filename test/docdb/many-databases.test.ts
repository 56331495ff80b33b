// Many databases on one node (CouchDB's database-per-user pattern): each database's record
// and body caches are a part of the node's (src/core/shared-lru.ts), so a database costs a
// few kilobytes until it is used. Each had caches of its own, bounded per database: 0.33 MB
// of heap for an empty one (lru-cache allocates its slots up front), and no bound for the node
// (16 MiB of bodies a database). And a database dropped and made again under its name reads
// its own documents, never ones its predecessor cached.
import t from 'tap';
import { heapGrowth } from '../support/heap.js';
import { parseDoc } from '../../src/docdb/doc-input.js';
import { tempDocEngine } from '../support/doc-engine.js';

t.test('300 databases, each written and read: the heap grows by kilobytes a database, not a cache each', async (t) => {
  const { docs } = await tempDocEngine(t, { prefix: 'firkin-manydbs-' });
  const make = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      await docs.createDb(`user${i}`);
      await docs.putDoc(`user${i}`, 'profile', parseDoc({ name: `user ${i}` }), undefined);
      t.equal((await docs.getDoc(`user${i}`, 'profile')).name, `user ${i}`);
    }
  };
  await make(0, 20); // warm: code, the shared caches' own slots
  const grown = await heapGrowth(() => make(20, 320));
  // ~100 MB with a cache per database; a few MB now. The bound leaves room for noise.
  t.ok(grown < 30e6, `the heap grew by ${(grown / 1e6).toFixed(1)} MB for 300 databases`);
});

t.test('a database dropped and made again reads its own documents, not its predecessor\'s cached ones', async (t) => {
  const { docs } = await tempDocEngine(t, { prefix: 'firkin-manydbs-' });
  await docs.createDb('reused');
  const first = await docs.putDoc('reused', 'a', parseDoc({ v: 'old' }), undefined);
  t.equal((await docs.getDoc('reused', 'a')).v, 'old'); // cached: record and body
  await docs.deleteDb('reused');
  await docs.createDb('reused');
  await t.rejects(docs.getDoc('reused', 'a'), { code: 'not_found' });
  const second = await docs.putDoc('reused', 'a', parseDoc({ v: 'new' }), undefined);
  t.match(second.rev, /^1-/, 'a first revision again');
  t.not(second.rev, first.rev);
  t.equal((await docs.getDoc('reused', 'a')).v, 'new');
  t.equal((await docs.getDoc('reused', 'a'))._rev, second.rev);
});
