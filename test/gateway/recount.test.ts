// A cluster node's start-up recount (`Gateway.recountUsage`), over a real registry store and an
// engine stand-in whose answers the test chooses: counts taken, records never dropped, a record
// that moved while the engine counted left for the next pass, an engine error likewise. And
// the repair after a write that failed half way: count and bytes of what landed.
import t from 'tap';
import { tenantPrefix } from '../../src/gateway/names.js';
import { RocksGatewayStore } from '../../src/gateway/rocks-store.js';
import type { Tenant } from '../../src/gateway/types.js';
import type { GatewayVectors } from '../../src/gateway/vectors.js';
import { documentBytes } from '../../src/gateway/quota.js';
import { FirkinError } from '../../src/core/errors.js';
import { Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';
import { LIMITS, collectionRecord as record, gatewayOver, memoryVectors } from './fakes.js';

t.test('counts taken where two passes find them apart alike; none dropped; a record moved, a batch in flight or an engine error left for the next pass', async (t) => {
  const db = await Store.open(tempDir('firkin-recount-'));
  t.teardown(() => db.close());
  const store = await RocksGatewayStore.load(db);
  const tenant: Tenant = { tenant_id: 'acme', limits: LIMITS, created_at: 0 };
  await store.createTenant(tenant, { key_id: 'k1', tenant_id: 'acme', digest: 'd', key_prefix: 'p', created_at: 0 });
  for (const [name, count] of [['short', 2], ['right', 3], ['unseen', 4], ['moving', 5], ['failing', 6], ['inflight', 3]] as const) await store.createCollection(record('acme', name, count));

  // The engine: `short` holds one batch more than its record says (its writer crashed before
  // counting it); `unseen` is not visible on this node (yet); a write of 4 to `moving` lands
  // (and counts itself) right after the engine counted 5 there; `failing` has no leader;
  // `inflight` holds a batch of 4 that another node wrote and counts in the record after the
  // first pass.
  let passes = 0;
  const counts: Record<string, number> = { short: 5, right: 3, moving: 5, inflight: 7 };
  const vectors = {
    async collectionInfo(internal: string) {
      const name = internal.slice(tenantPrefix('acme').length);
      if (name === 'failing') throw new FirkinError('unavailable', 'shard 2 has no leader');
      if (name === 'moving' && passes === 1) await store.addUsage('acme', 'moving', { vectors: 4, bytes: 0 });
      const count = counts[name];
      return count === undefined ? undefined : { dimension: 2, count };
    },
  } as Partial<GatewayVectors> as GatewayVectors;
  const gateway = gatewayOver(store, vectors);
  const countOf = (name: string) => store.collection('acme', name)?.vector_count;

  passes = 1;
  t.same(await gateway.recountUsage(), { recounted: 0, unsettled: 4 }, 'short and inflight differ for the first time; moving moved; failing failed');
  t.equal(countOf('short'), 2, 'not yet: a first difference may be a batch in flight');
  t.equal(countOf('right'), 3);
  t.equal(countOf('unseen'), 4, 'a collection this node cannot see is neither dropped nor counted');
  t.equal(countOf('moving'), 9, 'a record that moved while counting keeps its own count, not the engine\'s older one');
  t.equal(countOf('failing'), 6);
  t.equal(countOf('inflight'), 3);

  // Between the passes the other node's usage write for `inflight` lands.
  await store.addUsage('acme', 'inflight', { vectors: 4, bytes: 0 });
  passes = 2;
  counts.moving = 10;
  t.same(await gateway.recountUsage(), { recounted: 1, unsettled: 2 }, 'short confirmed; moving differs for the first time; failing still fails');
  t.equal(countOf('short'), 5, 'the lost batch counted');
  t.equal(countOf('inflight'), 7, 'the batch in flight counted once, by its writer (the engine\'s count taken at the first pass would have made it 11)');
  t.equal(countOf('moving'), 9);

  passes = 3;
  t.same(await gateway.recountUsage(), { recounted: 1, unsettled: 1 }, 'moving confirmed; the failing one is still unsettled');
  t.equal(countOf('moving'), 10);

  const stop = new AbortController();
  stop.abort();
  t.same(await gateway.recountUsage(stop.signal), { recounted: 0, unsettled: 0 }, 'a closing node stops before counting');
});

t.test('a count that waits (a shard without a leader) holds up none of the tenant\'s other work', async (t) => {
  const db = await Store.open(tempDir('firkin-recount-'));
  t.teardown(() => db.close());
  const store = await RocksGatewayStore.load(db);
  await store.createTenant({ tenant_id: 'acme', limits: LIMITS, created_at: 0 }, { key_id: 'k1', tenant_id: 'acme', digest: 'd', key_prefix: 'p', created_at: 0 });
  await store.createCollection(record('acme', 'slow', 1));
  let answer: (count: number) => void = () => {};
  let asked: () => void = () => {};
  const counting = new Promise<void>((resolve) => (asked = resolve));
  const vectors = {
    collectionInfo: () =>
      new Promise<{ dimension: number; count: number }>((resolve) => {
        answer = (count) => resolve({ dimension: 2, count });
        asked();
      }),
  } as Partial<GatewayVectors> as GatewayVectors;
  const gateway = gatewayOver(store, vectors);
  const pass = gateway.recountUsage();
  await counting;
  const key = await gateway.createKey('acme', undefined);
  t.equal(key.record.tenant_id, 'acme', 'a key made while the count waits');
  answer(3);
  t.same(await pass, { recounted: 0, unsettled: 1 }, 'a first difference waits for the next pass');
  const again = gateway.recountUsage();
  await new Promise<void>((resolve) => (asked = resolve));
  answer(3);
  t.same(await again, { recounted: 1, unsettled: 0 });
  t.equal(store.collection('acme', 'slow')?.vector_count, 3);
});

t.test('a write that fails half way: usage takes the count from the engine and the bytes of what landed', async (t) => {
  const db = await Store.open(tempDir('firkin-recount-'));
  t.teardown(() => db.close());
  const store = await RocksGatewayStore.load(db);
  const tenant: Tenant = { tenant_id: 'acme', limits: LIMITS, created_at: 0 };
  const key = { key_id: 'k1', tenant_id: 'acme', digest: 'd', key_prefix: 'p', created_at: 0 };
  await store.createTenant(tenant, key);
  await store.createCollection(record('acme', 'docs', 0));
  // The engine: documents by id, read back as it stores them, and (below) a write that lands
  // its first two documents, then fails.
  const { vectors, stored, failAfter } = memoryVectors();
  const gateway = gatewayOver(store, vectors);
  const caller = { tenant, key };
  const sum = () => [...stored.values()].reduce((n, d) => n + documentBytes(d, 2), 0);

  await gateway.upsert(caller, 'docs', [{ id: 'a', vector: [1, 0], text: 'kept as it was' }, { id: 'b', vector: [0, 1] }]);
  t.same([store.collection('acme', 'docs')?.vector_count, store.collection('acme', 'docs')?.storage_bytes], [2, sum()]);
  failAfter(2);
  const batch = [{ id: 'a', vector: [1, 1], text: 'overwritten, and longer than before' }, { id: 'c', vector: [1, 0], metadata: { tag: 'new' } }, { id: 'd', vector: [0, 1] }];
  await t.rejects(gateway.upsert(caller, 'docs', batch), { message: 'the disk failed' }, 'the write\'s own error');
  t.equal(stored.size, 3, 'a overwritten and c written; d never landed');
  t.same([store.collection('acme', 'docs')?.vector_count, store.collection('acme', 'docs')?.storage_bytes], [3, sum()], 'count and bytes as stored');
});
