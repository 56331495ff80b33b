// The one way to map a document id to a shard (pure): a hash of the id, then the shard whose
// range holds it. Ranges (not `hash % n`) so a split or merge moves one range and nothing else.
// Virtual databases (`docdb/vdb`) and vector collections both route here.
//
// phash2: bit-compatible with Erlang's `erlang:phash2(Id, 1 bsl 32)` for a binary id (its
// UTF-8 bytes), so data sharded by the original routes the same way. It is Bob Jenkins'
// 1996 lookup2 hash with the VM's initial c = 0x08d12e65 (reference §11.2).
// xxhash: XXH32 with seed 0 over the UTF-8 bytes (our choice; the original stored the name
// but always used phash2).
// hash32: FNV-1a with a murmur3 finaliser over UTF-16 code units. Vector collections created
// before ranges were placed by `hash32(id, 0) % shards` and keep routing that way (`legacy_modulo`);
// the hash embedder hashes its features with it too.

export const HASH_FUNCTIONS = ['phash2', 'xxhash'] as const;
export type HashFunction = (typeof HASH_FUNCTIONS)[number];
export const HASH_SPACE = 2 ** 32;

const GOLDEN = 0x9e3779b9;
const PHASH2_BINARY_SEED = 0x08d12e65;

function mix(a: number, b: number, c: number): [number, number, number] {
  a = (a - b - c) >>> 0; a = (a ^ (c >>> 13)) >>> 0;
  b = (b - c - a) >>> 0; b = (b ^ (a << 8)) >>> 0;
  c = (c - a - b) >>> 0; c = (c ^ (b >>> 13)) >>> 0;
  a = (a - b - c) >>> 0; a = (a ^ (c >>> 12)) >>> 0;
  b = (b - c - a) >>> 0; b = (b ^ (a << 16)) >>> 0;
  c = (c - a - b) >>> 0; c = (c ^ (b >>> 5)) >>> 0;
  a = (a - b - c) >>> 0; a = (a ^ (c >>> 3)) >>> 0;
  b = (b - c - a) >>> 0; b = (b ^ (a << 10)) >>> 0;
  c = (c - a - b) >>> 0; c = (c ^ (b >>> 15)) >>> 0;
  return [a, b, c];
}

export function phash2(bytes: Uint8Array): number {
  const len = bytes.length;
  if (len === 0) return PHASH2_BINARY_SEED;
  let a = GOLDEN;
  let b = GOLDEN;
  let c = PHASH2_BINARY_SEED;
  const u32 = (i: number) => (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) >>> 0;
  let i = 0;
  for (; len - i >= 12; i += 12) {
    a = (a + u32(i)) >>> 0;
    b = (b + u32(i + 4)) >>> 0;
    c = (c + u32(i + 8)) >>> 0;
    [a, b, c] = mix(a, b, c);
  }
  c = (c + len) >>> 0;
  const rest = len - i;
  const at = (k: number) => bytes[i + k]!;
  // The low byte of c holds the length: tail bytes 8..10 go in shifted by 8, 16, 24.
  if (rest > 10) c = (c + (at(10) << 24)) >>> 0;
  if (rest > 9) c = (c + (at(9) << 16)) >>> 0;
  if (rest > 8) c = (c + (at(8) << 8)) >>> 0;
  if (rest > 7) b = (b + (at(7) << 24)) >>> 0;
  if (rest > 6) b = (b + (at(6) << 16)) >>> 0;
  if (rest > 5) b = (b + (at(5) << 8)) >>> 0;
  if (rest > 4) b = (b + at(4)) >>> 0;
  if (rest > 3) a = (a + (at(3) << 24)) >>> 0;
  if (rest > 2) a = (a + (at(2) << 16)) >>> 0;
  if (rest > 1) a = (a + (at(1) << 8)) >>> 0;
  if (rest > 0) a = (a + at(0)) >>> 0;
  [a, b, c] = mix(a, b, c);
  return c;
}

const P1 = 2654435761;
const P2 = 2246822519;
const P3 = 3266489917;
const P4 = 668265263;
const P5 = 374761393;

const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
const mul = (a: number, b: number) => Math.imul(a, b) >>> 0;

/** XXH32 (seed 0 by default). */
export function xxh32(bytes: Uint8Array, seed = 0): number {
  const len = bytes.length;
  const u32 = (i: number) => (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) >>> 0;
  let i = 0;
  let h: number;
  if (len >= 16) {
    let v1 = (seed + P1 + P2) >>> 0;
    let v2 = (seed + P2) >>> 0;
    let v3 = seed >>> 0;
    let v4 = (seed - P1) >>> 0;
    const round = (v: number, input: number) => mul(rotl((v + mul(input, P2)) >>> 0, 13), P1);
    for (; i + 16 <= len; i += 16) {
      v1 = round(v1, u32(i));
      v2 = round(v2, u32(i + 4));
      v3 = round(v3, u32(i + 8));
      v4 = round(v4, u32(i + 12));
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) >>> 0;
  } else {
    h = (seed + P5) >>> 0;
  }
  h = (h + len) >>> 0;
  for (; i + 4 <= len; i += 4) h = mul(rotl((h + mul(u32(i), P3)) >>> 0, 17), P4);
  for (; i < len; i++) h = mul(rotl((h + mul(bytes[i]!, P5)) >>> 0, 11), P1);
  h = mul(h ^ (h >>> 15), P2);
  h = mul(h ^ (h >>> 13), P3);
  return (h ^ (h >>> 16)) >>> 0;
}

