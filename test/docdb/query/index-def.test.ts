// CouchDB's index declarations (`declareIndex`, pure): what is answered "exists", what is a 400.
import fc from 'fast-check';
import t from 'tap';
import { FirkinError } from '../../../src/core/errors.js';
import { AUTOMATIC_INDEX, declareIndex, listIndexes, refuseIndexDelete } from '../../../src/docdb/query/index-def.js';
import { fcParams } from '../../support/fc.js';

const exists = { result: 'exists', id: '_design/_auto', name: '_auto' };

t.test('the forms CouchDB clients send are answered "exists"', (t) => {
  t.same(declareIndex({ index: { fields: ['city'] } }), exists, 'pouchdb-find createIndex');
  t.same(declareIndex({ index: { fields: ['city', 'age'] }, name: 'by-city', ddoc: 'my-ddoc', type: 'json' }), exists, 'with a name and design document');
  t.same(declareIndex({ index: { fields: [{ 'profile.city': 'desc' }, { age: 'desc' }] } }), exists, 'one direction for all');
  t.same(declareIndex({ index: { fields: ['type'], partial_filter_selector: { status: { $ne: 'archived' } } } }), exists, 'a partial filter');
  t.same(declareIndex({ index: { fields: ['a'] }, partitioned: false }), exists);
  t.end();
});

t.test('mistakes are a 400 naming the problem', (t) => {
  const cases: [unknown, RegExp][] = [
    [undefined, /must be an object/],
    [[], /must be an object/],
    [{}, /"index" must be an object/],
    [{ index: {} }, /index.fields must be a non-empty list/],
    [{ index: { fields: [] } }, /non-empty list/],
    [{ index: { fields: 'city' } }, /non-empty list/],
    [{ index: { fields: [''] } }, /index.fields\[0\] must be a field name/],
    [{ index: { fields: [7] } }, /index.fields\[0\] must be a field name/],
    [{ index: { fields: [{ a: 'asc', b: 'asc' }] } }, /index.fields\[0\] must be a field name/],
    [{ index: { fields: [{ a: 'up' }] } }, /direction must be "asc" or "desc"/],
    [{ index: { fields: ['a', { b: 'desc' }] } }, /mixes "asc" and "desc"/],
    [{ index: { fields: ['a..b'] } }, /index.fields\[0\]/],
    [{ index: { fields: Array.from({ length: 101 }, (_, i) => `f${i}`) } }, /more than 100/],
    [{ index: { fields: ['a'], extra: 1 } }, /unknown index field "extra"/],
    [{ index: { fields: ['a'] }, limit: 1 }, /unknown _index field "limit"/],
    [{ index: { fields: ['a'] }, type: 'text' }, /BM25 search/],
    [{ index: { fields: ['a'] }, type: 'geo' }, /"type" must be "json"/],
    [{ index: { fields: ['a'] }, name: '' }, /"name" must be a non-empty string/],
    [{ index: { fields: ['a'] }, ddoc: 5 }, /"ddoc" must be a non-empty string/],
    [{ index: { fields: ['a'] }, partitioned: true }, /partitioned/],
    [{ index: { fields: ['a'], partial_filter_selector: { a: { $near: 1 } } } }, /\$near/],
  ];
  for (const [body, message] of cases) {
    t.throws(() => declareIndex(body), { code: 'bad_request', message }, JSON.stringify(body));
  }
  t.end();
});

const arbName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}(\.[a-z][a-z0-9_]{0,8}){0,2}$/);

t.test('property: a list of field names in one direction is declared; a mixed one never is', (t) => {
  fc.assert(
    fc.property(fc.array(arbName, { minLength: 1, maxLength: 8 }), fc.array(fc.constantFrom('plain', 'asc', 'desc'), { minLength: 8, maxLength: 8 }), (names, forms) => {
      const fields = names.map((n, i) => (forms[i] === 'plain' ? n : { [n]: forms[i] }));
      const dirs = new Set(names.map((_, i) => (forms[i] === 'desc' ? 'desc' : 'asc')));
      let answer: unknown;
      try {
        answer = declareIndex({ index: { fields } });
      } catch (err) {
        answer = (err as FirkinError).code;
      }
      return dirs.size === 1 ? JSON.stringify(answer) === JSON.stringify(exists) : answer === 'bad_request';
    }),
    fcParams(),
  );
  t.end();
});

t.test('listing and deleting', (t) => {
  const listed = listIndexes();
  t.equal(listed.total_rows, listed.indexes.length);
  t.same(listed.indexes.map((i) => i.name), ['_all_docs', AUTOMATIC_INDEX.name], 'the built-ins');
  t.equal(listed.indexes[1]!.ddoc, exists.id, 'the design document POST answers with');
  const forbidden = [['_design/_auto', '_auto'], ['_auto', '_auto'], ['anything', '_all_docs']] as const;
  for (const [ddoc, name] of forbidden) {
    const err = refuseIndexDelete(ddoc, name);
    t.ok(err instanceof FirkinError && err.code === 'forbidden', `${ddoc} ${name}: built in`);
  }
  const missing = refuseIndexDelete('my-ddoc', 'by-city');
  t.equal(missing.code, 'not_found');
  t.match(missing.message, /"_design\/my-ddoc"/);
  t.end();
});
