// API keys of the document database. A key is `<prefix>_` + 32 random bytes (base64url);
// only its SHA-256 is stored (system CF), so a copy of the data dir reveals no key. Lookup
// is by digest and the final comparison is constant-time.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { NUMBER, STRING, STRING_ARRAY, jsonRecordCodec, objectSchema } from '../core/codec.js';
import { FirkinError, wasCommitted } from '../core/errors.js';
import { Catalog } from '../core/catalog.js';
import type { Store } from '../storage/db.js';

export const KEY_PREFIX = 'fk';
export const PERMISSIONS = ['read', 'write', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];
const KEY_BYTES = 32;
const SHOWN_PREFIX_CHARS = 10;

export interface ApiKeyRecord {
  readonly id: string;
  readonly digest: string; // hex sha256 of the whole key
  readonly keyPrefix: string; // first characters, to recognise a key in a list
  readonly permissions: readonly Permission[];
  readonly databases: 'all' | readonly string[];
  readonly label: string | undefined;
  readonly createdAt: number;
}

const apiKeyCodec = jsonRecordCodec<ApiKeyRecord>(
  'API key record',
  objectSchema(
    { id: STRING, digest: STRING, keyPrefix: STRING, permissions: STRING_ARRAY, databases: { anyOf: [{ const: 'all' }, STRING_ARRAY] }, createdAt: NUMBER },
    { label: STRING },
  ),
);

export interface PublicKeyInfo {
  id: string;
  key_prefix: string;
  permissions: readonly Permission[];
  databases: 'all' | readonly string[];
  label?: string;
  created_at: number;
}

export function digestOf(key: string): string {
  // One call, no Hash object: this runs for every authenticated request.
  return hash('sha256', key, 'hex');
}

export function generateKey(): string {
  return `${KEY_PREFIX}_${randomBytes(KEY_BYTES).toString('base64url')}`;
}

// admin implies write, write implies read.
const RANK: Record<Permission, number> = { read: 1, write: 2, admin: 3 };

/**
 * Does a key with these grants allow `needed` on `db` (undefined = not database-scoped)? An
 * admin act that names no database (keys, the cluster, policies, federations, tasks) is the
 * whole node's: it needs an admin key for every database, or a key scoped to one database
 * could mint itself a key for all of them.
 */
export function allows(record: ApiKeyRecord, needed: Permission, db: string | undefined): boolean {
  if (!record.permissions.some((p) => RANK[p] >= RANK[needed])) return false;
  if (record.databases === 'all') return true;
  if (db === undefined) return needed !== 'admin';
  return record.databases.includes(db);
}

export function publicInfo(r: ApiKeyRecord): PublicKeyInfo {
  return {
    id: r.id,
    key_prefix: r.keyPrefix,
    permissions: r.permissions,
    databases: r.databases,
    ...(r.label === undefined ? {} : { label: r.label }),
    created_at: r.createdAt,
  };
}

const KIND = 'apikey';

/**
 * Keys kept by the cluster's metadata group: created and revoked through consensus, read from
 * the node's applied copy (`ApiKeys.clusterChanged` is called on every apply).
 */
export interface ClusterKeyStore {
  put(record: ApiKeyRecord): Promise<void>;
  /** Resolves once no node can still accept the key. */
  revoke(id: string): Promise<void>;
  /** Resolves once this node's copy of the cluster's keys is confirmed fresh; throws (503) when it cannot be. */
  confirmFresh(): Promise<void>;
}

/** `ApiKeys.verifyNow`: the key is not this node's, and the cluster's copy is confirmed fresh first. */
export const CONFIRM_FIRST = Symbol('confirm first');

export class ApiKeys {
  /** digest -> record; the whole set is small and read on every authenticated request. */
  readonly #byDigest: Catalog<ApiKeyRecord>;
  /** Cluster mode: the metadata group's keys (node-local ones, like SERVICE_ADMIN_KEY, stay in #byDigest). */
  #cluster: ClusterKeyStore | undefined;
  #clusterByDigest = new Map<string, ApiKeyRecord>();

  private constructor(byDigest: Catalog<ApiKeyRecord>) {
    this.#byDigest = byDigest;
  }

