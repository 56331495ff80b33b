// The gateway's store in cluster mode: tenants and tenant keys are the metadata group's
// (created, changed and revoked through consensus, read from this node's applied copy, so a
// key made on one node authenticates on every node), while tenant collections and their usage
// stay with the node that holds the collection (vector data is node-local until collections
// are replicated; see docs/cluster.md).
import type { RocksGatewayStore } from '../gateway/rocks-store.js';
import type { GatewayStore } from '../gateway/store.js';
import type { CollectionRecord, KeyRecord, Tenant } from '../gateway/types.js';
import type { MetaCommand, MetaState } from './meta-state.js';

export interface MetaAccess {
  readonly state: MetaState;
  propose(cmd: MetaCommand): Promise<void>;
}

export class MetaGatewayStore implements GatewayStore {
  readonly #meta: MetaAccess;
  readonly #local: RocksGatewayStore;
  #byDigest = new Map<string, KeyRecord>();
  #indexedFrom: MetaState['tenantKeys'] | undefined;

  constructor(meta: MetaAccess, local: RocksGatewayStore) {
    this.#meta = meta;
    this.#local = local;
  }

  /** Applied on every node: a deleted tenant's collection records go here too. */
  async applied(cmd: MetaCommand | undefined): Promise<void> {
    if (cmd?.type !== 'tenant.delete') return;
    for (const c of this.#local.collectionsOf(cmd.tenantId)) await this.#local.deleteCollection(c.tenant_id, c.name);
  }

  tenant(tenantId: string): Tenant | undefined {
    return this.#meta.state.tenants[tenantId];
  }

  tenants(): readonly Tenant[] {
    return Object.values(this.#meta.state.tenants).sort((a, b) => (a.tenant_id < b.tenant_id ? -1 : 1));
  }

  keyByDigest(digest: string): KeyRecord | undefined {
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
    return this.#local.collection(tenantId, name);
  }

  collectionsOf(tenantId: string): readonly CollectionRecord[] {
    return this.#local.collectionsOf(tenantId);
  }

  createTenant(tenant: Tenant, firstKey: KeyRecord): Promise<void> {
    return this.#meta.propose({ type: 'tenant.create', tenant, key: firstKey });
  }

  putTenant(tenant: Tenant): Promise<void> {
    return this.#meta.propose({ type: 'tenant.put', tenant });
  }

  async deleteTenant(tenantId: string): Promise<void> {
    await this.#meta.propose({ type: 'tenant.delete', tenantId });
  }

  putKey(key: KeyRecord): Promise<void> {
    return this.#meta.propose({ type: 'tenantkey.put', key });
  }

  async deleteKey(keyId: string): Promise<void> {
    if (this.key(keyId) === undefined) return;
    await this.#meta.propose({ type: 'tenantkey.delete', keyId });
  }

  putCollection(record: CollectionRecord): Promise<void> {
    return this.#local.putCollection(record, { ownerChecked: this.tenant(record.tenant_id) !== undefined });
  }

  deleteCollection(tenantId: string, name: string): Promise<void> {
    return this.#local.deleteCollection(tenantId, name);
  }
}
