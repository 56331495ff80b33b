import { Encoder } from 'cbor-x';
import fc from 'fast-check';
import t from 'tap';
import { decodeCbor, encodeCbor } from '../../src/core/codec.js';
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
