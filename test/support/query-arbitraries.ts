// Shared generators for query tests: small vocabularies so conditions actually hit.
import fc from 'fast-check';
import type { Condition, Json, Path } from '../../src/docdb/query/ast.js';

export const KEYS = ['a', 'b', 'tags', 'n'] as const;
const arbScalar: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(null, true, false, 0, 1, -1, 2.5, 10, 'x', 'xy', 'y', '', 'Ab', '\u{1F600}', '\uFFFD'),
  fc.integer({ min: -5, max: 5 }),
  // Longer than a posting key holds (200 code units; 199 when a surrogate pair is cut).
  fc.constantFrom('x'.repeat(198) + 'y', 'x'.repeat(199) + 'y', 'x'.repeat(250), 'x'.repeat(199) + '\u{1F600}z'),
);
export const arbValue: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    arbScalar,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('v'), { maxKeys: 3 }),
  ),
})).v;
export const arbDoc: fc.Arbitrary<{ [k: string]: Json }> = fc.dictionary(fc.constantFrom(...KEYS), arbValue, { maxKeys: 4 });
export const arbPath: fc.Arbitrary<Path> = fc.array(fc.oneof(fc.constantFrom(...KEYS), fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 3 });

export const arbCondition: fc.Arbitrary<Condition> = conditionsOn(arbPath);

/** Conditions of every kind on paths drawn from `paths` (a narrower set makes them hit more often). */
export function conditionsOn(paths: fc.Arbitrary<Path>): fc.Arbitrary<Condition> {
  return fc.letrec<{ c: Condition }>((tie) => ({
    c: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.record({ kind: fc.constant('eq' as const), path: paths, value: arbValue }),
      fc.record({ kind: fc.constant('ne' as const), path: paths, value: arbScalar }),
      fc.record({
        kind: fc.constant('cmp' as const),
        path: paths,
        op: fc.constantFrom('>' as const, '>=' as const, '<' as const, '<=' as const),
        value: fc.oneof(fc.integer({ min: -5, max: 12 }), fc.constantFrom('x', 'xy', 'a', '')),
      }),
      fc.record({ kind: fc.constant('in' as const), path: paths, values: fc.array(arbScalar, { maxLength: 3 }) }),
      fc.record({ kind: fc.constant('contains' as const), path: paths, value: arbScalar }),
      fc.record({ kind: fc.constant('prefix' as const), path: paths, value: fc.constantFrom('', 'x', 'A', 'xy', 'x'.repeat(198), 'x'.repeat(199), 'x'.repeat(199) + '\u{1F600}') }),
      fc.record({ kind: fc.constant('regex' as const), path: paths, pattern: fc.constantFrom('^x', 'y$', 'A', '.', '^$', 'x{200}', 'z$', '^xy', '^x+y', '^xy?', '^x{199}\u{1F600}', '^A|y').map((p) => new RegExp(p, 'u')) }),
      fc.record({ kind: fc.constant('exists' as const), path: paths }),
      fc.record({ kind: fc.constant('missing' as const), path: paths }),
      fc.record({ kind: fc.constant('and' as const), all: fc.array(tie('c'), { maxLength: 3 }) }),
      fc.record({ kind: fc.constant('or' as const), any: fc.array(tie('c'), { maxLength: 3 }) }),
      fc.record({ kind: fc.constant('not' as const), condition: tie('c') }),
      fc.record({ kind: fc.constant('size' as const), path: paths, size: fc.nat({ max: 3 }) }),
      fc.record({ kind: fc.constant('mod' as const), path: paths, divisor: fc.constantFrom(2, 3, -2), remainder: fc.integer({ min: -1, max: 1 }) }),
      fc.record({ kind: fc.constant('type' as const), path: paths, type: fc.constantFrom('null' as const, 'boolean' as const, 'number' as const, 'string' as const, 'array' as const, 'object' as const) }),
      fc.record({
        kind: fc.constantFrom('elemMatch' as const, 'allMatch' as const, 'keyMapMatch' as const),
        path: paths,
        // On the element: a field of it, or (path []) the element itself.
        condition: fc.oneof(tie('c'), fc.record({ kind: fc.constant('eq' as const), path: fc.constant([]), value: arbScalar })),
      }),
    ),
  })).c;
}

/**
 * A condition as a CouchDB selector (Mango). Paths become dotted keys, so a number segment
 * becomes an object key ("tags.0"): a test compares against `parseFind` of the same body,
 * which reads it the same way.
 */
export function toSelector(c: Condition): Record<string, Json> {
  const at = (path: Path, op: Record<string, Json>): Record<string, Json> => (path.length === 0 ? op : { [path.join('.')]: op });
  switch (c.kind) {
    case 'eq':
      return at(c.path, { $eq: c.value });
    case 'ne':
      return at(c.path, { $ne: c.value });
    case 'cmp':
      return at(c.path, { [{ '>': '$gt', '>=': '$gte', '<': '$lt', '<=': '$lte' }[c.op]]: c.value });
    case 'in':
      return at(c.path, { $in: [...c.values] });
    case 'contains':
      return at(c.path, { $all: [c.value] });
    case 'prefix':
      return at(c.path, { $beginsWith: c.value });
    case 'regex':
      return at(c.path, { $regex: c.pattern.source });
    case 'exists':
    case 'missing':
      return at(c.path, { $exists: c.kind === 'exists' });
    case 'size':
      return at(c.path, { $size: c.size });
    case 'mod':
      return at(c.path, { $mod: [c.divisor, c.remainder] });
    case 'type':
      return at(c.path, { $type: c.type });
    case 'elemMatch':
    case 'allMatch':
    case 'keyMapMatch':
      return at(c.path, { [`$${c.kind}`]: toSelector(c.condition) });
    case 'and':
      return { $and: c.all.map(toSelector) };
    case 'or':
      return { $or: c.any.map(toSelector) };
    case 'not':
      return { $not: toSelector(c.condition) };
  }
}

/**
 * A condition as `_find`'s `where` form (paths as arrays, number segments kept), or undefined
 * when it uses an operator only selectors have.
 */
export function toWhere(c: Condition): Json | undefined {
  const leaf = (path: Path, op: string, value?: Json): Json => (value === undefined ? { path: [...path], op } : { path: [...path], op, value });
  const all = (parts: readonly Condition[]): Json[] | undefined => {
    const out = parts.map(toWhere);
    return out.every((p) => p !== undefined) ? (out as Json[]) : undefined;
  };
  switch (c.kind) {
    case 'eq':
      return leaf(c.path, '=', c.value);
    case 'ne':
      return leaf(c.path, '!=', c.value);
    case 'cmp':
      return leaf(c.path, c.op, c.value);
    case 'in':
      return leaf(c.path, 'in', [...c.values]);
    case 'contains':
      return leaf(c.path, 'contains', c.value);
    case 'prefix':
      return leaf(c.path, 'prefix', c.value);
    case 'regex':
      return leaf(c.path, 'regex', c.pattern.source);
    case 'exists':
    case 'missing':
      return leaf(c.path, c.kind);
    case 'and': {
      const parts = all(c.all);
      return parts === undefined ? undefined : { and: parts };
    }
    case 'or': {
      const parts = all(c.any);
      return parts === undefined ? undefined : { or: parts };
    }
    case 'not': {
      const inner = toWhere(c.condition);
      return inner === undefined ? undefined : { not: inner };
    }
    default:
      return undefined;
  }
}
