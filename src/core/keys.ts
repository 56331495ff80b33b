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

const TAG_BYTES = 0x01;
const TAG_STRING = 0x02;
const TAG_NUMBER = 0x03;
const TAG_BIGINT = 0x04;
const BIGINT_BYTES_MAX = 255;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

class ByteWriter {
  #buf = new Uint8Array(64);
  #len = 0;

  #reserve(extra: number): void {
    if (this.#len + extra <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  byte(b: number): void {
    this.#reserve(1);
    this.#buf[this.#len++] = b;
  }

  bytes(src: Uint8Array): void {
    this.#reserve(src.length);
    this.#buf.set(src, this.#len);
    this.#len += src.length;
  }

  escaped(src: Uint8Array): void {
    this.#reserve(src.length * 2 + 1);
    for (const b of src) {
      this.#buf[this.#len++] = b;
      if (b === 0x00) this.#buf[this.#len++] = 0xff;
    }
    this.#buf[this.#len++] = 0x00;
  }

  result(): Buffer {
    return Buffer.from(this.#buf.buffer, this.#buf.byteOffset, this.#len);
  }
}

function writeNumber(w: ByteWriter, n: number): void {
  if (Number.isNaN(n)) throw new TypeError('NaN cannot be a key part');
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, n === 0 ? 0 : n); // -0 and 0 are the same key
  const raw = new Uint8Array(view.buffer);
  if (raw[0]! & 0x80) for (let i = 0; i < 8; i++) raw[i] = ~raw[i]! & 0xff;
  else raw[0] = raw[0]! | 0x80;
  w.bytes(raw);
}

function bigintMagnitude(n: bigint): Uint8Array {
  let hex = (n < 0n ? -n : n).toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const out = Buffer.from(hex, 'hex');
  if (out.length > BIGINT_BYTES_MAX) throw new RangeError(`bigint key part longer than ${BIGINT_BYTES_MAX} bytes`);
  return out;
}

function writeBigint(w: ByteWriter, n: bigint): void {
  if (n === 0n) return w.byte(0x01);
  const mag = bigintMagnitude(n);
  if (n > 0n) {
    w.byte(0x02);
    w.byte(mag.length);
    w.bytes(mag);
  } else {
    w.byte(0x00);
    w.byte(BIGINT_BYTES_MAX - mag.length);
    w.bytes(mag.map((b) => ~b & 0xff));
  }
}

function writePart(w: ByteWriter, part: KeyPart): void {
  switch (typeof part) {
    case 'string':
      w.byte(TAG_STRING);
      return w.escaped(utf8.encode(part));
    case 'number':
      w.byte(TAG_NUMBER);
      return writeNumber(w, part);
    case 'bigint':
      w.byte(TAG_BIGINT);
      return writeBigint(w, part);
    default:
      if (part instanceof Uint8Array) {
        w.byte(TAG_BYTES);
        return w.escaped(part);
      }
      throw new TypeError(`unsupported key part ${String(part)}`);
  }
}

export function encodeKey(tuple: KeyTuple): Buffer {
  const w = new ByteWriter();
  for (const part of tuple) writePart(w, part);
  return w.result();
}

/** Range covering every key whose tuple starts with `prefix` (the prefix itself included). */
export function prefixRange(prefix: KeyTuple): { gte: Buffer; lt: Buffer } {
  const gte = encodeKey(prefix);
  return { gte, lt: Buffer.concat([gte, Buffer.from([0xff])]) };
}

/** Smallest key strictly greater than every key starting with `prefix` tuple. */
export function afterPrefix(prefix: KeyTuple): Buffer {
  return prefixRange(prefix).lt;
}

function readEscaped(buf: Uint8Array, start: number): [Uint8Array, number] {
  const out: number[] = [];
  let i = start;
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

export function decodeKey(buf: Uint8Array): KeyPart[] {
  const parts: KeyPart[] = [];
  let i = 0;
  while (i < buf.length) {
    const tag = buf[i++];
    switch (tag) {
      case TAG_BYTES: {
        const [bytes, next] = readEscaped(buf, i);
        parts.push(bytes);
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
        const raw = Uint8Array.from(buf.subarray(i, i + 8));
        if (raw.length !== 8) throw new RangeError('truncated number key part');
        if (raw[0]! & 0x80) raw[0] = raw[0]! & 0x7f;
        else for (let j = 0; j < 8; j++) raw[j] = ~raw[j]! & 0xff;
        parts.push(new DataView(raw.buffer).getFloat64(0));
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
