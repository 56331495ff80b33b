// Names a plain database may not take (a cluster node's VDB shard names): the engine asks only
// once the hook's `ready` has resolved (a node catching its copy of the metadata up), so a
// reservation made elsewhere a moment ago is seen; replicas and other names do not wait.
import pino from 'pino';
import t from 'tap';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import { DocEngine } from '../../src/docdb/engine.js';
import { Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';

t.test('a plain create waits for the reservation to be known; a replica does not', async (t) => {
  const store = await Store.open(tempDir('firkin-reserved-'));
  t.teardown(() => store.close());
  const docs = await DocEngine.open({ store, hlc: new HybridClock(systemClock), log: pino({ level: 'silent' }), clock: systemClock, revsLimit: 1000, compactAfterWrites: 0 });
  // The node's copy learns of VDB v only when it catches up.
  const known = new Set<string>();
  const asked: string[] = [];
  docs.reserveNames(
    (db) => (known.has(db.split('_s')[0]!) ? `database name ${JSON.stringify(db)} is reserved` : undefined),
    (db) => {
      if (!/_s\d+$/.test(db)) return undefined;
      asked.push(db);
      return Promise.resolve().then(() => void known.add('v'));
    },
  );
  await t.rejects(docs.createDb('v_s9'), { code: 'conflict', message: /reserved/ }, 'refused once caught up');
  t.same(asked, ['v_s9']);
  t.equal((await docs.createDb('plain')).db_name, 'plain', 'a name like no shard does not wait');
  t.equal((await docs.createDb('v_s1', { owner: 'v/1', createdMs: 1 })).db_name, 'v_s1', "a shard's own replica is not refused, nor waits");
  t.same(asked, ['v_s9']);
});
