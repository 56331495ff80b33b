import { Encoder } from 'cbor-x';
import fc from 'fast-check';
import t from 'tap';
import { NUMBER, STRING, cborHasProtoKey, decodeCbor, encodeCbor, jsonRecordCodec, objectSchema } from '../../src/core/codec.js';
import { fcParams } from '../support/fc.js';

/** Values Firkin stores: JSON-like trees plus byte strings. */
const storedArb = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string().filter((k) => k !== '__proto__'), tie('value'), { maxKeys: 4 }),
  ),
})).value;

t.test('CBOR: round trip, and the bytes of the options the data on disk was written with', (t) => {
  const reference = new Encoder({ useRecords: false, mapsAsObjects: true });
  fc.assert(
    fc.property(storedArb, (value) => {
      const bytes = encodeCbor(value);
      const roundTrips = JSON.stringify(decodeCbor(bytes)) === JSON.stringify(value);
      return roundTrips && Buffer.compare(bytes, reference.encode(value)) === 0;
    }),
    fcParams(),
  );
  // Pinned: a plain RFC 8949 map (cbor-x writes object map lengths in two bytes), no record extension.
  t.equal(encodeCbor({ a: 1, b: [true, 'x'] }).toString('hex'), 'b90002616101616282f56178');
  t.end();
});

t.test('CBOR: a map key "__proto__" anywhere is found (cbor-x reads it back renamed), and nothing else is', (t) => {
  // Objects made with defineProperty: an own "__proto__" key, as JSON.parse makes one.
  const objectOf = (entries: readonly (readonly [string, unknown])[]) => {
    const o = {};
    for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
    return o;
  };
  const hasProto = (v: unknown): boolean =>
    Array.isArray(v) ? v.some(hasProto) : typeof v === 'object' && v !== null ? Object.entries(v).some(([k, x]) => k === '__proto__' || hasProto(x)) : false;
  const valueArb = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom('__proto__', '__proto_', 'x', 'constructor'),
      fc.integer(),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.array(fc.tuple(fc.constantFrom('__proto__', '__proto_', 'a', 'constructor', 'toString'), tie('value')), { maxLength: 4 }).map(objectOf),
    ),
  })).value;
  fc.assert(
    fc.property(valueArb, (value) => cborHasProtoKey(encodeCbor(value)) === hasProto(value)),
    fcParams(),
  );
  t.equal(cborHasProtoKey(encodeCbor({ a: '__proto__' })), false, 'a value "__proto__" is fine');
  t.equal(cborHasProtoKey(encodeCbor([{ b: 1 }, objectOf([['__proto__', 1]])])), true);
  t.end();
});

t.test('checked JSON records: round trip; a bad shape or bad JSON is an internal error naming the record', (t) => {
  const codec = jsonRecordCodec<{ name: string; size: number; note?: string }>('test record', objectSchema({ name: STRING, size: NUMBER }, { note: STRING }));
  fc.assert(
    fc.property(fc.record({ name: fc.string(), size: fc.integer(), note: fc.option(fc.string(), { nil: undefined }) }, { requiredKeys: ['name', 'size'] }), (record) => {
      return JSON.stringify(codec.decode(codec.encode(record))) === JSON.stringify(record);
    }),
    fcParams(),
  );
  for (const bad of ['{"name":"a"}', '{"name":"a","size":"1"}', '{"name":"a","size":1,"note":2}', '[]', '3', '{']) {
    t.throws(() => codec.decode(Buffer.from(bad)), { code: 'error', message: /stored test record/ }, bad);
  }
  t.end();
});
