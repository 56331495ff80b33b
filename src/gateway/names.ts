// Tenant collection names. A tenant's collection `name` is stored in the vector engine as
//
//   <hash>_<tenant segment>_<name>     e.g. tenant "acme", name "documents" -> "53bc_acme_documents"
//
// <hash> = the first 2 bytes of MD5(UTF-8 tenant_id), big-endian, as 4 lowercase zero-padded
// hex digits: the original's scheme, kept so names read the same (and sort per tenant).
// The hash is not what isolates tenants (16 bits collide easily); the grammar is: the tenant
// segment never contains "_", so it is exactly the text between the first and second "_", and
// `internalName` is injective over (tenant_id, name). A tenant id may hold "_" and ".", so the
// segment escapes them with "." ("." -> ".d", "_" -> ".u"); an id with neither (every id the
// first release accepted) is its own segment, so names stored then still parse.
// A name may contain "_" or look like "<hash>_<other>_x"; it only ever lands after its own
// tenant's prefix.
import { createHash } from 'node:crypto';

/** Letters, digits, "-", "_" and ".", starting with a letter or digit, 1..64 characters. */
export const TENANT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';
/** The rule above in words, for the 400 that refuses a tenant id. */
export const TENANT_ID_RULE =
  'tenant_id must be 1 to 64 characters: letters, digits, "-", "_" or ".", starting with a letter or digit (no "/", whitespace or control characters)';
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
  return `${tenantHash(tenantId)}_${tenantSegment(tenantId)}_`;
}

function tenantSegment(tenantId: string): string {
  return tenantId.replace(/[._]/g, (c) => (c === '.' ? '.d' : '.u'));
}

function parseTenantSegment(segment: string): string | undefined {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i];
    if (c !== '.') {
      out += c;
      continue;
    }
    const escaped = segment[++i];
    if (escaped === 'd') out += '.';
    else if (escaped === 'u') out += '_';
    else return undefined;
  }
  return out;
}

export function internalName(tenantId: string, name: string): string {
  if (!isCollectionName(name)) throw new TypeError(`not a collection name: ${JSON.stringify(name)}`);
  return tenantPrefix(tenantId) + name;
}

/** The inverse of `internalName`, or undefined when `internal` is not a tenant collection name. */
export function parseInternalName(internal: string): { tenantId: string; name: string } | undefined {
  const m = /^([0-9a-f]{4})_([^_]+)_(.+)$/.exec(internal);
  if (m === null) return undefined;
  const [, hash, segment, name] = m as unknown as [string, string, string, string];
  const tenantId = parseTenantSegment(segment);
  if (tenantId === undefined || !isTenantId(tenantId) || !isCollectionName(name) || tenantHash(tenantId) !== hash) return undefined;
  return { tenantId, name };
}
