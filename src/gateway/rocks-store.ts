// GatewayStore over the node's RocksDB `system` column family, with every record also held in
// memory (the whole set is small and read on every request). Keys (core/keys.ts tuples):
//
//   ["gateway.tenant", tenant_id]             -> Tenant (JSON)
//   ["gateway.key", key_id]                   -> KeyRecord (JSON; the key's SHA-256, never the key)
//   ["gateway.collection", tenant_id, name]   -> CollectionRecord (JSON)
//
// Every write is one synced batch, applied to memory only after it is durable.
import assert from 'node:assert/strict';
import { NUMBER, OBJECT, STRING, jsonRecordCodec, objectSchema } from '../core/codec.js';
import { encodeKey, prefixRange } from '../core/keys.js';
import type { BatchOp, Store } from '../storage/db.js';
import { FirkinError } from '../core/errors.js';
import { collectionQuotaError } from './quota.js';
import type { GatewayStore } from './store.js';
import type { CollectionRecord, KeyRecord, Tenant } from './types.js';

const TENANT = 'gateway.tenant';
const KEY = 'gateway.key';
const COLLECTION = 'gateway.collection';

const tenantCodec = jsonRecordCodec<Tenant>('gateway tenant record', objectSchema({ tenant_id: STRING, limits: OBJECT, created_at: NUMBER }));
const keyCodec = jsonRecordCodec<KeyRecord>(
  'gateway key record',
  objectSchema({ key_id: STRING, tenant_id: STRING, digest: STRING, key_prefix: STRING, created_at: NUMBER }, { rpm_limit: NUMBER }),
);
const collectionCodec = jsonRecordCodec<CollectionRecord>(
  'gateway collection record',
  objectSchema({ tenant_id: STRING, name: STRING, internal: STRING, dimension: NUMBER, vector_count: NUMBER, storage_bytes: NUMBER, created_at: NUMBER }, { embedder: OBJECT }),
);

const tenantKey = (id: string) => encodeKey([TENANT, id]);
const keyKey = (id: string) => encodeKey([KEY, id]);
const collectionKey = (tenantId: string, name: string) => encodeKey([COLLECTION, tenantId, name]);

export class RocksGatewayStore implements GatewayStore {
  readonly #store: Store;
  readonly #tenants = new Map<string, Tenant>();
  readonly #keys = new Map<string, KeyRecord>(); // by key_id
  readonly #keysByDigest = new Map<string, KeyRecord>();
  readonly #collections = new Map<string, Map<string, CollectionRecord>>(); // tenant -> name -> record

  private constructor(store: Store) {
    this.#store = store;
  }

  static async load(store: Store): Promise<RocksGatewayStore> {
    const self = new RocksGatewayStore(store);
    for await (const [, v] of store.entries('system', prefixRange([TENANT]))) {
      const t = tenantCodec.decode(v);
      self.#tenants.set(t.tenant_id, t);
    }
    for await (const [, v] of store.entries('system', prefixRange([KEY]))) self.#remember(keyCodec.decode(v));
    for await (const [, v] of store.entries('system', prefixRange([COLLECTION]))) self.#rememberCollection(collectionCodec.decode(v));
    for (const k of self.#keys.values()) assert.ok(self.#tenants.has(k.tenant_id), `gateway key ${k.key_id} belongs to no tenant`);
    for (const t of self.#collections.keys()) assert.ok(self.#tenants.has(t), `gateway collections of unknown tenant ${t}`);
    return self;
  }

  #remember(k: KeyRecord): void {
    this.#keys.set(k.key_id, k);
    this.#keysByDigest.set(k.digest, k);
  }

  #rememberCollection(c: CollectionRecord): void {
    let byName = this.#collections.get(c.tenant_id);
    if (byName === undefined) this.#collections.set(c.tenant_id, (byName = new Map()));
    byName.set(c.name, c);
  }

  tenant(tenantId: string): Tenant | undefined {
    return this.#tenants.get(tenantId);
  }