const utf8 = new TextEncoder();

export function hashId(id: string, fn: HashFunction): number {
  const bytes = utf8.encode(id);
  return fn === 'phash2' ? phash2(bytes) : xxh32(bytes);
}

/** FNV-1a 32-bit over UTF-16 code units, with a murmur3 finaliser to spread the bits. */
export function hash32(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export interface HashRange {
  readonly shardId: number;
  readonly start: number; // inclusive
  readonly end: number; // inclusive
}

/** N equal ranges tiling 0..2^32-1: start_i = floor(i*2^32/N), end_i = floor((i+1)*2^32/N) - 1. */
export function initialRanges(shardCount: number): HashRange[] {
  return Array.from({ length: shardCount }, (_, i) => ({
    shardId: i,
    start: Math.floor((i * HASH_SPACE) / shardCount),
    end: Math.floor(((i + 1) * HASH_SPACE) / shardCount) - 1,
  }));
}

/** The shard whose range holds `hash`; ranges must tile the space (checked by `assertTiling`). */
export function shardFor(ranges: readonly HashRange[], hash: number): number {
  for (const r of ranges) if (hash >= r.start && hash <= r.end) return r.shardId;
  throw new Error(`hash ${hash} is in no range: the range table is corrupt`);
}

export function assertTiling(ranges: readonly HashRange[]): void {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let next = 0;
  for (const r of sorted) {
    if (r.start !== next || r.end < r.start) throw new Error(`ranges do not tile at ${next}: ${JSON.stringify(r)}`);
    next = r.end + 1;
  }
  if (next !== HASH_SPACE) throw new Error(`ranges end at ${next - 1}, not ${HASH_SPACE - 1}`);
}

/** Split: the shard keeps the lower half [s, m], a new shard takes [m+1, e]. */
export function splitRanges(ranges: readonly HashRange[], shardId: number, newShardId: number): HashRange[] {
  const r = ranges.find((x) => x.shardId === shardId);
  if (r === undefined) throw new Error(`no shard ${shardId}`);
  if (r.start === r.end) throw new Error(`shard ${shardId} holds a single hash and cannot split`);
  const mid = r.start + Math.floor((r.end - r.start) / 2);
  return ranges.flatMap((x) => (x.shardId === shardId ? [{ ...x, end: mid }, { shardId: newShardId, start: mid + 1, end: r.end }] : [x]));
}

export function areAdjacent(a: HashRange, b: HashRange): boolean {
  return a.end + 1 === b.start || b.end + 1 === a.start;
}

/** Merge: `from` disappears, `into` takes the union of both ranges. */
export function mergeRanges(ranges: readonly HashRange[], from: number, into: number): HashRange[] {
  const a = ranges.find((x) => x.shardId === from);
  const b = ranges.find((x) => x.shardId === into);
  if (a === undefined || b === undefined) throw new Error('no such shard');
  if (!areAdjacent(a, b)) throw new Error(`shards ${from} and ${into} are not adjacent`);
  return ranges
    .filter((x) => x.shardId !== from)
    .map((x) => (x.shardId === into ? { ...x, start: Math.min(a.start, b.start), end: Math.max(a.end, b.end) } : x));
}

/**
 * How a collection routes ids to its shards (shard ids, not positions). `ranges`: the shard whose
 * range holds `hashId(id, hash)`. `legacy_modulo`: `hash32(id, 0) % shards.length`, the place
 * of an id in a collection created before ranges; kept so its documents are found where they are.
 */
export type IdRouting =
  | { readonly scheme: 'ranges'; readonly hash: HashFunction; readonly ranges: readonly HashRange[] }
  | { readonly scheme: 'legacy_modulo'; readonly shards: readonly number[] };

/** New collections: `xxhash` ranges tiling the space, one per shard, in the order given. */
export function rangeRouting(shards: readonly number[]): IdRouting {
  return { scheme: 'ranges', hash: 'xxhash', ranges: initialRanges(shards.length).map((r, i) => ({ ...r, shardId: shards[i]! })) };
}

export function routeId(routing: IdRouting, id: string): number {
  switch (routing.scheme) {
    case 'ranges':
      return shardFor(routing.ranges, hashId(id, routing.hash));
    case 'legacy_modulo':
      return routing.shards[routing.shards.length === 1 ? 0 : hash32(id, 0) % routing.shards.length]!;
  }
}
