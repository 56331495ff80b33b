// The gateway's store in cluster mode: everything is the metadata group's. Tenants, tenant
// keys and tenant collections are created, changed and revoked through consensus and read
// from this node's applied copy, so a key made on one node authenticates on every node and a
// collection made on one node (a replicated collection underneath) is used from every node.
// Usage travels as deltas (`tenantcoll.usage`) so writes through different nodes add up; the
// collection count is checked by the state machine itself, so max_collections is exact.
import assert from 'node:assert/strict';
import { FirkinError, isFirkinError, wasCommitted } from '../core/errors.js';
import type { GatewayStore } from '../gateway/store.js';
import type { CollectionRecord, KeyRecord, Tenant } from '../gateway/types.js';
import { type MetaCommand, type MetaState, tenantCollectionKey } from './meta-state.js';

export interface MetaAccess {
  readonly state: MetaState;
  propose(cmd: MetaCommand): Promise<void>;
  proposeRevocation(cmd: MetaCommand): Promise<void>;
  /** Resolves once this node's copy is confirmed fresh; 503 no_quorum when it cannot be. */
  confirmFresh(): Promise<void>;
  /** Resolves once this node has applied all that was committed before; 503 no_quorum when it cannot. */
  catchUp(): Promise<void>;
}

/**
 * Committed but not applied on this node yet (it lags the leader): the tenant or key exists,
 * and its secret, made before proposing, can be answered now, the only time it is told. Key
 * checks here confirm a fresh copy first (`keyByDigest`), so the key works here at once.
 */
function existsOnceCommitted(err: unknown): void {
  if (!wasCommitted(err)) throw err;
}

export class MetaGatewayStore implements GatewayStore {
  readonly #meta: MetaAccess;
  #byDigest = new Map<string, KeyRecord>();
  #indexedFrom: MetaState['tenantKeys'] | undefined;

  constructor(meta: MetaAccess) {
    this.#meta = meta;
  }

  tenant(tenantId: string): Tenant | undefined {
    return this.#meta.state.tenants[tenantId];
  }

  tenants(): readonly Tenant[] {
    return Object.values(this.#meta.state.tenants).sort((a, b) => (a.tenant_id < b.tenant_id ? -1 : 1));
  }

  async keyByDigest(digest: string): Promise<KeyRecord | undefined> {
    await this.#meta.confirmFresh();
    const keys = this.#meta.state.tenantKeys;
    // The map is rebuilt only when the applied key set changed (states are immutable).
    if (this.#indexedFrom !== keys) {
      this.#byDigest = new Map(Object.values(keys).map((k) => [k.digest, k]));
      this.#indexedFrom = keys;
    }
    return this.#byDigest.get(digest);
  }

  key(keyId: string): KeyRecord | undefined {
    return this.#meta.state.tenantKeys[keyId];
  }

  keysOf(tenantId: string): readonly KeyRecord[] {
    return Object.values(this.#meta.state.tenantKeys)
      .filter((k) => k.tenant_id === tenantId)
      .sort((a, b) => a.created_at - b.created_at || (a.key_id < b.key_id ? -1 : 1));
  }

  collection(tenantId: string, name: string): CollectionRecord | undefined {
    return this.#meta.state.tenantCollections[tenantCollectionKey(tenantId, name)];
  }

  collectionsOf(tenantId: string): readonly CollectionRecord[] {
    return Object.values(this.#meta.state.tenantCollections)
      .filter((c) => c.tenant_id === tenantId)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  createTenant(tenant: Tenant, firstKey: KeyRecord): Promise<void> {
    return this.#meta.propose({ type: 'tenant.create', tenant, key: firstKey }).catch(existsOnceCommitted);
  }

  putTenant(tenant: Tenant): Promise<void> {
    return this.#meta.propose({ type: 'tenant.put', tenant });
  }

  async deleteTenant(tenantId: string): Promise<void> {
    await this.#meta.proposeRevocation({ type: 'tenant.delete', tenantId });
  }

  putKey(key: KeyRecord): Promise<void> {
    return this.#meta.propose({ type: 'tenantkey.put', key }).catch(existsOnceCommitted);
  }

  async deleteKey(keyId: string): Promise<void> {
    if (this.key(keyId) === undefined) return;
    await this.#meta.proposeRevocation({ type: 'tenantkey.delete', keyId });
  }

  async createCollection(record: CollectionRecord): Promise<void> {
    try {
      await this.#meta.propose({ type: 'tenantcoll.create', record });
    } catch (err) {
      if (isFirkinError(err) && err.code === 'already_exists') throw new FirkinError('collection_already_exists', err.message);
      throw err;
    }
  }

  addUsage(tenantId: string, name: string, change: { vectors: number; bytes: number }): Promise<void> {
    return this.#ignoreGone(this.#meta.propose({ type: 'tenantcoll.usage', tenantId, name, vectors: change.vectors, bytes: change.bytes }));
  }

  recount(tenantId: string, name: string, vectors: number, bytes?: number): Promise<void> {
    // The log's command carries the count alone (GatewayStore.recount): only standalone recounts bytes.
    assert.equal(bytes, undefined, 'a cluster recount carries the count alone');
    return this.#ignoreGone(this.#meta.propose({ type: 'tenantcoll.recount', tenantId, name, vectors }));
  }

  deleteCollection(tenantId: string, name: string): Promise<void> {
    return this.#ignoreGone(this.#meta.propose({ type: 'tenantcoll.delete', tenantId, name }));
  }

  confirmFresh(): Promise<void> {
    return this.#meta.confirmFresh();
  }

  catchUp(): Promise<void> {
    return this.#meta.catchUp();
  }

  /** The collection was deleted meanwhile (through another node): nothing to count or delete. */
  async #ignoreGone(p: Promise<void>): Promise<void> {
    try {
      await p;
    } catch (err) {
      if (!(isFirkinError(err) && err.code === 'not_found')) throw err;
    }
  }
}
