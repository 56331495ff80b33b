// The query tree `_find` and filtered changes evaluate. Produced by parse.ts, consumed by
// match.ts (body evaluation) and plan.ts (index choice).

/** A path into a document: object keys (strings) and array indexes (non-negative integers). */
export type Path = readonly (string | number)[];

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const COMPARISONS = ['>', '>=', '<', '<='] as const;
export type Comparison = (typeof COMPARISONS)[number];

/** Anything with `test(string)`: a RegExp or an RE2 (linear-time, no catastrophic backtracking). */
export interface Pattern {
  test(input: string): boolean;
  readonly source: string;
}

export const JSON_TYPES = ['null', 'boolean', 'number', 'string', 'array', 'object'] as const;
export type JsonType = (typeof JSON_TYPES)[number];

export type Condition =
  | { readonly kind: 'eq'; readonly path: Path; readonly value: Json }
  | { readonly kind: 'ne'; readonly path: Path; readonly value: Json }
  | { readonly kind: 'cmp'; readonly path: Path; readonly op: Comparison; readonly value: number | string }
  | { readonly kind: 'in'; readonly path: Path; readonly values: readonly Json[] }
  | { readonly kind: 'contains'; readonly path: Path; readonly value: Json }
  | { readonly kind: 'prefix'; readonly path: Path; readonly value: string }
  | { readonly kind: 'regex'; readonly path: Path; readonly pattern: Pattern }
  | { readonly kind: 'exists'; readonly path: Path }
  | { readonly kind: 'missing'; readonly path: Path }
  /** CouchDB's `$size`: an array of this length. */
  | { readonly kind: 'size'; readonly path: Path; readonly size: number }
  /** CouchDB's `$mod`: an integer whose remainder (sign of the dividend) is this. */
  | { readonly kind: 'mod'; readonly path: Path; readonly divisor: number; readonly remainder: number }
  /** CouchDB's `$type`. */
  | { readonly kind: 'type'; readonly path: Path; readonly type: JsonType }
  /** CouchDB's `$elemMatch` (some element) and `$allMatch` (every element, at least one): `condition` is on the element. */
  | { readonly kind: 'elemMatch' | 'allMatch'; readonly path: Path; readonly condition: Condition }
  /** CouchDB's `$keyMapMatch`: an object with some key (the string itself) matching `condition`. */
  | { readonly kind: 'keyMapMatch'; readonly path: Path; readonly condition: Condition }
  | { readonly kind: 'and'; readonly all: readonly Condition[] }
  | { readonly kind: 'or'; readonly any: readonly Condition[] }
  | { readonly kind: 'not'; readonly condition: Condition };

/** Where a page ends in a query's order: the order keys' values and the id (a bookmark). */
export interface Position {
  /** One per `order_by` key; `undefined` where the document has no such field. */
  readonly keys: readonly (Json | undefined)[];
  readonly id: string;
}

export interface OrderKey {
  readonly path: Path;
  readonly dir: 'asc' | 'desc';
}

export interface FindQuery {
  readonly where: Condition; // `and` of nothing = every live document
  readonly limit: number | undefined; // undefined = no limit
  readonly offset: number;
  readonly orderBy: readonly OrderKey[]; // empty = `_id` ascending
  readonly includeDocs: boolean;
  /** CouchDB's `fields`: the paths each returned document is cut to; undefined = whole. */
  readonly fields: readonly Path[] | undefined;
  /** CouchDB's `allow_fallback: false`: a query no index can narrow is a 400, not a full scan. */
  readonly allowFallback?: boolean;
  /** CouchDB's `conflicts: true`: each returned document lists its other leaves as `_conflicts`. */
  readonly conflicts?: boolean;
  /** CouchDB's `bookmark`: only documents after this position in the query's order. */
  readonly after?: Position;
  /** CouchDB's `execution_stats: true`: the answer says what it read and how long it took. */
  readonly executionStats?: boolean;
}

/**
 * Where a page of `q` ends among its matches (offset + limit; undefined: no limit): what a
 * merged `_find` asks of each source (VDB shard, federation member) and cuts the merge at.
 */
export function pageEnd(q: Pick<FindQuery, 'offset' | 'limit'>): number | undefined {
  return q.limit === undefined ? undefined : q.offset + q.limit;
}
