// Metadata filters for search. Pure. A filter is an object of top-level metadata keys, each
// either a value (exact JSON equality, type-strict: 1 and "1" differ) or an operator object:
//   {$eq: v} {$ne: v} {$in: [v...]} {$nin: [v...]} {$gt|$gte|$lt|$lte: number | string}
// Several operators on one key must all hold; all keys must hold. Ranges compare numbers with
// numbers and strings with strings (by code unit); a value of another type never matches.
import { FirkinError } from '../core/errors.js';
import { describe } from './collection-config.js';
import { isPlainObject } from '../core/values.js';

export type Condition =
  | { readonly op: '$eq' | '$ne'; readonly value: unknown }
  | { readonly op: '$in' | '$nin'; readonly values: readonly unknown[] }
  | { readonly op: '$gt' | '$gte' | '$lt' | '$lte'; readonly value: number | string };

export interface Filter {
  readonly clauses: readonly { readonly key: string; readonly conditions: readonly Condition[] }[];
}

const OPS = ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte'] as const;
const CLAUSES_MAX = 64;
const IN_VALUES_MAX = 1024;

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && Object.keys(value).length > 0 && Object.keys(value).every((k) => k.startsWith('$'));
}

export function parseFilter(value: unknown): Filter | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) throw new FirkinError('bad_request', `filter must be an object of metadata conditions, got ${describe(value)}`);
  const entries = Object.entries(value);
  if (entries.length > CLAUSES_MAX) throw new FirkinError('bad_request', `filter has more than ${CLAUSES_MAX} keys`);
  const clauses = entries.map(([key, cond]) => {
    if (!isOperatorObject(cond)) return { key, conditions: [{ op: '$eq' as const, value: cond }] };
    const conditions = Object.entries(cond).map(([op, operand]): Condition => {
      switch (op) {
        case '$eq':
        case '$ne':
          return { op, value: operand };
        case '$in':
        case '$nin':
          if (!Array.isArray(operand) || operand.length > IN_VALUES_MAX) {
            throw new FirkinError('bad_request', `filter.${key}.${op} must be an array of at most ${IN_VALUES_MAX} values, got ${describe(operand)}`);
          }
          return { op, values: operand };
        case '$gt':
        case '$gte':
        case '$lt':
        case '$lte':
          if (!(typeof operand === 'string' || (typeof operand === 'number' && Number.isFinite(operand)))) {
            throw new FirkinError('bad_request', `filter.${key}.${op} must be a number or a string, got ${describe(operand)}`);
          }
          return { op, value: operand };
        default:
          throw new FirkinError('bad_request', `unknown filter operator ${JSON.stringify(op)} on ${JSON.stringify(key)} (known: ${OPS.join(', ')})`);
      }
    });
    return { key, conditions };
  });
  return { clauses };
}

/** Deep, type-strict JSON equality (object key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => Object.prototype.hasOwnProperty.call(bo, k) && jsonEqual(ao[k], bo[k]));
}

function compare(actual: unknown, bound: number | string): number | undefined {
  if (typeof actual !== typeof bound) return undefined;
  const a = actual as number | string;
  return a < bound ? -1 : a > bound ? 1 : 0;
}

function holds(cond: Condition, present: boolean, actual: unknown): boolean {
  switch (cond.op) {
    case '$eq':
      return present && jsonEqual(actual, cond.value);
    case '$ne':
      return !present || !jsonEqual(actual, cond.value);
    case '$in':
      return present && cond.values.some((v) => jsonEqual(actual, v));
    case '$nin':
      return !present || !cond.values.some((v) => jsonEqual(actual, v));
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (!present) return false;
      const c = compare(actual, cond.value);
      if (c === undefined) return false;
      return cond.op === '$gt' ? c > 0 : cond.op === '$gte' ? c >= 0 : cond.op === '$lt' ? c < 0 : c <= 0;
    }
  }
}

export function matchesFilter(filter: Filter, metadata: Record<string, unknown>): boolean {
  return filter.clauses.every(({ key, conditions }) => {
    const present = Object.prototype.hasOwnProperty.call(metadata, key);
    const actual = present ? metadata[key] : undefined;
    return conditions.every((c) => holds(c, present, actual));
  });
}
