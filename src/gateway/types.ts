// Gateway records. Field names are the API's (snake_case): records are returned as they are
// stored, minus secrets, so the wire shape and the stored shape cannot drift apart.

export const LIMIT_NAMES = ['rpm_limit', 'max_vectors', 'max_collections', 'max_storage_mb'] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];
export type Limits = { readonly [K in LimitName]: number };

export interface Tenant {
  readonly tenant_id: string;
  readonly limits: Limits;
  readonly created_at: number; // unix ms
}

export interface KeyRecord {
  readonly key_id: string; // 16 hex digits
  readonly tenant_id: string;
  readonly digest: string; // hex SHA-256 of the whole key; the key itself is never stored
  readonly key_prefix: string; // first characters of the key, to recognise it in a list
  /** The key's own limit; when absent only the tenant's bucket applies. */
  readonly rpm_limit?: number;
  readonly created_at: number;
}

export interface Embedder {
  readonly type: string;
  readonly url?: string;
  readonly model?: string;
}

/** One tenant collection: its registry entry and its usage (exact count, approximate bytes). */
export interface CollectionRecord {
  readonly tenant_id: string;
  readonly name: string; // as the tenant sees it
  readonly internal: string; // as the vector engine stores it (names.ts)
  readonly dimension: number;
  readonly embedder?: Embedder;
  readonly vector_count: number;
  readonly storage_bytes: number;
  readonly created_at: number;
}

export interface Usage {
  readonly tenant_id: string;
  readonly vector_count: number;
  readonly collection_count: number;
  readonly storage_bytes: number;
}
