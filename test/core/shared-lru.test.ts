// SharedLru (src/core/shared-lru.ts) against a model: scopes with equal keys never see each
// other's entries, a scope's clear removes only its own, and the bound holds for the whole
// cache however many scopes there are (a cache per database bounded each one, not the node).
import fc from 'fast-check';
import t from 'tap';
import { SharedLru } from '../../src/core/shared-lru.js';
import { fcParams } from '../support/fc.js';

const MAX = 8;

type Op = { kind: 'set'; scope: number; key: string; value: number } | { kind: 'get' | 'delete'; scope: number; key: string } | { kind: 'clear'; scope: number };

const arbKey = fc.constantFrom('a', 'b', 'c', 'd', 'e', '', ':', '0:a', 'constructor', '__proto__');
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('set' as const), scope: fc.nat(3), key: arbKey, value: fc.integer() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom('get' as const, 'delete' as const), scope: fc.nat(3), key: arbKey }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const), scope: fc.nat(3) }) },
);

t.test('scopes are apart, clear is a scope\'s own, and the bound is the whole cache\'s', (t) => {
  fc.assert(
    fc.property(fc.array(arbOp, { maxLength: 80 }), (ops) => {
      const shared = new SharedLru<{ value: number }>({ max: MAX });
      const scopes = [shared.scope(), shared.scope(), shared.scope(), shared.scope()];
      // The model: a map per scope, and one recency order over (scope, key) for the bound.
      const model = scopes.map(() => new Map<string, number>());
      let order: string[] = [];
      const touch = (scope: number, key: string) => {
        order = order.filter((k) => k !== `${scope}\u0000${key}`).concat(`${scope}\u0000${key}`);
      };
      for (const op of ops) {
        const scope = scopes[op.scope]!;
        const mine = model[op.scope]!;
        if (op.kind === 'set') {
          scope.set(op.key, { value: op.value });
          mine.set(op.key, op.value);
          touch(op.scope, op.key);
          while (order.length > MAX) {
            const [s, k] = order.shift()!.split('\u0000') as [string, string];
            model[Number(s)]!.delete(k);
          }
        } else if (op.kind === 'get') {
          const got = scope.get(op.key)?.value;
          if (got !== mine.get(op.key)) return false;
          if (got !== undefined) touch(op.scope, op.key);
          if (scope.has(op.key) !== mine.has(op.key)) return false;
        } else if (op.kind === 'delete') {
          scope.delete(op.key);
          mine.delete(op.key);
          order = order.filter((k) => k !== `${op.scope}\u0000${op.key}`);
        } else {
          scope.clear();
          mine.clear();
          order = order.filter((k) => !k.startsWith(`${op.scope}\u0000`));
        }
        if (shared.size !== order.length || shared.size > MAX) return false;
      }
      return scopes.every((scope, i) => [...model[i]!].every(([k, v]) => scope.get(k)?.value === v));
    }),
    fcParams(),
  );
  t.pass();
  t.end();
});

t.test('a cache bounded in bytes holds its bound over every scope', (t) => {
  const shared = new SharedLru<{ n: number }>({ maxSize: 1000 });
  const scopes = Array.from({ length: 50 }, () => shared.scope());
  for (const [i, scope] of scopes.entries()) for (let k = 0; k < 10; k++) scope.set(`doc${k}`, { n: i }, 30);
  t.ok(shared.calculatedSize <= 1000, `${shared.calculatedSize} bytes held`);
  t.equal(shared.size, Math.floor(1000 / 30));
  // The most recent entries are the ones kept, each under its own scope.
  t.same(scopes[49]!.get('doc9'), { n: 49 });
  t.equal(scopes[0]!.get('doc0'), undefined);
  t.end();
});
