// A cluster node whose copy of the metadata lags: a collection made through another node a
// moment ago is found once the node catches its copy up, never answered 404 before; one that
// does not exist is still 404 after the catch-up; a standalone store (no catch-up) answers at once.
import t from 'tap';
import { RocksGatewayStore } from '../../src/gateway/rocks-store.js';
import type { GatewayStore } from '../../src/gateway/store.js';
import type { Tenant } from '../../src/gateway/types.js';
import { Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';
import { LIMITS, collectionRecord, gatewayOver, memoryVectors } from './fakes.js';

/** `store` as a node that has not applied the create of `fresh` until it catches up. */
function lagging(store: RocksGatewayStore): { store: GatewayStore; catchUps: () => number } {
  let caughtUp = false;
  let catchUps = 0;
  const proxy = new Proxy(store, {
    get(target, prop) {
      if (prop === 'catchUp') {
        return async () => {
          catchUps++;
          caughtUp = true;
        };
      }
      if (prop === 'collection') return (tenantId: string, name: string) => (name === 'fresh' && !caughtUp ? undefined : target.collection(tenantId, name));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy as GatewayStore, catchUps: () => catchUps };
}

t.test('a collection the local copy lacks is looked up again after a catch-up, not answered 404', async (t) => {
  const db = await Store.open(tempDir('firkin-lagging-'));
  t.teardown(() => db.close());
  const rocks = await RocksGatewayStore.load(db);
  const tenant: Tenant = { tenant_id: 'acme', limits: LIMITS, created_at: 0 };
  const key = { key_id: 'k1', tenant_id: 'acme', digest: 'd', key_prefix: 'p', created_at: 0 };
  await rocks.createTenant(tenant, key);
  await rocks.createCollection(collectionRecord('acme', 'fresh'));
  const { vectors } = memoryVectors();
  const caller = { tenant, key };
  const make = (store: GatewayStore) => gatewayOver(store, vectors);

  const first = lagging(rocks);
  t.match(await make(first.store).getCollection(caller, 'fresh'), { name: 'fresh' }, 'found after catching up');
  t.equal(first.catchUps(), 1);

  const second = lagging(rocks);
  t.same(await make(second.store).upsert(caller, 'fresh', [{ id: 'a', vector: [1, 0] }]), [{ id: 'a', status: 'created' }], 'a write through the lagging node lands');
  t.equal(second.catchUps(), 1);
  t.equal(rocks.collection('acme', 'fresh')?.vector_count, 1, 'and counts');

  const third = lagging(rocks);
  const gateway = make(third.store);
  await t.rejects(gateway.getCollection(caller, 'never-made'), { code: 'collection_not_found' }, 'a collection that does not exist is still 404');
  t.equal(third.catchUps(), 1, 'after one catch-up');
  t.match(await gateway.getDocument(caller, 'fresh', 'a'), { id: 'a' }, 'the catch-up also brought fresh');

  // Standalone: no catch-up, the copy is the truth.
  await t.rejects(make(rocks).getCollection(caller, 'never-made'), { code: 'collection_not_found' });
});
