// Body-level evaluation of a condition tree: the ground truth every plan is checked against.
import { unreachable } from '../../core/unreachable.js';
import type { Condition, Json, Path } from './ast.js';
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

/** Sort key comparison for `order_by`, with `_id` as the final tie-breaker. */
export function compareForOrder(
  a: { id: string; body: Json },
  b: { id: string; body: Json },
  orderBy: readonly { path: Path; dir: 'asc' | 'desc' }[],
): number {
  for (const key of orderBy) {
    const c = collate(valueAt(a.body, key.path), valueAt(b.body, key.path));
    if (c !== 0) return key.dir === 'asc' ? c : -c;
  }
  return compareStrings(a.id, b.id);
}
