// The gateway engine: tenants, keys, authentication, rate limits, quotas, and tenant
// collection operations mapped onto the vector engine under internal names. Routes
// (`http/routes/gateway-admin.ts`, `gateway-v1.ts`) validate and call one method here; this class knows no HTTP.
import { randomBytes } from 'node:crypto';
import { FirkinError } from '../core/errors.js';
import type { Clock } from '../core/hlc.js';
import { digestsEqual, generateGatewayKey, generateKeyId, keyDigest, secretsEqual, shownPrefix } from './keys.js';
import { embedderUrlAllowed } from './embedder-urls.js';
import { KeyedSerialQueue } from '../core/serial.js';
import { internalName, isTenantId, parseInternalName, TENANT_ID_RULE } from './names.js';
import { collectionQuotaError, documentBytes, writeQuotaError } from './quota.js';
import { type Admission, RateLimiter } from './rate-limiter.js';
import type { GatewayStore } from './store.js';
import type { CollectionRecord, Embedder, KeyRecord, Limits, Tenant, Usage } from './types.js';
import type { GatewayDocument, GatewayHit, GatewayScroll, GatewayScrollPage, GatewaySearch, GatewayVectors } from './vectors.js';

export const GATEWAY_LIMITS = {
  /** Keys one tenant may hold at once (rotation needs 2; more is for several clients). */
  keysPerTenantMax: 100,
  /** Documents in one batch write. */
  batchDocumentsMax: 1_000,
} as const;

/** Generated ids (a document without `id`): 12 random bytes, base64url, 16 characters. */
const GENERATED_ID_BYTES = 12;

export type NewDocument = Omit<GatewayDocument, 'id'> & { readonly id?: string };

export interface GatewayOptions {
  store: GatewayStore;
  /** Undefined: no vector engine, so no tenant routes (admin only). */
  vectors: GatewayVectors | undefined;
  clock: Clock;
  masterKey: string;
  defaults: Limits;
  /** URL prefixes tenants may use as embedder `url` (embedder-urls.ts). */
  embedderUrls: readonly string[];
  /**
   * How many nodes share each rpm_limit (a cluster's up nodes; 1 standalone). Buckets are
   * node-local, so each node admits its share (rounded up): the limit holds cluster-wide when
   * clients spread their requests over the nodes.
   */
  rpmShare?: () => number;
}

export interface Caller {
  readonly tenant: Tenant;
  readonly key: KeyRecord;
}

export interface CreatedKey {
  readonly api_key: string;
  readonly record: KeyRecord;
}

export interface PublicKey {
  key_id: string;
  tenant_id: string;
  key_prefix: string;
  rpm_limit: number | null;
  created_at: number;
}

export function publicKey(k: KeyRecord): PublicKey {
  return { key_id: k.key_id, tenant_id: k.tenant_id, key_prefix: k.key_prefix, rpm_limit: k.rpm_limit ?? null, created_at: k.created_at };
}

export interface CollectionView {
  name: string;
  dimension: number;
  count: number;
  embedder?: Embedder;
  created_at: number;
}

function view(c: CollectionRecord): CollectionView {
  return { name: c.name, dimension: c.dimension, count: c.vector_count, ...(c.embedder === undefined ? {} : { embedder: c.embedder }), created_at: c.created_at };
}

const tenantNotFound = (tenantId: string) => new FirkinError('not_found', `no tenant ${JSON.stringify(tenantId)}`);
const collectionNotFound = (name: string) => new FirkinError('collection_not_found', `no collection ${JSON.stringify(name)}`);

/** A collection whose count start-up found off, told before its bytes are counted again (`Gateway.reconcile`). */
export interface RecountNotice {
  readonly tenant_id: string;
  readonly name: string;
  /** The registry's count. */
  readonly registry: number;
  /** The engine's. */
  readonly engine: number;
}

/** A stored document's bytes as its write counted them (none: 0). */
function storedSize(doc: GatewayDocument | undefined, dimension: number): number {
  return doc === undefined ? 0 : documentBytes(doc, dimension);
}

