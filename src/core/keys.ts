// Ordered tuple key encoding: the byte order of encodeKey(a) vs encodeKey(b) equals
// compareTuples(a, b). One encoding for every column family.
//
// Layout: each element is a tag byte followed by a self-delimiting body.
//
//   0x01 bytes   body with 0x00 escaped as 0x00 0xFF, then 0x00 terminator
//   0x02 string  UTF-8 bytes, escaped like bytes, then 0x00 terminator
//   0x03 number  float64 big-endian; sign bit flipped (>= 0) or all bits inverted (< 0)
//   0x04 bigint  0x00 (255-len) ~magnitude (< 0) | 0x01 (== 0) | 0x02 len magnitude (> 0)
//
// Types order by tag (bytes < string < number < bigint). Strings order by Unicode code
// point (UTF-8 byte order), not by UTF-16 code unit as JavaScript's `<` does. Because every
// element is self-delimiting and no tag is 0xFF, a tuple prefix P bounds all keys that
// extend it: P <= key < P ++ 0xFF (see `prefixRange`).

export type KeyPart = string | number | bigint | Uint8Array;
export type KeyTuple = readonly KeyPart[];

/** Each element's first byte, by type: the types' order in keys (a caller may range over one type's band). */
export const ELEMENT_TAG = { bytes: 0x01, string: 0x02, number: 0x03, bigint: 0x04 } as const;
const TAG_BYTES = ELEMENT_TAG.bytes;
const TAG_STRING = ELEMENT_TAG.string;
const TAG_NUMBER = ELEMENT_TAG.number;
const TAG_BIGINT = ELEMENT_TAG.bigint;
const BIGINT_BYTES_MAX = 255;

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

// One scratch buffer for every encode (encodeKey is synchronous and never re-entered); the
// result is copied out at its exact size. Keys are built on every write and every posting,
// so this avoids a growable writer, a TextEncoder copy and a DataView per part.
let scratch = Buffer.allocUnsafe(256);
let length = 0;

function reserve(extra: number): void {
  if (length + extra <= scratch.length) return;
  let size = scratch.length * 2;
  while (size < length + extra) size *= 2;
  const next = Buffer.allocUnsafe(size);
  scratch.copy(next, 0, 0, length);
  scratch = next;
}

/** Copies bytes, escaping 0x00 as 0x00 0xFF, then the 0x00 terminator. */
function writeEscaped(src: Uint8Array): void {
  reserve(src.length * 2 + 1);
  for (let i = 0; i < src.length; i++) {
    const b = src[i]!;
    scratch[length++] = b;
    if (b === 0x00) scratch[length++] = 0xff;
  }
  scratch[length++] = 0x00;
}

function writeString(s: string): void {
  // Short ASCII (ids, field names, enum-like values) byte by byte: cheaper than a native
  // call. Any other character falls through to the general path.
  if (s.length <= 32) {
    reserve(s.length + 2);
    const start = length;
    scratch[length++] = TAG_STRING;
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 0 || c >= 0x80) break;
      scratch[length++] = c;
    }
    if (i === s.length) {
      scratch[length++] = 0x00;
      return;
    }
    length = start;
  }
  if (s.includes('\u0000')) {
    scratch[length++] = TAG_STRING;
    return writeEscaped(Buffer.from(s, 'utf8'));
  }
  // UTF-8 takes at most 3 bytes per UTF-16 code unit (lone surrogates become U+FFFD, as
  // TextEncoder does); without NULs nothing needs escaping.
  reserve(s.length * 3 + 2);
  scratch[length++] = TAG_STRING;
  length += scratch.write(s, length, 'utf8');
  scratch[length++] = 0x00;
}

function writeNumber(n: number): void {
  if (Number.isNaN(n)) throw new TypeError('NaN cannot be a key part');
  reserve(9);
  scratch[length++] = TAG_NUMBER;
  scratch.writeDoubleBE(n === 0 ? 0 : n, length); // -0 and 0 are the same key
  if (scratch[length]! & 0x80) for (let i = length; i < length + 8; i++) scratch[i] = ~scratch[i]! & 0xff;
  else scratch[length] = scratch[length]! | 0x80;
  length += 8;
}

function bigintMagnitude(n: bigint): Uint8Array {
  let hex = (n < 0n ? -n : n).toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const out = Buffer.from(hex, 'hex');
  if (out.length > BIGINT_BYTES_MAX) throw new RangeError(`bigint key part longer than ${BIGINT_BYTES_MAX} bytes`);
  return out;
}

