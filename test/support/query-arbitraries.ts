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

export const arbCondition: fc.Arbitrary<Condition> = fc.letrec<{ c: Condition }>((tie) => ({
  c: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('eq' as const), path: arbPath, value: arbValue }),
    fc.record({ kind: fc.constant('ne' as const), path: arbPath, value: arbScalar }),
    fc.record({
      kind: fc.constant('cmp' as const),
      path: arbPath,
      op: fc.constantFrom('>' as const, '>=' as const, '<' as const, '<=' as const),
      value: fc.oneof(fc.integer({ min: -5, max: 12 }), fc.constantFrom('x', 'xy', 'a', '')),
    }),
    fc.record({ kind: fc.constant('in' as const), path: arbPath, values: fc.array(arbScalar, { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('contains' as const), path: arbPath, value: arbScalar }),
    fc.record({ kind: fc.constant('prefix' as const), path: arbPath, value: fc.constantFrom('', 'x', 'A', 'xy', 'x'.repeat(198), 'x'.repeat(199), 'x'.repeat(199) + '\u{1F600}') }),
    fc.record({ kind: fc.constant('regex' as const), path: arbPath, pattern: fc.constantFrom('^x', 'y$', 'A', '.', '^$', 'x{200}', 'z$', '^xy', '^x+y', '^xy?', '^x{199}\u{1F600}', '^A|y').map((p) => new RegExp(p, 'u')) }),
    fc.record({ kind: fc.constant('exists' as const), path: arbPath }),
    fc.record({ kind: fc.constant('missing' as const), path: arbPath }),
    fc.record({ kind: fc.constant('and' as const), all: fc.array(tie('c'), { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('or' as const), any: fc.array(tie('c'), { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('not' as const), condition: tie('c') }),
    fc.record({ kind: fc.constant('size' as const), path: arbPath, size: fc.nat({ max: 3 }) }),
    fc.record({ kind: fc.constant('mod' as const), path: arbPath, divisor: fc.constantFrom(2, 3, -2), remainder: fc.integer({ min: -1, max: 1 }) }),
    fc.record({ kind: fc.constant('type' as const), path: arbPath, type: fc.constantFrom('null' as const, 'boolean' as const, 'number' as const, 'string' as const, 'array' as const, 'object' as const) }),
    fc.record({
      kind: fc.constantFrom('elemMatch' as const, 'allMatch' as const, 'keyMapMatch' as const),
      path: arbPath,
      // On the element: a field of it, or (path []) the element itself.
      condition: fc.oneof(tie('c'), fc.record({ kind: fc.constant('eq' as const), path: fc.constant([]), value: arbScalar })),
    }),
  ),
})).c;