  tenants(): readonly Tenant[] {
    return [...this.#tenants.values()].sort((a, b) => (a.tenant_id < b.tenant_id ? -1 : 1));
  }

  async keyByDigest(digest: string): Promise<KeyRecord | undefined> {
    return this.#keysByDigest.get(digest);
  }

  key(keyId: string): KeyRecord | undefined {
    return this.#keys.get(keyId);
  }

  keysOf(tenantId: string): readonly KeyRecord[] {
    return [...this.#keys.values()]
      .filter((k) => k.tenant_id === tenantId)
      .sort((a, b) => a.created_at - b.created_at || (a.key_id < b.key_id ? -1 : 1));
  }

  collection(tenantId: string, name: string): CollectionRecord | undefined {
    return this.#collections.get(tenantId)?.get(name);
  }

  collectionsOf(tenantId: string): readonly CollectionRecord[] {
    return [...(this.#collections.get(tenantId)?.values() ?? [])].sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async createTenant(tenant: Tenant, firstKey: KeyRecord): Promise<void> {
    assert.equal(firstKey.tenant_id, tenant.tenant_id);
    await this.#store.batch(
      [
        { type: 'put', cf: 'system', key: tenantKey(tenant.tenant_id), value: tenantCodec.encode(tenant) },
        { type: 'put', cf: 'system', key: keyKey(firstKey.key_id), value: keyCodec.encode(firstKey) },
      ],
      { sync: true },
    );
    this.#tenants.set(tenant.tenant_id, tenant);
    this.#remember(firstKey);
  }

  async putTenant(tenant: Tenant): Promise<void> {
    await this.#store.put('system', tenantKey(tenant.tenant_id), tenantCodec.encode(tenant), { sync: true });
    this.#tenants.set(tenant.tenant_id, tenant);
  }

  async deleteTenant(tenantId: string): Promise<void> {
    const keys = this.keysOf(tenantId);
    const collections = this.collectionsOf(tenantId);
    const ops: BatchOp[] = [
      { type: 'del', cf: 'system', key: tenantKey(tenantId) },
      ...keys.map((k): BatchOp => ({ type: 'del', cf: 'system', key: keyKey(k.key_id) })),
      ...collections.map((c): BatchOp => ({ type: 'del', cf: 'system', key: collectionKey(tenantId, c.name) })),
    ];
    await this.#store.batch(ops, { sync: true });
    this.#tenants.delete(tenantId);
    for (const k of keys) {
      this.#keys.delete(k.key_id);
      this.#keysByDigest.delete(k.digest);
    }
    this.#collections.delete(tenantId);
  }

  async putKey(key: KeyRecord): Promise<void> {
    assert.ok(this.#tenants.has(key.tenant_id), 'a key needs its tenant');
    await this.#store.put('system', keyKey(key.key_id), keyCodec.encode(key), { sync: true });
    this.#remember(key);
  }

  async deleteKey(keyId: string): Promise<void> {
    const key = this.#keys.get(keyId);
    if (key === undefined) return;
    await this.#store.del('system', keyKey(keyId), { sync: true });
    this.#keys.delete(keyId);
    this.#keysByDigest.delete(key.digest);
  }

  /** The gateway calls this under the tenant's lock, so the checks and the write do not race. */
  async createCollection(record: CollectionRecord): Promise<void> {
    const tenant = this.#tenants.get(record.tenant_id);
    assert.ok(tenant !== undefined, 'a collection needs its tenant');
    if (this.collection(record.tenant_id, record.name) !== undefined) throw new FirkinError('collection_already_exists', `collection ${JSON.stringify(record.name)} already exists`);
    const refused = collectionQuotaError({ collection_count: this.collectionsOf(record.tenant_id).length }, tenant.limits);
    if (refused !== undefined) throw new FirkinError('quota_exceeded', refused);
    await this.#putCollection(record);
  }

  async addUsage(tenantId: string, name: string, change: { vectors: number; bytes: number }): Promise<void> {
    const c = this.collection(tenantId, name);
    if (c === undefined) return;
    await this.#putCollection({ ...c, vector_count: Math.max(0, c.vector_count + change.vectors), storage_bytes: Math.max(0, c.storage_bytes + change.bytes) });
  }

  async recount(tenantId: string, name: string, vectors: number, bytes?: number): Promise<void> {
    const c = this.collection(tenantId, name);
    if (c !== undefined) await this.#putCollection({ ...c, vector_count: Math.max(0, vectors), storage_bytes: bytes === undefined ? c.storage_bytes : Math.max(0, bytes) });
  }

  async #putCollection(record: CollectionRecord): Promise<void> {
    await this.#store.put('system', collectionKey(record.tenant_id, record.name), collectionCodec.encode(record), { sync: true });
    this.#rememberCollection(record);
  }

  async deleteCollection(tenantId: string, name: string): Promise<void> {
    await this.#store.del('system', collectionKey(tenantId, name), { sync: true });
    this.#collections.get(tenantId)?.delete(name);
  }
}