function writeBigint(n: bigint): void {
  reserve(2);
  scratch[length++] = TAG_BIGINT;
  if (n === 0n) {
    scratch[length++] = 0x01;
    return;
  }
  const mag = bigintMagnitude(n);
  reserve(mag.length + 2);
  if (n > 0n) {
    scratch[length++] = 0x02;
    scratch[length++] = mag.length;
    for (const b of mag) scratch[length++] = b;
  } else {
    scratch[length++] = 0x00;
    scratch[length++] = BIGINT_BYTES_MAX - mag.length;
    for (const b of mag) scratch[length++] = ~b & 0xff;
  }
}

function writePart(part: KeyPart): void {
  switch (typeof part) {
    case 'string':
      return writeString(part);
    case 'number':
      return writeNumber(part);
    case 'bigint':
      return writeBigint(part);
    default:
      if (part instanceof Uint8Array) {
        reserve(1);
        scratch[length++] = TAG_BYTES;
        return writeEscaped(part);
      }
      throw new TypeError(`unsupported key part ${String(part)}`);
  }
}

const NO_PREFIX = new Uint8Array(0);

export function encodeKey(tuple: KeyTuple): Buffer {
  return extendKey(NO_PREFIX, tuple);
}

/** `encodeKey([...a, ...tuple])` given `prefix = encodeKey(a)`, without re-encoding `a`. */
export function extendKey(prefix: Uint8Array, tuple: KeyTuple): Buffer {
  encodeExtended(prefix, tuple);
  const out = Buffer.allocUnsafe(length); // copied out at its exact size
  out.set(scratch.subarray(0, length));
  return out;
}

/**
 * `extendKey`'s bytes without a Buffer of their own: a view of the encoder's scratch, valid
 * only until the next key is encoded. For a caller that copies them at once (`PackedOps`).
 */
export function extendKeyView(prefix: Uint8Array, tuple: KeyTuple): Uint8Array {
  encodeExtended(prefix, tuple);
  return scratch.subarray(0, length);
}

function encodeExtended(prefix: Uint8Array, tuple: KeyTuple): void {
  length = 0;
  reserve(prefix.length);
  scratch.set(prefix, 0);
  length = prefix.length;
  for (const part of tuple) writePart(part);
}

/** A scan range: gte <= key < lt. */
export interface KeyRange {
  readonly gte: Buffer;
  readonly lt: Buffer;
}

/** Range covering every key that starts with these bytes (no tag is 0xFF, so P ++ 0xFF bounds them). */
export function bytesPrefixRange(prefix: Uint8Array): KeyRange {
  const gte = Buffer.from(prefix);
  return { gte, lt: Buffer.concat([gte, Buffer.from([0xff])]) };
}

/**
 * A key's length in characters as `Store.keyStringBatches` reads keys: UTF-8, each sequence
 * that is not UTF-8 as one U+FFFD (V8's decoder, which the binding uses too).
 */
export function keyStringLength(bytes: Uint8Array): number {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8').length;
}

/**
 * The string at the end of a key read as a string (`Store.keyStringBatches`), when the key is
 * `prefix ++ encodeKey([s])` and `prefixChars` is `keyStringLength(prefix)`: the part starts
 * with its tag, an ASCII byte, so decoding the prefix never runs into it, and ends with its
 * terminator; an escaped NUL (0x00 0xFF) reads as NUL and U+FFFD, and nothing else in the part
 * reads as NUL.
 */
export function stringPartAfter(key: string, prefixChars: number): string {
  if (key.charCodeAt(prefixChars) !== TAG_STRING || key.charCodeAt(key.length - 1) !== 0) throw new Error(`key ${JSON.stringify(key)} holds no string part after ${prefixChars} characters`);
  const body = key.slice(prefixChars + 1, -1);
  return body.includes('\0') ? body.replaceAll('\0\uFFFD', '\0') : body;
}

/** Range covering every key whose tuple starts with `prefix` (the prefix itself included). */
export function prefixRange(prefix: KeyTuple): KeyRange {
  return bytesPrefixRange(encodeKey(prefix));
}

/**
 * Range covering every key `tuple ++ [s, ...]` where the string `s` starts with `prefix`:
 * the prefix is encoded without its terminator, so any continuation of the string matches.
 */
export function stringPrefixRange(tuple: KeyTuple, prefix: string): KeyRange {
  const full = encodeKey([...tuple, prefix]);
  return bytesPrefixRange(full.subarray(0, full.length - 1));
}

/**
 * The string that is a key's last part, its tag at `offset`: a fast path for scans that
 * read many keys of one prefix (no escaped NUL in the body: a plain UTF-8 view).
 */
