import fc from 'fast-check';
import t from 'tap';
import { type KeyPart, compareTuples, decodeKey, decodeTrailingString, encodeKey, extendKey, extendKeyView, keyStringLength, prefixRange, stringPartAfter, stringPrefixRange } from '../../src/core/keys.js';
import { fcParams } from '../support/fc.js';

const arbString = fc.string({ unit: 'binary', maxLength: 12 });
const arbNumber = fc.double({ noNaN: true }).map((n) => (Object.is(n, -0) ? 0 : n));
const arbBigint = fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n });
const arbBytes = fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b));
const arbPart: fc.Arbitrary<KeyPart> = fc.oneof(arbString, arbNumber, arbBigint, arbBytes, fc.constantFrom('', 'a\u0000b', '\u0000'));
const arbTuple = fc.array(arbPart, { maxLength: 4 });

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

for (const [name, arb] of [
  ['strings', fc.array(arbString, { maxLength: 3 })],
  ['numbers', fc.array(arbNumber, { maxLength: 3 })],
  ['bigints', fc.array(arbBigint, { maxLength: 3 })],
  ['mixed', arbTuple],
] as const) {
  t.test(`byte order equals tuple order: ${name}`, (t) => {
    fc.assert(
      fc.property(arb as fc.Arbitrary<KeyPart[]>, arb as fc.Arbitrary<KeyPart[]>, (a, b) =>
        sign(Buffer.compare(encodeKey(a), encodeKey(b))) === sign(compareTuples(a, b)),
      ),
      fcParams(500),
    );
    t.end();
  });
}

t.test('decode(encode(t)) == t', (t) => {
  fc.assert(
    fc.property(arbTuple, (tuple) => compareTuples(decodeKey(encodeKey(tuple)), tuple) === 0),
    fcParams(500),
  );
  t.end();
});

t.test('a prefix range holds exactly the tuples that extend the prefix', (t) => {
  fc.assert(
    fc.property(arbTuple, arbTuple, (prefix, other) => {
      const { gte, lt } = prefixRange(prefix);
      const extended = encodeKey([...prefix, ...other]);
      if (!(Buffer.compare(extended, gte) >= 0 && Buffer.compare(extended, lt) < 0)) return false;
      const key = encodeKey(other);
      const inside = Buffer.compare(key, gte) >= 0 && Buffer.compare(key, lt) < 0;
      const startsWith = prefix.length <= other.length && compareTuples(other.slice(0, prefix.length), prefix) === 0;
      return inside === startsWith;
    }),
    fcParams(500),
  );
  t.end();
});

t.test('edge values', (t) => {
  const ordered: KeyPart[][] = [
    [],
    [Buffer.from([])],
    [Buffer.from([0])],
    [''],
    ['\u0000'],
    ['a'],
    ['a\u0000'],
    ['ab'],
    ['\u{10000}'],
    [Number.NEGATIVE_INFINITY],
    [-1e308],
    [-1],
    [0],
    [Number.MIN_VALUE],
    [1],
    [Number.POSITIVE_INFINITY],
    [-(2n ** 64n)],
    [-1n],
    [0n],
    [1n],
    [255n],
    [256n],
    [2n ** 64n],
  ];
  for (let i = 1; i < ordered.length; i++) {
    t.ok(Buffer.compare(encodeKey(ordered[i - 1]!), encodeKey(ordered[i]!)) < 0, `${String(ordered[i - 1])} < ${String(ordered[i])}`);
  }
  t.throws(() => encodeKey([Number.NaN]));
  t.end();
});

