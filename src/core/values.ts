// Shapes of decoded request values (JSON or CBOR), checked the same way everywhere.

/**
 * A JSON object: not null, not an array, and not a CBOR byte string (cbor-x decodes those
 * to a Uint8Array or Buffer, which `typeof` also calls an object).
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
