// Metadata filters: examples and properties against a naive reading of the same rules.
import fc from 'fast-check';
import t from 'tap';
import { jsonEqual, matchesFilter, parseFilter } from '../../src/vector/filter.js';
import { fcParams } from '../support/fc.js';

const m = (filter: unknown, metadata: Record<string, unknown>) => matchesFilter(parseFilter(filter)!, metadata);

t.test('examples', async (t) => {
  t.ok(m({ a: 1 }, { a: 1, b: 2 }));
  t.notOk(m({ a: 1 }, { a: '1' }), 'type-strict');
  t.notOk(m({ a: 1 }, {}), 'missing key');
  t.ok(m({ a: { x: [1, 2] } }, { a: { x: [1, 2] } }), 'deep equality');
  t.ok(m({ a: { $in: [1, 2] } }, { a: 2 }));
  t.notOk(m({ a: { $in: [1, 2] } }, { a: 3 }));
  t.ok(m({ a: { $nin: [1, 2] } }, {}), '$nin holds for a missing key');
  t.ok(m({ a: { $gte: 2, $lt: 5 } }, { a: 4 }));
  t.notOk(m({ a: { $gte: 2, $lt: 5 } }, { a: 5 }));
  t.notOk(m({ a: { $gt: 2 } }, { a: '3' }), 'ranges do not cross types');
  t.ok(m({ a: { $gt: 'b' } }, { a: 'c' }));
  t.ok(m({ a: { $ne: 1 } }, { a: 2 }));
  t.ok(m({}, { a: 1 }), 'an empty filter matches');
  t.throws(() => parseFilter([1]));
  t.throws(() => parseFilter({ a: { $regex: 'x' } }));
  t.throws(() => parseFilter({ a: { $in: 'x' } }));
  t.throws(() => parseFilter({ a: { $gt: null } }));
});

t.test('properties', async (t) => {
  const arbValue = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom('a', 'b', 'c'), fc.boolean(), fc.constant(null));
  const arbMeta = fc.dictionary(fc.constantFrom('x', 'y', 'z'), arbValue, { maxKeys: 3 });
  fc.assert(
    fc.property(arbMeta, arbMeta, (filter, meta) => {
      // equality filters: a doc matches iff every filter key is present with an equal value
      const expected = Object.entries(filter).every(([k, v]) => k in meta && jsonEqual(meta[k], v));
      return m(filter, meta) === expected;
    }),
    fcParams(300),
  );
  fc.assert(
    fc.property(fc.constantFrom('x', 'y'), fc.array(arbValue, { maxLength: 4 }), arbMeta, (key, values, meta) => {
      const inF = m({ [key]: { $in: values } }, meta);
      const ninF = m({ [key]: { $nin: values } }, meta);
      return inF !== ninF; // $in and $nin partition every doc
    }),
    fcParams(300),
  );
  fc.assert(
    fc.property(fc.integer({ min: -5, max: 5 }), fc.integer({ min: -5, max: 5 }), (bound, value) => {
      const meta = { n: value };
      return (
        m({ n: { $gt: bound } }, meta) === value > bound &&
        m({ n: { $gte: bound } }, meta) === value >= bound &&
        m({ n: { $lt: bound } }, meta) === value < bound &&
        m({ n: { $lte: bound } }, meta) === value <= bound
      );
    }),
    fcParams(200),
  );
});
