import { decode, encode } from 'cbor-x';
import fc from 'fast-check';
import t from 'tap';
import { isPlainObject, jsonValueProblem } from '../../src/core/values.js';
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

t.test('jsonValueProblem: none for a JSON value within the depth, whatever path it is named by', (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => jsonValueProblem(value, 8, 'v') === undefined && jsonValueProblem(decode(encode(value)), 8, 'v') === undefined),
    fcParams(),
  );
  t.end();
});

t.test('jsonValueProblem: a value JSON has no form of, anywhere, is named with its path', (t) => {
  const strangers = fc.constantFrom<[unknown, RegExp]>(
    [Buffer.from('ab'), /a byte string/],
    [new Uint8Array(2), /a byte string/],
    [2n ** 70n, /a bigint/],
    [new Date(0), /a date/],
    [new Map([[1, 2]]), /a Map/],
    [undefined, /undefined/],
    [NaN, /numbers must be finite/],
    [-Infinity, /numbers must be finite/],
  );
  // A path of object keys and array indexes, leading to the stranger.
  const steps = fc.array(fc.oneof(fc.constantFrom('a', 'b c', '0'), fc.nat(3)), { maxLength: 5 });
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 2 }), steps, strangers, (sibling, path, [stranger, said]) => {
      let value: unknown = stranger;
      let where = '';
      for (const step of [...path].reverse()) {
        if (typeof step === 'number') {
          const arr: unknown[] = Array.from({ length: step + 1 }, () => sibling);
          arr[step] = value;
          value = arr;
        } else value = { other: sibling, [step]: value };
      }
      for (const step of path) where += typeof step === 'number' ? `[${step}]` : `.${step}`;
      const problem = jsonValueProblem(value, 64, 'm');
      return problem !== undefined && problem.startsWith(`m${where}: `) && said.test(problem);
    }),
    fcParams(),
  );
  t.end();
});

t.test('jsonValueProblem: nesting past the bound is named, a million deep without a stack overflow', (t) => {
  const nest = (depth: number, inner: unknown = 1): unknown => {
    let v: unknown = inner;
    for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
    return v;
  };
  t.equal(jsonValueProblem(nest(64), 64, 'm'), undefined, '64 containers around a number: fine');
  t.match(jsonValueProblem(nest(65), 64, 'm'), /^m(\.k|\[0\])+: nested deeper than 64 levels$/);
  t.match(jsonValueProblem(nest(1_000_000), 64, 'm'), /nested deeper than 64 levels/);
  t.equal(jsonValueProblem(Object.create(null), 1, 'm'), undefined, 'an object without a prototype is JSON-shaped');
  t.end();
});