/** Documents a page of the bytes recount reads. */
const BYTES_RECOUNT_PAGE = 1_000;

/**
 * A collection's stored bytes counted again from its documents, as its writes count them
 * (`documentBytes`): a read of every document (no vectors), in pages.
 */
async function storedBytes(vectors: GatewayVectors, c: CollectionRecord): Promise<number> {
  let bytes = 0;
  let offset: string | undefined;
  do {
    const page = await vectors.scroll(c.internal, { limit: BYTES_RECOUNT_PAGE, ...(offset === undefined ? {} : { offset }) });
    for (const d of page.documents) bytes += documentBytes(d, c.dimension);
    offset = page.next;
  } while (offset !== undefined);
  return bytes;
}

export class Gateway {
  readonly #store: GatewayStore;
  readonly #vectors: GatewayVectors | undefined;
  readonly #clock: Clock;
  readonly #masterKey: string;
  readonly #defaults: Limits;
  readonly #embedderUrls: readonly string[];
  readonly #rpmShare: () => number;
  readonly #limiter = new RateLimiter();
  readonly #locks = new KeyedSerialQueue<string>();
  /** By internal name: the counts a cluster recount pass found apart, for the next pass to confirm. */
  readonly #recountSeen = new Map<string, { registry: number; engine: number }>();

  constructor(options: GatewayOptions) {
    this.#store = options.store;
    this.#vectors = options.vectors;
    this.#clock = options.clock;
    this.#masterKey = options.masterKey;
    this.#defaults = options.defaults;
    this.#embedderUrls = options.embedderUrls;
    this.#rpmShare = options.rpmShare ?? (() => 1);
  }