  static async load(store: Store): Promise<ApiKeys> {
    return new ApiKeys(await Catalog.open(store, { prefix: KIND, codec: apiKeyCodec, keyOf: (r) => r.digest, storedIdOf: (r) => r.id }));
  }

  async create(options: {
    permissions: readonly Permission[];
    databases: 'all' | readonly string[];
    label?: string;
    key?: string; // a given key (SERVICE_ADMIN_KEY); otherwise generated
    nowMs: number;
  }): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = options.key ?? generateKey();
    const digest = digestOf(key);
    if (this.#byDigest.has(digest)) throw new FirkinError('conflict', 'that key already exists');
    const record: ApiKeyRecord = {
      id: randomBytes(8).toString('hex'),
      digest,
      keyPrefix: key.slice(0, SHOWN_PREFIX_CHARS),
      permissions: [...new Set(options.permissions)],
      databases: options.databases === 'all' ? 'all' : [...new Set(options.databases)],
      label: options.label,
      createdAt: options.nowMs,
    };
    if (this.#cluster !== undefined) {
      if (this.#clusterByDigest.has(digest)) throw new FirkinError('conflict', 'that key already exists');
      // Committed but not applied here yet (this node lags): the key exists, and this is the
      // only time its secret can be told. A request with it here waits for a fresh copy.
      await this.#cluster.put(record).catch((err: unknown) => {
        if (!wasCommitted(err)) throw err;
      });
      return { key, record };
    }
    await this.#byDigest.put(record);
    return { key, record };
  }

  /** From now on keys are created and revoked through the cluster (node-local keys stay valid here). */
  attachCluster(cluster: ClusterKeyStore): void {
    this.#cluster = cluster;
  }

  /** The metadata group's keys as applied on this node. */
  clusterChanged(records: Iterable<ApiKeyRecord>): void {
    this.#clusterByDigest = new Map([...records].map((r) => [r.digest, r]));
  }

  list(): ApiKeyRecord[] {
    const all = new Map([...this.#byDigest.values(), ...this.#clusterByDigest.values()].map((r) => [r.id, r]));
    return [...all.values()].sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /** A node-local admin key exists (first start generates one otherwise). */
  hasAdmin(): boolean {
    return [...this.#byDigest.values()].some((r) => r.permissions.includes('admin'));
  }

  async revoke(id: string): Promise<void> {
    const record = this.list().find((r) => r.id === id);
    if (record === undefined) throw new FirkinError('not_found', `no API key with id ${JSON.stringify(id)}`);
    if (this.#cluster !== undefined && this.#clusterByDigest.get(record.digest)?.id === id) {
      await this.#cluster.revoke(id);
      return;
    }
    await this.#byDigest.delete(record.digest);
  }

  /** The key's record, if valid; in cluster mode throws 503 when cluster keys cannot be checked here. */
  async verify(key: string): Promise<ApiKeyRecord | undefined> {
    const digest = digestOf(key);
    const now = this.#verifyDigest(digest);
    if (now !== CONFIRM_FIRST) return now;
    await this.#cluster!.confirmFresh();
    return this.#checked(digest, this.#clusterByDigest.get(digest));
  }

  /**
   * `verify` without waiting where none is needed (a node key, or no cluster): the record or
   * undefined; CONFIRM_FIRST when the key is not this node's and the cluster's copy must be
   * confirmed fresh first (then call `verify`). The request path takes this one: most requests
   * carry a key it answers at once, and an await costs each of them a promise and a turn.
   */
  verifyNow(key: string): ApiKeyRecord | undefined | typeof CONFIRM_FIRST {
    return this.#verifyDigest(digestOf(key));
  }

  #verifyDigest(digest: string): ApiKeyRecord | undefined | typeof CONFIRM_FIRST {
    const local = this.#byDigest.get(digest);
    if (local === undefined && this.#cluster !== undefined) return CONFIRM_FIRST;
    return this.#checked(digest, local);
  }

  #checked(digest: string, record: ApiKeyRecord | undefined): ApiKeyRecord | undefined {
    if (record === undefined) return undefined;
    // The map lookup already matched; the constant-time check guards against any future
    // change to a prefix or partial lookup.
    return timingSafeEqual(Buffer.from(record.digest, 'hex'), Buffer.from(digest, 'hex')) ? record : undefined;
  }
}
