// Revision ids: every node must compute the same rev for the same edit, in every version of
// Firkin, so the canonical form is pinned by golden values and held to a plain reference
// implementation (the first one, kept here) on random JSON values.
import fc from 'fast-check';
import t from 'tap';
import { canonicalJson, nextRev } from '../../src/docdb/rev-hash.js';
import { fcParams } from '../support/fc.js';

function referenceCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return value === undefined ? 'null' : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(referenceCanonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${referenceCanonicalJson(obj[k])}`).join(',')}}`;
}

t.test('golden values', (t) => {
  t.equal(canonicalJson({ b: [1, 'x', { d: null, c: true }], a: 'é\u2028', z: { y: 1.5e-7, x: [] } }), '{"a":"é\u2028","b":[1,"x",{"c":true,"d":null}],"z":{"x":[],"y":1.5e-7}}');
  t.equal(nextRev({ type: 'user', name: 'ann', tags: ['a', 'b'], nested: { n: 1, m: [2, 3] } }, undefined, undefined, false), '1-3020d7196dd44e5f024bb484cda842b8e1c0244e91a39498514cfe5eef572a66');
  t.equal(
    nextRev({ type: 'user', name: 'ann' }, { 'f.txt': { content_type: 'text/plain', digest: 'md5-abc', length: 3 } }, '1-aaaa', true),
    '2-8a75580c40eb3dceb6c9d062314b5cbe8398e8039722fce7b5907ccb3e71f5ac',
  );
  t.end();
});

// JSON values, plus object fields left undefined (dropped, as JSON.stringify drops them).
const value = fc.letrec((tie) => ({
  any: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), tie('array'), tie('object')),
  array: fc.array(tie('any'), { maxLength: 4 }),
  object: fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(tie('any'), fc.constant(undefined)), { maxKeys: 5 }),
})).any;

t.test('canonicalJson equals the reference, whatever the key order', (t) => {
  fc.assert(
    fc.property(value, (v) => {
      const canonical = canonicalJson(v);
      if (canonical !== referenceCanonicalJson(v)) return false;
      // The same object with its keys inserted in reverse order.
      const reversed = JSON.parse(JSON.stringify(v), (_k, x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).reverse()) : x));
      return canonicalJson(reversed) === referenceCanonicalJson(JSON.parse(JSON.stringify(v)));
    }),
    fcParams(1000),
  );
  t.end();
});