  /**
   * Make the registry agree with the vector engine after a crash between the two writes of a
   * collection operation: drop records whose collection is gone, take counts from the engine,
   * and where a count differed, the stored bytes too (a read of the collection's documents,
   * told first to `recounting`: a large collection takes a while).
   */
  async reconcile(recounting?: (c: RecountNotice) => void): Promise<{ dropped: number; recounted: number; unclaimed: string[] }> {
    const vectors = this.#vectors;
    let dropped = 0;
    let recounted = 0;
    if (vectors === undefined) return { dropped, recounted, unclaimed: [] };
    for (const tenant of this.#store.tenants()) {
      await this.#locks.run(tenant.tenant_id, async () => {
        for (const c of this.#store.collectionsOf(tenant.tenant_id)) {
          const info = await vectors.collectionInfo(c.internal);
          if (info === undefined) {
            await this.#store.deleteCollection(c.tenant_id, c.name);
            dropped++;
          } else if (info.count !== c.vector_count) {
            // The write whose usage was lost moved the bytes too: counted again with the documents.
            recounting?.({ tenant_id: c.tenant_id, name: c.name, registry: c.vector_count, engine: info.count });
            await this.#store.recount(c.tenant_id, c.name, info.count, await storedBytes(vectors, c));
            recounted++;
          }
        }
      });
    }
    // Engine collections named like a tenant's but without a record: left by a crash during a
    // delete, or made through the standard API. Reported, not deleted: a create of that name
    // replaces one.
    const unclaimed = (await vectors.listCollections()).filter((internal) => {
      const owner = parseInternalName(internal);
      return owner !== undefined && this.#store.collection(owner.tenantId, owner.name) === undefined;
    });
    return { dropped, recounted, unclaimed };
  }

  /**
   * A cluster's pass at start (`reconcile` is a standalone node's): takes each tenant
   * collection's count from the engine where the record differs, as a node that crashed
   * between a document write and its usage write left it (one batch short). It never drops a
   * record: a collection this node cannot see yet may well exist. A count is kept only if the
   * record did not move while the engine counted (another node's write counted meanwhile),
   * and only once a later pass finds the same two counts again: a batch another node has
   * written to the engine but not yet counted in the record looks like a lost one, and taking
   * the engine's count then would count it twice when that node's usage write lands. A lost
   * batch stays; an in-flight one is counted by its writer before the next pass (passes are half
   * a second or more apart: open.ts). A collection that could not be counted, moved, or differs
   * for the first time is `unsettled`, for the next pass. `signal`: stops between two
   * collections (the node is closing).
   */
  async recountUsage(signal?: AbortSignal): Promise<{ recounted: number; unsettled: number }> {
    const vectors = this.#vectors;
    let recounted = 0;
    let unsettled = 0;
    if (vectors === undefined) return { recounted, unsettled };
    await this.#store.confirmFresh?.();
    for (const tenant of this.#store.tenants()) {
      for (const listed of this.#store.collectionsOf(tenant.tenant_id)) {
        if (signal?.aborted === true) return { recounted, unsettled };
        // Read again right before its count: the counts before it took time.
        const c = this.#store.collection(listed.tenant_id, listed.name);
        if (c === undefined) continue;
        try {
          // Counted outside the tenant's lock (a shard without a leader must not hold up the
          // tenant's writes); a write of this node that lands meanwhile moves the record before
          // the lock is ours, since it counts itself under the lock.
          const info = await vectors.collectionInfo(c.internal);
          await this.#locks.run(tenant.tenant_id, async () => {
            const now = this.#store.collection(c.tenant_id, c.name);
            if (info === undefined || now === undefined) return;
            const seen = this.#recountSeen.get(c.internal);
            this.#recountSeen.delete(c.internal);
            if (now.vector_count !== c.vector_count) unsettled++;
            else if (info.count === now.vector_count) return;
            else if (seen?.registry === now.vector_count && seen.engine === info.count) {
              await this.#store.recount(c.tenant_id, c.name, info.count);
              recounted++;
            } else {
              this.#recountSeen.set(c.internal, { registry: now.vector_count, engine: info.count });
              unsettled++;
            }
          });
        } catch {
          unsettled++;
        }
      }
    }
    return { recounted, unsettled };
  }

  // ---- authentication and admission

  /** The master key, compared in constant time. */
  checkMaster(header: string | undefined): void {
    if (header === undefined || header === '') throw new FirkinError('missing_api_key', 'send the master key in X-Api-Key');
    if (!secretsEqual(header, this.#masterKey)) throw new FirkinError('invalid_master_key', 'wrong master key');
  }

  /** The tenant and key a tenant key belongs to. */
  async authenticate(header: string | undefined): Promise<Caller> {
    if (header === undefined || header === '') throw new FirkinError('missing_api_key', 'send your API key in X-Api-Key');
    const digest = keyDigest(header);
    const key = await this.#store.keyByDigest(digest);
    // The map lookup already matched; the constant-time check keeps it so if lookup changes.
    if (key === undefined || !digestsEqual(key.digest, digest)) throw new FirkinError('invalid_api_key', 'unknown or revoked API key');
    const tenant = this.#store.tenant(key.tenant_id);
    if (tenant === undefined) throw new FirkinError('invalid_api_key', 'unknown or revoked API key');
    return { tenant, key };
  }

  /** One request's worth of tokens; the caller maps `allowed: false` to a 429. */
  admit(caller: Caller): Admission {
    const share = Math.max(1, this.#rpmShare());
    const local = (rpm: number | undefined) => (rpm === undefined ? undefined : Math.ceil(rpm / share));
    return this.#limiter.admit(
      { tenantId: caller.tenant.tenant_id, tenantRpm: local(caller.tenant.limits.rpm_limit)!, keyId: caller.key.key_id, keyRpm: local(caller.key.rpm_limit) },
      this.#clock.nowMs(),
    );
  }

  // ---- admin

  tenants(): readonly Tenant[] {
    return this.#store.tenants();
  }

  tenant(tenantId: string): Tenant {
    const tenant = this.#store.tenant(tenantId);
    if (tenant === undefined) throw tenantNotFound(tenantId);
    return tenant;
  }

  async createTenant(tenantId: string, limits: Partial<Limits>): Promise<{ tenant: Tenant; key: CreatedKey }> {
    if (!isTenantId(tenantId)) throw new FirkinError('bad_request', TENANT_ID_RULE);
    return this.#locks.run(tenantId, async () => {
      if (this.#store.tenant(tenantId) !== undefined) throw new FirkinError('conflict', `tenant ${JSON.stringify(tenantId)} already exists`);
      const nowMs = this.#clock.nowMs();
      const tenant: Tenant = { tenant_id: tenantId, limits: { ...this.#defaults, ...limits }, created_at: nowMs };
      const key = this.#newKey(tenantId, undefined, nowMs);
      await this.#store.createTenant(tenant, key.record);
      return { tenant, key };
    });
  }

  async updateTenant(tenantId: string, limits: Partial<Limits>): Promise<Tenant> {
    return this.#locks.run(tenantId, async () => {
      const tenant = this.tenant(tenantId);
      const updated: Tenant = { ...tenant, limits: { ...tenant.limits, ...limits } };
      await this.#store.putTenant(updated);
      return updated;
    });
  }

  /** Deletes the tenant's collections from the vector engine, then the tenant and its keys. */
  async deleteTenant(tenantId: string): Promise<{ collections_deleted: number; keys_revoked: number }> {
    return this.#locks.run(tenantId, async () => {
      this.tenant(tenantId);
      const collections = this.#store.collectionsOf(tenantId);
      const keys = this.#store.keysOf(tenantId);
      // Keys first: from here on no request of this tenant is admitted.
      for (const k of keys) await this.#store.deleteKey(k.key_id);
      for (const c of collections) {
        await this.#vectors?.deleteCollection(c.internal);
        await this.#store.deleteCollection(tenantId, c.name);
      }
      await this.#store.deleteTenant(tenantId);
      for (const k of keys) this.#limiter.forgetKey(k.key_id);
      this.#limiter.forgetTenant(tenantId);
      return { collections_deleted: collections.length, keys_revoked: keys.length };
    });
  }

  #newKey(tenantId: string, rpmLimit: number | undefined, nowMs: number): CreatedKey {
    const apiKey = generateGatewayKey();
    const record: KeyRecord = {
      key_id: generateKeyId(),
      tenant_id: tenantId,
      digest: keyDigest(apiKey),
      key_prefix: shownPrefix(apiKey),
      ...(rpmLimit === undefined ? {} : { rpm_limit: rpmLimit }),
      created_at: nowMs,
    };
    return { api_key: apiKey, record };
  }

  async createKey(tenantId: string, rpmLimit: number | undefined): Promise<CreatedKey> {
    return this.#locks.run(tenantId, async () => {
      this.tenant(tenantId);
      if (this.#store.keysOf(tenantId).length >= GATEWAY_LIMITS.keysPerTenantMax) {
        throw new FirkinError('forbidden', `tenant ${JSON.stringify(tenantId)} already has ${GATEWAY_LIMITS.keysPerTenantMax} keys: revoke one first`);
      }
      const key = this.#newKey(tenantId, rpmLimit, this.#clock.nowMs());
      await this.#store.putKey(key.record);
      return key;
    });
  }

  keys(tenantId: string): readonly KeyRecord[] {
    this.tenant(tenantId);
    return this.#store.keysOf(tenantId);
  }

  /** Only a key of this tenant can be revoked through this tenant's path. */
  async revokeKey(tenantId: string, keyId: string): Promise<void> {
    return this.#locks.run(tenantId, async () => {
      this.tenant(tenantId);
      const key = this.#store.key(keyId);
      if (key === undefined || key.tenant_id !== tenantId) throw new FirkinError('not_found', `tenant ${JSON.stringify(tenantId)} has no key ${JSON.stringify(keyId)}`);
      await this.#store.deleteKey(keyId);
      this.#limiter.forgetKey(keyId);
    });
  }

  usage(tenantId: string): Usage {
    this.tenant(tenantId);
    const collections = this.#store.collectionsOf(tenantId);
    return {
      tenant_id: tenantId,
      vector_count: collections.reduce((n, c) => n + c.vector_count, 0),
      collection_count: collections.length,
      storage_bytes: collections.reduce((n, c) => n + c.storage_bytes, 0),
    };
  }

  // ---- tenant operations (the caller is authenticated and admitted)

  #engine(): GatewayVectors {
    if (this.#vectors === undefined) throw new FirkinError('unavailable', 'the vector service is not running on this node');
    return this.#vectors;
  }

  /**
   * A collection the local copy lacks may have been made through another node a moment ago:
   * a cluster node catches its copy up before it answers 404 (as the vector engine does).
   */
  async #collection(tenantId: string, name: string): Promise<CollectionRecord> {
    let c = this.#store.collection(tenantId, name);
    if (c === undefined && this.#store.catchUp !== undefined) {
      await this.#store.catchUp();
      c = this.#store.collection(tenantId, name);
    }
    if (c === undefined) throw collectionNotFound(name);
    return c;
  }

  /** Runs under the tenant's lock, and only while the tenant still exists. */
  #asTenant<T>(caller: Caller, work: (tenant: Tenant) => Promise<T>): Promise<T> {
    return this.#locks.run(caller.tenant.tenant_id, async () => {
      // The tenant may have been deleted or re-limited while this request waited.
      const tenant = this.#store.tenant(caller.tenant.tenant_id);
      if (tenant === undefined || this.#store.key(caller.key.key_id) === undefined) throw new FirkinError('invalid_api_key', 'unknown or revoked API key');
      return work(tenant);
    });
  }

  listCollections(caller: Caller): CollectionView[] {
    return this.#store.collectionsOf(caller.tenant.tenant_id).map(view);
  }

  async getCollection(caller: Caller, name: string): Promise<CollectionView> {
    return view(await this.#collection(caller.tenant.tenant_id, name));
  }

  async createCollection(caller: Caller, name: string, options: { dimension: number; embedder?: Embedder }): Promise<CollectionView> {
    const vectors = this.#engine();
    const url = options.embedder?.url;
    if (url !== undefined && !embedderUrlAllowed(url, this.#embedderUrls)) {
      throw new FirkinError('bad_request', `embedder url ${JSON.stringify(url)} is not allowed on this node: omit it to use the default, or ask the operator to list it in SERVICE_GATEWAY_EMBEDDER_URLS`);
    }
    return this.#asTenant(caller, async (tenant) => {
      const id = tenant.tenant_id;
      if (this.#store.collection(id, name) !== undefined) throw new FirkinError('collection_already_exists', `collection ${JSON.stringify(name)} already exists`);
      const refused = collectionQuotaError(this.usage(id), tenant.limits);
      if (refused !== undefined) throw new FirkinError('quota_exceeded', refused);
      const internal = internalName(id, name);
      // A collection in the engine without a record is left over from a crash between the
      // two writes below (only this gateway makes names of this shape): replace it.
      if ((await vectors.collectionInfo(internal)) !== undefined) await vectors.deleteCollection(internal);
      await vectors.createCollection(internal, options);
      const record: CollectionRecord = {
        tenant_id: id,
        name,
        internal,
        dimension: options.dimension,
        ...(options.embedder === undefined ? {} : { embedder: options.embedder }),
        vector_count: 0,
        storage_bytes: 0,
        created_at: this.#clock.nowMs(),
      };
      try {
        await this.#store.createCollection(record);
      } catch (err) {
        // Another node took the last collection of the quota meanwhile (the metadata decides).
        await vectors.deleteCollection(internal).catch(() => false);
        throw err;
      }
      return view(record);
    });
  }

  async deleteCollection(caller: Caller, name: string): Promise<void> {
    const vectors = this.#engine();
    await this.#asTenant(caller, async (tenant) => {
      const c = await this.#collection(tenant.tenant_id, name);
      // Record first: a crash in between leaves an engine collection no tenant can see,
      // which a later create of the same name replaces.
      await this.#store.deleteCollection(tenant.tenant_id, name);
      await vectors.deleteCollection(c.internal);
    });
  }

  /** Documents without an id get a generated one. */
  async upsert(caller: Caller, name: string, docs: readonly NewDocument[]): Promise<{ id: string; status: 'created' | 'updated' }[]> {
    const vectors = this.#engine();
    return this.#asTenant(caller, async (tenant) => {
      const c = await this.#collection(tenant.tenant_id, name);
      const withIds: GatewayDocument[] = docs.map((d) => ({ ...d, id: d.id ?? randomBytes(GENERATED_ID_BYTES).toString('base64url') }));
      // The last write of an id in a batch wins; each id counts once.
      const last = new Map<string, GatewayDocument>();
      for (const d of withIds) last.set(d.id, d);
      let newVectors = 0;
      let deltaBytes = 0;
      const existed = new Set<string>();
      const olds = await Promise.all([...last.keys()].map((id) => vectors.getDocument(c.internal, id)));
      let i = 0;
      for (const [id, d] of last) {
        const old = olds[i++];
        if (old === undefined) newVectors++;
        else {
          existed.add(id);
          deltaBytes -= documentBytes(old, c.dimension);
        }
        deltaBytes += documentBytes(d, c.dimension);
      }
      const refused = writeQuotaError(this.usage(tenant.tenant_id), tenant.limits, { newVectors, deltaBytes });
      if (refused !== undefined) throw new FirkinError('quota_exceeded', refused);
      try {
        await vectors.upsert(c.internal, [...last.values()]);
      } catch (err) {
        // The engine may have written part of the batch before failing (an I/O error, an
        // embedder failing half way): take the count from it, and the bytes of what landed from
        // the batch's documents as stored now, so usage stays exact. If the engine cannot be
        // read either, the next start's reconcile counts again; the write's own error is the answer.
        try {
          const info = await vectors.collectionInfo(c.internal);
          if (info !== undefined && info.count !== c.vector_count) await this.#store.recount(c.tenant_id, c.name, info.count);
          const nows = await Promise.all([...last.keys()].map((id) => vectors.getDocument(c.internal, id)));
          const landedBytes = nows.reduce((sum, now, j) => sum + storedSize(now, c.dimension) - storedSize(olds[j], c.dimension), 0);
          if (landedBytes !== 0) await this.#store.addUsage(c.tenant_id, c.name, { vectors: 0, bytes: landedBytes });
        } catch {
          // As said: reconciled at the next start.
        }
        throw err;
      }
      await this.#store.addUsage(c.tenant_id, c.name, { vectors: newVectors, bytes: deltaBytes });
      return withIds.map((d) => ({ id: d.id, status: existed.has(d.id) ? 'updated' : 'created' }));
    });
  }

  async getDocument(caller: Caller, name: string, id: string): Promise<GatewayDocument> {
    const c = await this.#collection(caller.tenant.tenant_id, name);
    const doc = await this.#engine().getDocument(c.internal, id);
    if (doc === undefined) throw new FirkinError('document_not_found', `no document ${JSON.stringify(id)} in collection ${JSON.stringify(name)}`);
    return doc;
  }

  /** 404 for a missing document, and the counters change only when something was deleted. */
  async deleteDocument(caller: Caller, name: string, id: string): Promise<void> {
    const vectors = this.#engine();
    await this.#asTenant(caller, async (tenant) => {
      const c = await this.#collection(tenant.tenant_id, name);
      const old = await vectors.getDocument(c.internal, id);
      if (old === undefined || !(await vectors.deleteDocument(c.internal, id))) {
        throw new FirkinError('document_not_found', `no document ${JSON.stringify(id)} in collection ${JSON.stringify(name)}`);
      }
      await this.#store.addUsage(c.tenant_id, c.name, { vectors: -1, bytes: -documentBytes(old, c.dimension) });
    });
  }

  async search(caller: Caller, name: string, search: GatewaySearch): Promise<GatewayHit[]> {
    const c = await this.#collection(caller.tenant.tenant_id, name);
    return this.#engine().search(c.internal, search);
  }

  async scroll(caller: Caller, name: string, page: GatewayScroll): Promise<GatewayScrollPage> {
    const c = await this.#collection(caller.tenant.tenant_id, name);
    return this.#engine().scroll(c.internal, page);
  }

}
