// Shapes of decoded request values (JSON or CBOR), checked the same way everywhere.

/**
 * A JSON object: not null, not an array, and not a CBOR byte string (cbor-x decodes those
 * to a Uint8Array or Buffer, which `typeof` also calls an object).
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/**
 * A map keyed by names users choose, as a plain object without a prototype: looking up
 * "constructor", "toString" or "__proto__" finds only what was put there (on `{}` it finds
 * Object.prototype's members, which read as a record that exists).
 */
export function dictOf<T>(entries: Iterable<readonly [string, T]> = []): Record<string, T> {
  const dict = Object.create(null) as Record<string, T>;
  for (const [key, value] of entries) dict[key] = value;
  return dict;
}

/** `record[key]` only when it is the record's own: never a member of Object.prototype ("constructor"). */
export function ownValue<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
