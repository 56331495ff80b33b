import { decode, encode } from 'cbor-x';
import fc from 'fast-check';
import t from 'tap';
import { isPlainObject } from '../../src/core/values.js';
import { fcParams } from '../support/fc.js';

t.test('isPlainObject: a decoded JSON value is an object exactly when JSON says so', (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const isObject = JSON.stringify(value).startsWith('{');
      return isPlainObject(value) === isObject && isPlainObject(decode(encode(value))) === isObject;
    }),
    fcParams(),
  );
  t.end();
});

t.test('isPlainObject: byte strings, arrays and null are not objects', (t) => {
  for (const value of [null, undefined, [], [1], Buffer.from('ab'), new Uint8Array(2), decode(encode(Buffer.from('ab'))), 'x', 3, true]) {
    t.equal(isPlainObject(value), false, `${Object.prototype.toString.call(value)}`);
  }
  t.equal(isPlainObject({}), true);
  t.equal(isPlainObject(Object.create(null)), true);
  t.end();
});
