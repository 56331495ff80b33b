// CouchDB's `fields` projection (`project`, pure): what a returned document keeps.
import fc from 'fast-check';
import t from 'tap';
import type { Json, Path } from '../../../src/docdb/query/ast.js';
import { MISSING } from '../../../src/docdb/query/collate.js';
import { project, valueAt } from '../../../src/docdb/query/match.js';
import { fcParams } from '../../support/fc.js';

t.test('examples', (t) => {
  const doc = { _id: 'u1', _rev: '1-a', name: 'Ada', profile: { city: 'Paris', zip: '75001' }, tags: ['x'] };
  t.same(project(doc, undefined), doc, 'no fields: the whole document');
  t.same(project(doc, [['_id'], ['name']]), { _id: 'u1', name: 'Ada' }, '_id and _rev only when listed');
  t.same(project(doc, [['profile', 'city'], ['missing'], ['name', 'x']]), { profile: { city: 'Paris' } }, 'nested kept nested; absent paths left out');
  t.same(project(doc, [['profile'], ['profile', 'city']]), { profile: { city: 'Paris', zip: '75001' } }, 'a parent listed first covers its children');
  t.same(project(doc, [['profile', 'city'], ['profile']]), { profile: { city: 'Paris', zip: '75001' } }, 'and listed after');
  t.same(project(doc, []), {}, 'no field: an empty object');
  t.end();
});

// Documents over a few keys, nested two deep.
const key = fc.constantFrom('a', 'b', 'c');
const leaf: fc.Arbitrary<Json> = fc.oneof(fc.integer(), fc.constant(null), fc.constantFrom('x', 'y'));
const arbDoc = fc.dictionary(key, fc.oneof(leaf, fc.dictionary(key, fc.oneof(leaf, fc.dictionary(key, leaf)))));
const arbPath: fc.Arbitrary<Path> = fc.array(key, { minLength: 1, maxLength: 3 });

t.test('property: every listed path present in the document has its value; nothing else is there; the document is untouched', (t) => {
  fc.assert(
    fc.property(arbDoc, fc.array(arbPath, { maxLength: 5 }), (doc, fields) => {
      const before = JSON.stringify(doc);
      const out = project(doc, fields);
      if (JSON.stringify(doc) !== before) return false;
      for (const path of fields) {
        const want = valueAt(doc as Json, path);
        if (JSON.stringify(valueAt(out as Json, path)) !== JSON.stringify(want === MISSING ? undefined : want)) return false;
      }
      // Every leaf of the answer lies on or under a listed path.
      const leaves = (v: unknown, at: string[]): string[][] => (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0 ? Object.entries(v).flatMap(([k, x]) => leaves(x, [...at, k])) : [at]);
      return leaves(out, []).every((p) => p.length === 0 || fields.some((f) => f.every((seg, i) => p[i] === seg)));
    }),
    fcParams(),
  );
  t.end();
});

t.test('a key named __proto__ is copied as a plain key, never as the prototype', (t) => {
  const doc = JSON.parse('{"__proto__": {"polluted": true}, "a": {"__proto__": {"b": 1}}}') as Record<string, unknown>;
  const out = project(doc, [['__proto__'], ['a', '__proto__', 'b']]);
  t.equal(Object.getPrototypeOf(out), Object.prototype, 'the answer keeps its prototype');
  t.equal(JSON.stringify(out), '{"__proto__":{"polluted":true},"a":{"__proto__":{"b":1}}}');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'nothing global changed');
  t.end();
});
