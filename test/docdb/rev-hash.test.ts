// Revision ids: every node must compute the same rev for the same edit, in every version of
// Firkin, so the canonical form is pinned by golden values and held to a plain reference
// implementation (the first one, kept here) on random JSON values.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { canonicalJson, nextRev, revHash } from '../../src/docdb/rev-hash.js';
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

// The first revHash, kept: the canonical form of body (+ _attachments) and the parent and
// deleted flag hashed part by part.
function referenceRevHash(body: Record<string, unknown>, attachments: Record<string, { content_type: string; digest: string; length: number }> | undefined, parentRev: string | undefined, deleted: boolean): string {
  const content: Record<string, unknown> = { ...body };
  if (attachments !== undefined && Object.keys(attachments).length > 0) content._attachments = attachments;
  return createHash('sha256').update(referenceCanonicalJson(content)).update('\u0000').update(parentRev ?? '').update('\u0000').update(deleted ? '1' : '0').digest('hex');
}

t.test('revHash equals the reference, strings of any code units included', (t) => {
  const text = fc.string({ unit: 'binary', maxLength: 8 }); // lone surrogates too
  const body = fc.dictionary(fc.string({ maxLength: 6 }).filter((k) => !k.startsWith('_')), fc.oneof(value, text), { maxKeys: 5 });
  const attachment = fc.record({ content_type: text, digest: fc.string({ maxLength: 10 }), length: fc.nat() });
  const attachments = fc.option(fc.dictionary(text, attachment, { maxKeys: 3 }), { nil: undefined });
  const parent = fc.option(fc.tuple(fc.integer({ min: 1, max: 1000 }), fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), maxLength: 8 })).map(([g, h]) => `${g}-${h}`), { nil: undefined });
  fc.assert(
    fc.property(body, attachments, parent, fc.boolean(), (b, a, p, d) => revHash(b, a, p, d) === referenceRevHash(b, a, p, d)),
    fcParams(1000),
  );
  t.end();
});
