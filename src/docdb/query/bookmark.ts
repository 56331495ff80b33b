// CouchDB's `_find` bookmark: where a page ended, so the next page starts after it (keyset
// paging: stable while documents are written, unlike an offset). Opaque to clients: base64url
// of JSON `{v: 1, k: [[0] | [1, value], ...], id}`, one `k` entry per order key (`[0]`: the
// document had no such field). Pure.
import { FirkinError } from '../../core/errors.js';
import type { FindQuery, Json, Position } from './ast.js';
import { type Ordered, positionOf } from './match.js';
import { toJson } from './parse.js';

/** CouchDB's bookmark for "from the start" (its answer to an empty first page). */
export const NO_BOOKMARK = 'nil';
/** A sort value can be a whole (large) field: the request body limit bounds a bookmark first. */
const MAX_CHARS = 16 * 1024 * 1024;

export function encodeBookmark(at: Position): string {
  const k = at.keys.map((v) => (v === undefined ? [0] : [1, v]));
  return Buffer.from(JSON.stringify({ v: 1, k, id: at.id })).toString('base64url');
}

/** The position a bookmark names, for a query with `orderKeys` order keys; a 400 when it is not one. */
export function decodeBookmark(raw: unknown, orderKeys: number): Position | undefined {
  if (raw === undefined || raw === null || raw === NO_BOOKMARK) return undefined;
  const bad = (why: string) => new FirkinError('bad_request', `bookmark: ${why}; pass back the "bookmark" of the previous answer to the same query`);
  if (typeof raw !== 'string' || raw === '' || raw.length > MAX_CHARS || !/^[A-Za-z0-9_-]+$/.test(raw)) throw bad('not a bookmark');
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a bookmark');
  }
  const b = decoded as { v?: unknown; k?: unknown; id?: unknown };
  if (typeof b !== 'object' || b === null || b.v !== 1 || !Array.isArray(b.k) || typeof b.id !== 'string') throw bad('not a bookmark');
  if (b.k.length !== orderKeys) throw bad(`it was made for a query sorted by ${b.k.length} key(s), this one sorts by ${orderKeys}`);
  const keys = b.k.map((entry: unknown): Json | undefined => {
    if (Array.isArray(entry) && entry.length === 1 && entry[0] === 0) return undefined;
    if (Array.isArray(entry) && entry.length === 2 && entry[0] === 1) return toJson(entry[1], 'bookmark');
    throw bad('not a bookmark');
  });
  return { keys, id: b.id };
}

/**
 * The bookmark after a page: its last document's position, or (an empty page) the one the
 * query started from, so a client paging until a page comes back short never goes backwards.
 */
export function bookmarkAfter(page: readonly Ordered[], q: FindQuery): string {
  const last = page.at(-1);
  if (last !== undefined) return encodeBookmark(positionOf(last, q.orderBy));
  return q.after === undefined ? NO_BOOKMARK : encodeBookmark(q.after);
}