export function decodeTrailingString(key: Buffer, offset: number): string {
  const body = key.subarray(offset + 1, key.length - 1);
  if (!body.includes(0)) return body.toString('utf8');
  const out: number[] = [];
  for (let i = 0; i < body.length; i++) {
    out.push(body[i]!);
    if (body[i] === 0) i++; // skip the 0xFF that escapes a NUL
  }
  return Buffer.from(out).toString('utf8');
}

/** Smallest key strictly greater than every key starting with `prefix` tuple. */
export function afterPrefix(prefix: KeyTuple): Buffer {
  return prefixRange(prefix).lt;
}

/** The unescaped body of a part starting at `start`, and the index past its terminator. */
function readEscaped(buf: Uint8Array, start: number): [Uint8Array, number] {
  let i = start;
  // Common case: no escaped NUL, so the body is a view of the key.
  while (i < buf.length && buf[i] !== 0x00) i++;
  if (i >= buf.length) throw new RangeError('unterminated key part');
  if (buf[i + 1] !== 0xff) return [buf.subarray(start, i), i + 1];
  const out: number[] = Array.from(buf.subarray(start, i));
  for (;;) {
    if (i >= buf.length) throw new RangeError('unterminated key part');
    const b = buf[i++]!;
    if (b !== 0x00) {
      out.push(b);
      continue;
    }
    if (buf[i] === 0xff) {
      out.push(0x00);
      i++;
      continue;
    }
    return [Uint8Array.from(out), i];
  }
}

const numberScratch = Buffer.alloc(8);

export function decodeKey(buf: Uint8Array): KeyPart[] {
  const parts: KeyPart[] = [];
  let i = 0;
  while (i < buf.length) {
    const tag = buf[i++];
    switch (tag) {
      case TAG_BYTES: {
        const [bytes, next] = readEscaped(buf, i);
        parts.push(new Uint8Array(bytes)); // a copy: never a view into the caller's key
        i = next;
        break;
      }
      case TAG_STRING: {
        const [bytes, next] = readEscaped(buf, i);
        parts.push(utf8Decoder.decode(bytes));
        i = next;
        break;
      }
      case TAG_NUMBER: {
        if (i + 8 > buf.length) throw new RangeError('truncated number key part');
        const raw = numberScratch;
        for (let j = 0; j < 8; j++) raw[j] = buf[i + j]!;
        if (raw[0]! & 0x80) raw[0] = raw[0]! & 0x7f;
        else for (let j = 0; j < 8; j++) raw[j] = ~raw[j]! & 0xff;
        parts.push(raw.readDoubleBE(0));
        i += 8;
        break;
      }
      case TAG_BIGINT: {
        const sign = buf[i++];
        if (sign === 0x01) {
          parts.push(0n);
          break;
        }
        const lenByte = buf[i++]!;
        const len = sign === 0x02 ? lenByte : BIGINT_BYTES_MAX - lenByte;
        let mag = buf.subarray(i, i + len);
        if (sign === 0x00) mag = mag.map((b) => ~b & 0xff);
        const value = BigInt('0x' + (Buffer.from(mag).toString('hex') || '0'));
        parts.push(sign === 0x02 ? value : -value);
        i += len;
        break;
      }
      default:
        throw new RangeError(`bad key tag ${tag} at ${i - 1}`);
    }
  }
  return parts;
}

const TYPE_RANK = { bytes: 0, string: 1, number: 2, bigint: 3 } as const;

function rank(part: KeyPart): number {
  if (typeof part === 'string') return TYPE_RANK.string;
  if (typeof part === 'number') return TYPE_RANK.number;
  if (typeof part === 'bigint') return TYPE_RANK.bigint;
  return TYPE_RANK.bytes;
}

function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
}

/** The order the encoding preserves (the reference for the property tests). */
export function compareParts(a: KeyPart, b: KeyPart): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  if (typeof a === 'string') return compareCodePoints(a, b as string);
  if (typeof a === 'number' || typeof a === 'bigint') {
    const bb = b as number | bigint;
    return a < bb ? -1 : a > bb ? 1 : 0;
  }
  return Buffer.compare(a, b as Uint8Array);
}

export function compareTuples(a: KeyTuple, b: KeyTuple): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareParts(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Strings in the order tuple keys sort them: by Unicode code point (their UTF-8 bytes). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  // Code point order: compare UTF-16 units, except that a surrogate (a code point above
  // U+FFFF) must sort after every BMP unit, which raw unit order gets wrong for U+E000..U+FFFF.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}