t.test('the byte format is stable (keys on disk must decode after an upgrade)', (t) => {
  const golden: [KeyPart[], string][] = [
    [['db', 'doc'], '0264620002646f6300'],
    [['a\u0000b', ''], '026100ff62000200'],
    [[0, -0, 1.5, -2, Infinity, -Infinity], '03800000000000000003800000000000000003bff8000000000000033fffffffffffffff03fff000000000000003000fffffffffffff'],
    [[0n, 255n, -256n], '0401040201ff0400fdfeff'],
    [[Uint8Array.of(0, 1, 255)], '0100ff01ff00'],
    [['é😀', '\ud800'], '02c3a9f09f98800002efbfbd00'], // a lone surrogate encodes as U+FFFD
  ];
  for (const [tuple, hex] of golden) t.equal(encodeKey(tuple).toString('hex'), hex, JSON.stringify(tuple.map(String)));
  // Long parts grow the shared scratch buffer; the next key must not see leftovers.
  const long = 'x'.repeat(5000);
  t.equal(decodeKey(encodeKey([long, 7]))[0], long);
  t.equal(encodeKey(['db']).toString('hex'), '02646200');
  t.end();
});

t.test('a decoded bytes part is a copy, not a view of the key', (t) => {
  const key = encodeKey([Uint8Array.of(1, 2), 'x']);
  const [bytes] = decodeKey(key) as [Uint8Array];
  key.fill(0);
  t.same([...bytes], [1, 2]);
  t.end();
});

t.test('extendKey(encodeKey(a), b) == encodeKey([...a, ...b])', (t) => {
  fc.assert(
    fc.property(arbTuple, arbTuple, (a, b) => extendKey(encodeKey(a), b).equals(encodeKey([...a, ...b]))),
    fcParams(500),
  );
  t.end();
});

t.test('extendKeyView has extendKey\'s bytes until the next key is encoded', (t) => {
  fc.assert(
    fc.property(arbTuple, arbTuple, arbTuple, (a, b, c) => {
      const view = extendKeyView(encodeKey(a), b);
      const copy = Buffer.from(view);
      const same = copy.equals(extendKey(encodeKey(a), b));
      encodeKey(c);
      return same;
    }),
    fcParams(500),
  );
  t.end();
});

t.test('stringPrefixRange holds exactly the keys whose last string starts with the prefix', (t) => {
  const inRange = (key: Buffer, r: { gte: Buffer; lt: Buffer }) => Buffer.compare(key, r.gte) >= 0 && Buffer.compare(key, r.lt) < 0;
  fc.assert(
    fc.property(fc.array(arbPart, { maxLength: 3 }), arbString, arbString, (tuple, prefix, s) => {
      const range = stringPrefixRange(tuple, prefix);
      return inRange(encodeKey([...tuple, prefix + s]), range) && inRange(encodeKey([...tuple, s]), range) === s.startsWith(prefix);
    }),
    fcParams(),
  );
  t.end();
});

t.test('decodeTrailingString reads the last part as decodeKey does', (t) => {
  fc.assert(
    fc.property(fc.array(arbPart, { maxLength: 3 }), fc.oneof(arbString, fc.constantFrom('a\u0000b', '\u0000', '')), (tuple, s) => {
      const key = encodeKey([...tuple, s]);
      return decodeTrailingString(key, encodeKey(tuple).length) === s && decodeKey(key).at(-1) === s;
    }),
    fcParams(),
  );
  t.end();
});

t.test('stringPartAfter reads a key decoded as UTF-8 (what Store.keyStringBatches returns) as decodeKey reads its bytes', (t) => {
  // Prefixes of every kind of part (numbers and bigints hold bytes that are not UTF-8); ids of any
  // code unit, NUL and U+FFFD next to each other included.
  const arbId = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: fc.constantFrom('\u0000', '\uFFFD', '\u0002', 'a', '\uD800', '\u{1F600}'), maxLength: 8 }));
  fc.assert(
    fc.property(fc.array(arbPart, { maxLength: 4 }), arbId, (tuple, id) => {
      const prefix = encodeKey(tuple);
      const key = encodeKey([...tuple, id]);
      return stringPartAfter(key.toString('utf8'), keyStringLength(prefix)) === decodeKey(key).at(-1);
    }),
    fcParams(2000),
  );
  t.throws(() => stringPartAfter(encodeKey(['a', 1]).toString('utf8'), keyStringLength(encodeKey(['a']))), /holds no string part/, 'a key whose last part is no string');
  t.end();
});
