// The automatic path index. Every scalar leaf of a winning document becomes one posting
// key in the `paths` column family:
//
//   [db, ...generalPath, typeTag, value?, docId]        value: number | string (typeTag 3, 4)
//
// - generalPath: object keys as strings; every array index replaced by ARRAY_SEGMENT (a
//   bytes part, so it can never collide with a string key). `{"tags": ["a"]}` posts
//   [db, "tags", ARRAY, 4, "a", id]. Queries on a concrete index use the general path and
//   re-check the body.
// - typeTag keeps types in separate bands (CouchDB collation order): a range scan on
//   numbers can never return a string. Empty arrays and objects are leaves too, so
//   `exists` is answerable from the index alone.
// - Strings are truncated to STRING_CHARS_MAX code units in keys: equality and ranges on
//   long strings over-match and the body check removes the extras.
import type { Json, Path } from './ast.js';
import { decodeKey, encodeKey, extendKey, type KeyPart } from '../../core/keys.js';
import { isDesignDocId } from '../names.js';

export const ARRAY_SEGMENT = Uint8Array.of(0);
export const TYPE_TAG = { null: 0, false: 1, true: 2, number: 3, string: 4, emptyArray: 5, emptyObject: 6 } as const;
export const STRING_CHARS_MAX = 200;
/** Postings per document are bounded: a document with more leaves indexes the first ones only and is flagged. */
export const POSTINGS_PER_DOC_MAX = 10_000;

export type GeneralSegment = string | Uint8Array;

export interface Posting {
  readonly path: readonly GeneralSegment[];
  readonly tag: number;
  readonly value?: number | string;
}

export function truncateString(s: string): string {
  if (s.length <= STRING_CHARS_MAX) return s;
  let cut = s.slice(0, STRING_CHARS_MAX);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1); // never split a surrogate pair
  return cut;
}

/** The leaf's type tag and (for numbers and strings) its key value. */
export function leafKey(value: Json): { tag: number; value?: number | string } | undefined {
  if (value === null) return { tag: TYPE_TAG.null };
  if (value === false) return { tag: TYPE_TAG.false };
  if (value === true) return { tag: TYPE_TAG.true };
  if (typeof value === 'number') return { tag: TYPE_TAG.number, value };
  if (typeof value === 'string') return { tag: TYPE_TAG.string, value: truncateString(value) };
  if (Array.isArray(value)) return value.length === 0 ? { tag: TYPE_TAG.emptyArray } : undefined;
  return Object.keys(value).length === 0 ? { tag: TYPE_TAG.emptyObject } : undefined;
}

export function generalPath(path: Path): GeneralSegment[] {
  return path.map((s) => (typeof s === 'number' ? ARRAY_SEGMENT : s));
}

/** Every posting of a body (fields starting with `_` are metadata and not indexed). */
export function postingsOf(body: Json): Posting[] {
  const out: Posting[] = [];
  // Explicit stack instead of recursion: deep documents must not overflow.
  const stack: { value: Json; path: GeneralSegment[] }[] = [];
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    for (const [k, v] of Object.entries(body)) if (!k.startsWith('_')) stack.push({ value: v, path: [k] });
  }
  while (stack.length > 0 && out.length < POSTINGS_PER_DOC_MAX) {
    const { value, path } = stack.pop()!;
    const leaf = leafKey(value);
    if (leaf !== undefined) {
      out.push({ path, ...leaf });
    } else if (Array.isArray(value)) {
      for (const v of value) stack.push({ value: v, path: [...path, ARRAY_SEGMENT] });
    } else {
      for (const [k, v] of Object.entries(value as Record<string, Json>)) stack.push({ value: v, path: [...path, k] });
    }
  }
  return out;
}

export function postingKey(db: string, p: Posting, docId: string): Buffer {
  const parts: KeyPart[] = [db, ...p.path, p.tag];
  if (p.value !== undefined) parts.push(p.value);
  parts.push(docId);
  return encodeKey(parts);
}

/**
 * The posting keys of a body, without duplicates: the same keys as `postingKey` over
 * `postingsOf` (the reference, property-tested), built on the write path by extending each
 * path's encoded prefix instead of encoding every key from scratch.
 */
export function postingKeysOf(db: string, docId: string, body: Json): Buffer[] {
  const out: Buffer[] = [];
  // A design document is not data: no query finds it (CouchDB's _find skips them too).
  if (body === null || typeof body !== 'object' || Array.isArray(body) || isDesignDocId(docId)) return out;
  const dbPrefix = encodeKey([db]);
  // Same traversal (and so the same first POSTINGS_PER_DOC_MAX leaves) as postingsOf.
  const stack: { value: Json; prefix: Buffer }[] = [];
  for (const [k, v] of Object.entries(body)) if (!k.startsWith('_')) stack.push({ value: v, prefix: extendKey(dbPrefix, [k]) });
  let sawArray = false;
  while (stack.length > 0 && out.length < POSTINGS_PER_DOC_MAX) {
    const { value, prefix } = stack.pop()!;
    const leaf = leafKey(value);
    if (leaf !== undefined) {
      out.push(extendKey(prefix, leaf.value === undefined ? [leaf.tag, docId] : [leaf.tag, leaf.value, docId]));
    } else if (Array.isArray(value)) {
      sawArray = true;
      const inner = extendKey(prefix, [ARRAY_SEGMENT]);
      for (const v of value) stack.push({ value: v, prefix: inner });
    } else {
      for (const [k, v] of Object.entries(value as Record<string, Json>)) stack.push({ value: v, prefix: extendKey(prefix, [k]) });
    }
  }
  if (!sawArray) return out; // only array elements share a general path: nothing to dedupe
  const seen = new Set<string>();
  return out.filter((k) => {
    const s = k.toString('latin1');
    if (seen.has(s)) return false; // duplicate leaves (e.g. ["a", "a"]) share one posting
    seen.add(s);
    return true;
  });
}

/** The posting keys to delete and to add when a document's winning body changes. */
export function postingsDiff(db: string, docId: string, before: Json | undefined, after: Json | undefined): { del: Buffer[]; put: Buffer[] } {
  const next = after === undefined ? [] : postingKeysOf(db, docId, after);
  if (before === undefined) return { del: [], put: next };
  const old = new Map<string, Buffer>();
  for (const k of postingKeysOf(db, docId, before)) old.set(k.toString('latin1'), k);
  const put: Buffer[] = [];
  for (const k of next) {
    const s = k.toString('latin1');
    if (old.has(s)) old.delete(s);
    else put.push(k);
  }
  return { del: [...old.values()], put };
}

/** The doc id is the last element of a posting key. */
export function docIdOfPosting(key: Buffer): string {
  return decodeKey(key).at(-1) as string;
}
