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
 * Object.prototype's members, which read as a record that exists). It is also the cheap
 * object for keys V8 has not seen (revisions, digests): V8 keeps it a dictionary from the
 * start, where `{}` gets a new hidden class for each new key (~140 ns a key against 0.7-2 µs).
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

/**
 * What keeps `value` from being JSON's, if anything: a value JSON has no form of (a CBOR
 * byte string, bigint, tag such as a date, undefined), a number that is not finite, or
 * nesting deeper than `depthMax` (a stored value is encoded and hashed by recursive code).
 * Iterative: a value nested a million deep is answered, not a stack overflow. `where` names
 * the value in the answer ("metadata": "metadata.a[2]: …").
 */
export function jsonValueProblem(value: unknown, depthMax: number, where: string): string | undefined {
  const pending: [unknown, string, number][] = [[value, where, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [v, path, depth] = next;
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return `${path}: numbers must be finite`;
      continue;
    }
    if (depth >= depthMax) return `${path}: nested deeper than ${depthMax} levels`;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) pending.push([v[i], `${path}[${i}]`, depth + 1]);
      continue;
    }
    const proto = typeof v === 'object' ? Object.getPrototypeOf(v) : undefined;
    if (proto === Object.prototype || proto === null) {
      for (const [key, item] of Object.entries(v as object)) pending.push([item, `${path}.${key}`, depth + 1]);
      continue;
    }
    return `${path}: JSON has no form of ${describeNonJson(v)}`;
  }
  return undefined;
}

function describeNonJson(v: unknown): string {
  if (v instanceof Uint8Array) return 'a byte string';
  if (typeof v === 'bigint') return 'an integer this large (a bigint)';
  if (v === undefined) return 'undefined';
  if (v instanceof Date) return 'a date (a CBOR tag): send it as a string';
  if (typeof v === 'object') return `a ${(v as object).constructor?.name ?? 'value'} (a CBOR tag or typed value)`;
  return `a ${typeof v}`;
}
