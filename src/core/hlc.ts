// Hybrid logical clock (Kulkarni et al. 2014): a timestamp is (wall ms, logical counter).
// Pure: the wall clock is injected, so a clock that jumps backwards is just another input.
// Invariants: now() is strictly increasing; update(remote) is > both the previous value and
// the remote one.

export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

export interface Hlc {
  readonly wallMs: number;
  readonly logical: number;
}

export const HLC_ZERO: Hlc = { wallMs: 0, logical: 0 };
const LOGICAL_MAX = 0xffffffff;
const ENCODED_BYTES = 12;

export function compareHlc(a: Hlc, b: Hlc): number {
  if (a.wallMs !== b.wallMs) return a.wallMs < b.wallMs ? -1 : 1;
  if (a.logical !== b.logical) return a.logical < b.logical ? -1 : 1;
  return 0;
}

function bump(prev: Hlc, candidateWallMs: number): Hlc {
  if (candidateWallMs > prev.wallMs) return { wallMs: candidateWallMs, logical: 0 };
  // The counter overflowing would break monotonicity; advance the wall part instead.
  if (prev.logical >= LOGICAL_MAX) return { wallMs: prev.wallMs + 1, logical: 0 };
  return { wallMs: prev.wallMs, logical: prev.logical + 1 };
}

/** Next local timestamp: send or local event. */
export function tickHlc(prev: Hlc, wallMs: number): Hlc {
  return bump(prev, Math.floor(wallMs));
}

/** Receive event: merge a remote timestamp. */
export function mergeHlc(prev: Hlc, remote: Hlc, wallMs: number): Hlc {
  const wall = Math.max(Math.floor(wallMs), prev.wallMs, remote.wallMs);
  if (wall === prev.wallMs && wall === remote.wallMs) {
    return bump({ wallMs: wall, logical: Math.max(prev.logical, remote.logical) }, wall);
  }
  if (wall === prev.wallMs) return bump(prev, wall);
  if (wall === remote.wallMs) return bump(remote, wall);
  return { wallMs: wall, logical: 0 };
}

/** Mutable holder of the node clock around the pure functions. */
export class HybridClock {
  #last: Hlc;
  readonly #clock: Clock;
  /** Reject remote clocks further than this ahead of our wall clock (0 = no bound). */
  readonly #maxOffsetMs: number;

  constructor(clock: Clock, options: { start?: Hlc; maxOffsetMs?: number } = {}) {
    this.#clock = clock;
    this.#last = options.start ?? HLC_ZERO;
    this.#maxOffsetMs = options.maxOffsetMs ?? 0;
  }

  now(): Hlc {
    this.#last = tickHlc(this.#last, this.#clock.nowMs());
    return this.#last;
  }

  peek(): Hlc {
    return this.#last;
  }

  /** Merge a remote timestamp; returns the new local value, or undefined when the remote is too far ahead. */
  update(remote: Hlc): Hlc | undefined {
    const wall = this.#clock.nowMs();
    if (this.#maxOffsetMs > 0 && remote.wallMs - wall > this.#maxOffsetMs) return undefined;
    this.#last = mergeHlc(this.#last, remote, wall);
    return this.#last;
  }
}

/** 12 bytes: wall ms as uint64 big-endian, logical as uint32 big-endian (sorts like compareHlc). */
export function encodeHlc(h: Hlc): Buffer {
  return writeHlc(Buffer.alloc(ENCODED_BYTES), h);
}

/** `encodeHlc` into `out` (the wall clock's uint64 as two uint32s: no BigInt). */
function writeHlc(out: Buffer, h: Hlc): Buffer {
  out.writeUInt32BE(Math.floor(h.wallMs / 2 ** 32), 0);
  out.writeUInt32BE(h.wallMs >>> 0, 4);
  out.writeUInt32BE(h.logical, 8);
  return out;
}

export function decodeHlc(buf: Uint8Array): Hlc {
  if (buf.length !== ENCODED_BYTES) throw new RangeError(`HLC must be ${ENCODED_BYTES} bytes, got ${buf.length}`);
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return { wallMs: Number(b.readBigUInt64BE(0)), logical: b.readUInt32BE(8) };
}

const base64Scratch = Buffer.alloc(ENCODED_BYTES);

/** `encodeHlc(h)` in base64 (every reply's header: no Buffer or BigInt of its own). */
export function hlcToBase64(h: Hlc): string {
  return writeHlc(base64Scratch, h).toString('base64');
}

/** `{timestamp,<wall_ms>,<counter>}`: the text form the spec shows for `last_seq`. */
export function hlcToText(h: Hlc): string {
  return `{timestamp,${h.wallMs},${h.logical}}`;
}

const TEXT_FORM = /^\{timestamp,(\d{1,16}),(\d{1,10})\}$/;

/** Parse any accepted form: `{timestamp,W,L}`, `W:L`, `W-L`, or base64 of the 12-byte encoding. */
export function parseHlc(text: string): Hlc | undefined {
  const m = TEXT_FORM.exec(text.trim());
  if (m) return checked({ wallMs: Number(m[1]), logical: Number(m[2]) });
  const dash = /^(\d{1,16})[-:](\d{1,10})$/.exec(text.trim());
  if (dash) return checked({ wallMs: Number(dash[1]), logical: Number(dash[2]) });
  if (/^[A-Za-z0-9+/_-]{16}$/.test(text)) {
    const buf = Buffer.from(text, 'base64');
    if (buf.length === ENCODED_BYTES) return checked(decodeHlc(buf));
  }
  return undefined;
}

function checked(h: Hlc): Hlc | undefined {
  return Number.isSafeInteger(h.wallMs) && h.logical <= LOGICAL_MAX ? h : undefined;
}
