// Tenant collection names. A tenant's collection `name` is stored in the vector engine as
//
//   <hash>_<tenant_id>_<name>        e.g. tenant "acme", name "documents" -> "53bc_acme_documents"
//
// <hash> = the first 2 bytes of MD5(UTF-8 tenant_id), big-endian, as 4 lowercase zero-padded
// hex digits: the original's scheme, kept so names read the same (and sort per tenant).
// The hash is not what isolates tenants (16 bits collide easily); the grammar is: a tenant id
// never contains "_", so the tenant id is exactly the text between the first and second "_",
// and `internalName` is injective over (tenant_id, name). A name may contain "_" or look like
// "<hash>_<other>_x"; it only ever lands after its own tenant's prefix.
import { createHash } from 'node:crypto';

/** Lowercase letters, digits and "-", no "_" (the separator), 1..32 characters. */
export const TENANT_ID_PATTERN = '^[a-z0-9][a-z0-9-]{0,31}$';
/** Lowercase letters, digits, "_" and "-", 1..64 characters. */
export const COLLECTION_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';

const tenantIdRe = new RegExp(TENANT_ID_PATTERN);
const collectionNameRe = new RegExp(COLLECTION_NAME_PATTERN);

export function isTenantId(value: unknown): value is string {
  return typeof value === 'string' && tenantIdRe.test(value);
}

export function isCollectionName(value: unknown): value is string {
  return typeof value === 'string' && collectionNameRe.test(value);
}

/** 4 lowercase hex digits: the first 2 bytes of MD5(tenant_id). */
export function tenantHash(tenantId: string): string {
  return createHash('md5').update(tenantId, 'utf8').digest('hex').slice(0, 4);
}

/** Everything stored for a tenant starts with this. */
export function tenantPrefix(tenantId: string): string {
  if (!isTenantId(tenantId)) throw new TypeError(`not a tenant id: ${JSON.stringify(tenantId)}`);
  return `${tenantHash(tenantId)}_${tenantId}_`;
}

export function internalName(tenantId: string, name: string): string {
  if (!isCollectionName(name)) throw new TypeError(`not a collection name: ${JSON.stringify(name)}`);
  return tenantPrefix(tenantId) + name;
}

/** The inverse of `internalName`, or undefined when `internal` is not a tenant collection name. */
export function parseInternalName(internal: string): { tenantId: string; name: string } | undefined {
  const m = /^([0-9a-f]{4})_([^_]+)_(.+)$/.exec(internal);
  if (m === null) return undefined;
  const [, hash, tenantId, name] = m as unknown as [string, string, string, string];
  if (!isTenantId(tenantId) || !isCollectionName(name) || tenantHash(tenantId) !== hash) return undefined;
  return { tenantId, name };
}
