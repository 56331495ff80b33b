// Value codecs, one of each. CBOR (cbor-x) for records, Raft values and HTTP bodies; a checked
// JSON codec for records kept in the `system` column family.
//
// CBOR options are part of the on-disk format: every record written so far was encoded with
// exactly these, so they must not change. `useRecords: false` keeps the output plain RFC 8949
// maps that any CBOR client can read; `mapsAsObjects` decodes maps to plain objects.
import { Ajv, type ValidateFunction } from 'ajv';
import { Decoder, Encoder } from 'cbor-x';
import { FirkinError } from './errors.js';

const cborOptions = { useRecords: false, mapsAsObjects: true } as const;
const cborEncoder = new Encoder(cborOptions);
const cborDecoder = new Decoder(cborOptions);

export function encodeCbor(value: unknown): Buffer {
  return cborEncoder.encode(value);
}

/** Unchecked: callers that read their own records check the shape they need. */
export function decodeCbor(bytes: Uint8Array): unknown {
  return cborDecoder.decode(bytes);
}

// cbor-x reads a map key "__proto__" back as "__proto_" (against prototype pollution), so a value
// with one does not survive a round trip. A request body with one is refused, as fastify refuses
// it in JSON. The text string's bytes (a 9-byte string's head 0x69, then its letters) are looked
// for first; only a body that has them is decoded again with maps as Maps to find a key.
const PROTO_TEXT = Buffer.from([0x69, ...Buffer.from('__proto__')]);
const mapDecoder = new Decoder({ useRecords: false, mapsAsObjects: false });

/** True when the CBOR value has a map key "__proto__" anywhere. */
export function cborHasProtoKey(bytes: Uint8Array): boolean {
  if (Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(PROTO_TEXT) === -1) return false;
  const seen: unknown[] = [mapDecoder.decode(bytes)];
  while (seen.length > 0) {
    const v = seen.pop();
    if (v instanceof Map) {
      for (const [k, x] of v) {
        if (k === '__proto__') return true;
        seen.push(k, x);
      }
    } else if (Array.isArray(v)) {
      for (const x of v) seen.push(x);
    }
  }
  return false;
}

// ---- checked JSON records ------------------------------------------------------------------
// Catalogue records in the `system` column family are JSON. Reading one back checks its shape
// against a JSON schema (ajv) instead of trusting a cast: a record damaged on disk or written
// by an incompatible version fails loudly, naming the record, rather than deep in a caller.

/** A JSON schema for one stored record (the subset ajv accepts without strict-mode noise). */
export type RecordSchema = Readonly<Record<string, unknown>>;

export interface JsonRecordCodec<T> {
  encode(value: T): Buffer;
  /** Throws FirkinError('error') when the bytes are not JSON of the expected shape. */
  decode(bytes: Uint8Array): T;
}

const recordAjv = new Ajv({ allErrors: false, strict: false });

/** `what` names the record in errors ("API key record"). */
export function jsonRecordCodec<T>(what: string, schema: RecordSchema): JsonRecordCodec<T> {
  // Compiled by the first read, not at import: most records are never read in a process.
  let isShaped: ValidateFunction<T> | undefined;
  return {
    encode: (value) => Buffer.from(JSON.stringify(value), 'utf8'),
    decode: (bytes) => {
      let value: unknown;
      try {
        value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
      } catch (err) {
        throw new FirkinError('error', `stored ${what} is not JSON: ${(err as Error).message}`);
      }
      isShaped ??= recordAjv.compile<T>(schema);
      if (!isShaped(value)) throw new FirkinError('error', `stored ${what} has a bad shape: ${recordAjv.errorsText(isShaped.errors)}`);
      return value;
    },
  };
}

/** Schema shorthand: an object with these required properties (others allowed, unchecked). */
export function objectSchema(required: Readonly<Record<string, RecordSchema>>, optional: Readonly<Record<string, RecordSchema>> = {}): RecordSchema {
  return { type: 'object', required: Object.keys(required), properties: { ...optional, ...required } };
}

export const STRING: RecordSchema = { type: 'string' };
export const NUMBER: RecordSchema = { type: 'number' };
export const BOOLEAN: RecordSchema = { type: 'boolean' };
export const OBJECT: RecordSchema = { type: 'object' };
export const ARRAY: RecordSchema = { type: 'array' };
export const STRING_ARRAY: RecordSchema = { type: 'array', items: STRING };
export const nullable = (schema: RecordSchema): RecordSchema => ({ anyOf: [schema, { type: 'null' }] });
