// The fast key builders of records.ts must produce exactly core/keys.ts's bytes.
import fc from 'fast-check';
import t from 'tap';
import { encodeKey } from '../../src/core/keys.js';
import { fastKey } from '../../src/docdb/records.js';
import { fcParams } from '../support/fc.js';

t.test('fastKey equals encodeKey', (t) => {
  const part = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.string({ maxLength: 20 }),
    fc.double({ noNaN: true }),
    fc.integer(),
    fc.constantFrom(0, -0, 1, Number.MAX_SAFE_INTEGER, 1795319447208, 2 ** 32 - 1, Number.MIN_VALUE, Infinity, -Infinity, '', '\u0000', 'a\u0000b'),
  );
  fc.assert(
    fc.property(fc.array(part, { maxLength: 5 }), (parts) => fastKey(parts).equals(encodeKey(parts))),
    fcParams(1000),
  );
  t.end();
});
