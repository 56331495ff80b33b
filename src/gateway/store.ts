// The gateway's state behind one interface: tenants, keys, tenant collections with their
// usage. Reads are synchronous from the local copy (the spec: key validation reads the
// local system store); writes are durable before they resolve. In a cluster the same
// interface is implemented over the metadata Raft group: each write method becomes one
// proposed command, applied idempotently on every node.
import type { CollectionRecord, KeyRecord, Tenant } from './types.js';

export interface GatewayStore {
  tenant(tenantId: string): Tenant | undefined;
  /** Ordered by tenant id. */
  tenants(): readonly Tenant[];
  /** Async because a cluster's copy may first need confirming with a metadata majority. */
  keyByDigest(digest: string): Promise<KeyRecord | undefined>;
  key(keyId: string): KeyRecord | undefined;
  /** Ordered by creation time, then id. */
  keysOf(tenantId: string): readonly KeyRecord[];
  collection(tenantId: string, name: string): CollectionRecord | undefined;
  /** Ordered by name. */
  collectionsOf(tenantId: string): readonly CollectionRecord[];

  /** A new tenant and its first key, atomically. */
  createTenant(tenant: Tenant, firstKey: KeyRecord): Promise<void>;
  putTenant(tenant: Tenant): Promise<void>;
  /** The tenant, its keys and its collection records, atomically. */
  deleteTenant(tenantId: string): Promise<void>;
  putKey(key: KeyRecord): Promise<void>;
  deleteKey(keyId: string): Promise<void>;
  /** A new record; refused with a FirkinError when the name is taken or max_collections is reached. */
  createCollection(record: CollectionRecord): Promise<void>;
  /** Add a write's change of usage (a delta, so writes through different nodes add up). */
  addUsage(tenantId: string, name: string, change: { vectors: number; bytes: number }): Promise<void>;
  /**
   * The document count as counted again from the engine; with `bytes`, the stored bytes too,
   * in the same write. Only a standalone store takes `bytes`: a cluster's recount command
   * carries the count alone, so its bytes are never recounted.
   */
  recount(tenantId: string, name: string, vectors: number, bytes?: number): Promise<void>;
  deleteCollection(tenantId: string, name: string): Promise<void>;
  /** Cluster mode: resolves once this node's copy is confirmed as fresh as the metadata leader's. */
  confirmFresh?(): Promise<void>;
  /**
   * Cluster mode: resolves once this node has applied everything committed before the call, so
   * what its copy still lacks does not exist (a lookup that misses asks this before a 404).
   */
  catchUp?(): Promise<void>;
}
