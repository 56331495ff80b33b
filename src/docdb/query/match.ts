// Body-level evaluation of a condition tree: the ground truth every plan is checked against.
import { unreachable } from '../../core/unreachable.js';
import { isPlainObject } from '../../core/values.js';
import type { Condition, Json, JsonType, Path, Position } from './ast.js';
import { MISSING, type MaybeJson, collate, compareStrings, jsonEqual } from './collate.js';

/** The value at `path`, or MISSING. A number segment only indexes arrays, a string only objects. */
export function valueAt(body: Json, path: Path): MaybeJson {
  let cur: Json = body;
  for (const seg of path) {
    if (typeof seg === 'number') {
      if (!Array.isArray(cur) || seg >= cur.length) return MISSING;
      cur = cur[seg]!;
    } else {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.hasOwn(cur, seg)) return MISSING;
      cur = cur[seg]!;
    }
  }
  return cur;
}

function compare(field: MaybeJson, op: '>' | '>=' | '<' | '<=', value: number | string): boolean {
  // Only same-type comparisons are true: a range on numbers never returns strings.
  if (typeof field !== typeof value || (typeof field !== 'number' && typeof field !== 'string')) return false;
  const c = typeof field === 'number' ? collate(field, value) : compareStrings(field, value as string);
  switch (op) {
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
  }
}

function jsonType(v: Json): JsonType {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as 'boolean' | 'number' | 'string' | 'object';
}

export function matches(body: Json, cond: Condition): boolean {
  switch (cond.kind) {
    case 'eq':
      return jsonEqual(valueAt(body, cond.path), cond.value);
    case 'ne': {
      const v = valueAt(body, cond.path);
      return v !== MISSING && !jsonEqual(v, cond.value);
    }
    case 'cmp':
      return compare(valueAt(body, cond.path), cond.op, cond.value);
    case 'in': {
      const v = valueAt(body, cond.path);
      return v !== MISSING && cond.values.some((x) => jsonEqual(v, x));
    }
    case 'contains': {
      const v = valueAt(body, cond.path);
      return Array.isArray(v) && v.some((x) => jsonEqual(x, cond.value));
    }
    case 'prefix': {
      const v = valueAt(body, cond.path);
      return typeof v === 'string' && v.startsWith(cond.value);
    }
    case 'regex': {
      const v = valueAt(body, cond.path);
      return typeof v === 'string' && cond.pattern.test(v);
    }
    case 'exists':
      return valueAt(body, cond.path) !== MISSING;
    case 'missing':
      return valueAt(body, cond.path) === MISSING;
    case 'size': {
      const v = valueAt(body, cond.path);
      return Array.isArray(v) && v.length === cond.size;
    }
    case 'mod': {
      const v = valueAt(body, cond.path);
      return typeof v === 'number' && Number.isInteger(v) && v % cond.divisor === cond.remainder;
    }
    case 'type': {
      const v = valueAt(body, cond.path);
      return v !== MISSING && jsonType(v) === cond.type;
    }
    case 'elemMatch':
    case 'allMatch': {
      const v = valueAt(body, cond.path);
      if (!Array.isArray(v) || v.length === 0) return false;
      return cond.kind === 'elemMatch' ? v.some((e) => matches(e, cond.condition)) : v.every((e) => matches(e, cond.condition));
    }
    case 'keyMapMatch': {
      const v = valueAt(body, cond.path);
      return isPlainObject(v) && Object.keys(v).some((k) => matches(k, cond.condition));
    }
    case 'and':
      return cond.all.every((c) => matches(body, c));
    case 'or':
      return cond.any.some((c) => matches(body, c));
    case 'not':
      return !matches(body, cond.condition);
    default:
      return unreachable(cond);
  }
}

/**
 * A document cut to `fields` (CouchDB's projection): each present path copied, parents kept
 * as nested objects, absent paths left out; undefined `fields` = the whole document.
 */
export function project(doc: Record<string, unknown>, fields: readonly Path[] | undefined): Record<string, unknown> {
  if (fields === undefined) return doc;
  const out: Record<string, unknown> = {};
  // Parents made here; any other object in `out` is a copied value, never written into.
  const made = new Set<object>([out]);
  for (const path of fields) {
    const value = valueAt(doc as Json, path);
    if (value === MISSING) continue;
    let at = out;
    let covered = false;
    for (const seg of path.slice(0, -1) as string[]) {
      const next = Object.hasOwn(at, seg) ? at[seg] : undefined;
      if (next === undefined) {
        const parent: Record<string, unknown> = {};
        made.add(parent);
        setOwn(at, seg, parent);
        at = parent;
      } else if (made.has(next as object)) {
        at = next as Record<string, unknown>;
      } else {
        covered = true; // a field listed earlier copied this parent whole
        break;
      }
    }
    if (!covered) setOwn(at, path.at(-1) as string, value);
  }
  return out;
}

/** A plain own property, even for a key like `__proto__` (an assignment would set the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A document as `order_by` sees it: `_id` and `_rev` are kept beside the body, not in it. */
export interface Ordered {
  id: string;
  rev?: string;
  body: Json;
}

function orderValue(d: Ordered, path: Path): MaybeJson {
  if (path.length === 1 && path[0] === '_id') return d.id;
  if (path.length === 1 && path[0] === '_rev' && d.rev !== undefined) return d.rev;
  return valueAt(d.body, path);
}

/** Where a document stands in the query's order: its keys' values and its id (for a bookmark). */
export function positionOf(d: Ordered, orderBy: readonly { path: Path }[]): Position {
  return { keys: orderBy.map((k) => { const v = orderValue(d, k.path); return v === MISSING ? undefined : v; }), id: d.id };
}

/** > 0 when the document comes after the position in the query's order (ids break ties). */
export function compareToPosition(d: Ordered, at: Position, orderBy: readonly { path: Path; dir: 'asc' | 'desc' }[]): number {
  for (let i = 0; i < orderBy.length; i++) {
    const key = orderBy[i]!;
    // `undefined` is a missing field; a `null` key is the value null (`??` would take it for missing).
    const atKey = at.keys[i];
    const c = collate(orderValue(d, key.path), atKey === undefined ? MISSING : atKey);
    if (c !== 0) return key.dir === 'asc' ? c : -c;
  }
  return compareStrings(d.id, at.id);
}

/** Sort key comparison for `order_by`, with `_id` as the final tie-breaker. */
export function compareForOrder(a: Ordered, b: Ordered, orderBy: readonly { path: Path; dir: 'asc' | 'desc' }[]): number {
  for (const key of orderBy) {
    const c = collate(orderValue(a, key.path), orderValue(b, key.path));
    if (c !== 0) return key.dir === 'asc' ? c : -c;
  }
  return compareStrings(a.id, b.id);
}
