// A flat vector index: no graph, every search compares the query with every vector (usearch's
// SIMD `exactSearch`), so hits are exact and an insert costs a copy. A collection asks for it
// with `index.m: 0`, as Qdrant's `hnsw_config.m = 0` turns its graph off: for collections
// searched mostly by keyword, small ones, and where recall must be 1. A search costs the whole
// scan (linear in the shard's vectors), where HNSW's grows slowly. Vectors are kept as float32
// whatever the collection's precision (that option is the graph's).
import { readFileSync, writeFileSync } from 'node:fs';
import usearch from 'usearch';
import type { Metric } from '../collection-config.js';
import { USEARCH_METRIC } from './usearch-metric.js';
import type { AnnChunk, AnnIndex, AnnMatches, AnnOptions } from './ann-index.js';

const { exactSearch } = usearch;

const METRIC_CODES: readonly Metric[] = ['l2', 'cosine', 'ip'];

/** File layout, little-endian: magic, dimensions u32, metric code u32, count u64, keys u64[], vectors f32[]. */
const MAGIC = Buffer.from('FKFLAT01', 'latin1');
const HEADER_BYTES = MAGIC.length + 4 + 4 + 8;
const EMPTY: AnnMatches = { keys: new BigUint64Array(0), distances: new Float32Array(0) };

export class FlatIndex implements AnnIndex {
  /** A removed vector leaves nothing behind (the last one takes its slot): never a rebuild. */
  readonly keepsRemoved = false;
  readonly #dims: number;
  readonly #metric: Metric;
  /** Slot i holds the vector at i * dims; slots below #size are live. */
  #vectors: Float32Array;
  #keys: BigUint64Array;
  /** Key (as a number: shard labels are safe integers) -> slot. */
  readonly #slots = new Map<number, number>();
  #size = 0;

  constructor(options: Pick<AnnOptions, 'dimensions' | 'metric'>, capacity = 1_024) {
    this.#dims = options.dimensions;
    this.#metric = options.metric;
    this.#vectors = new Float32Array(capacity * this.#dims);
    this.#keys = new BigUint64Array(capacity);
  }

  get size(): number {
    return this.#size;
  }

  add(keys: BigUint64Array, vectors: Float32Array): void {
    if (vectors.length !== keys.length * this.#dims) throw new Error(`flat index: ${keys.length} keys with ${vectors.length} floats of dimension ${this.#dims}`);
    const fresh = new Set<number>();
    for (const key of keys) {
      if (this.#slots.has(Number(key)) || fresh.has(Number(key))) throw new Error(`flat index: key ${key} is present already`);
      fresh.add(Number(key));
    }
    this.#reserve(this.#size + keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      this.#keys[this.#size] = key;
      this.#vectors.set(vectors.subarray(i * this.#dims, (i + 1) * this.#dims), this.#size * this.#dims);
      this.#slots.set(Number(key), this.#size);
      this.#size++;
    }
  }

  remove(key: bigint): boolean {
    const slot = this.#slots.get(Number(key));
    if (slot === undefined) return false;
    this.#slots.delete(Number(key));
    const last = --this.#size;
    if (slot !== last) {
      const moved = this.#keys[last]!;
      this.#keys[slot] = moved;
      this.#vectors.copyWithin(slot * this.#dims, last * this.#dims, (last + 1) * this.#dims);
      this.#slots.set(Number(moved), slot);
    }
    return true;
  }

  has(key: bigint): boolean {
    return this.#slots.has(Number(key));
  }

  /**
   * Exact: `ef` has no meaning without a graph. One thread: more only slow a lone search down
   * (100k x 128: 2.0 ms on one, 3.6 on two), the batch form spreads queries over threads.
   */
  search(query: Float32Array, count: number): AnnMatches {
    const wanted = Math.min(count, this.#size);
    if (wanted === 0) return EMPTY;
    const m = exactSearch(this.#live(), query, this.#dims, wanted, USEARCH_METRIC[this.#metric], 1);
    return { keys: this.#keysOf(m.keys), distances: m.distances };
  }

  searchMany(queries: Float32Array, count: number, _ef: number, threads: number): AnnMatches[] {
    const n = queries.length / this.#dims;
    if (n === 0) return [];
    const wanted = Math.min(count, this.#size);
    if (wanted === 0) return Array.from({ length: n }, () => EMPTY);
    if (n === 1) return [this.search(queries, count)];
    const m = exactSearch(this.#live(), queries, this.#dims, wanted, USEARCH_METRIC[this.#metric], Math.max(1, threads)) as unknown as { keys: BigUint64Array; distances: Float32Array; counts: BigUint64Array };
    return Array.from({ length: n }, (_, i) => {
      const at = i * wanted;
      const found = Math.min(wanted, Number(m.counts[i]));
      return { keys: this.#keysOf(m.keys.subarray(at, at + found)), distances: m.distances.subarray(at, at + found) };
    });
  }

  save(file: string): void {
    const header = Buffer.alloc(HEADER_BYTES);
    MAGIC.copy(header, 0);
    header.writeUInt32LE(this.#dims, MAGIC.length);
    header.writeUInt32LE(METRIC_CODES.indexOf(this.#metric), MAGIC.length + 4);
    header.writeBigUInt64LE(BigInt(this.#size), MAGIC.length + 8);
    const keys = Buffer.from(this.#keys.buffer, this.#keys.byteOffset, this.#size * 8);
    const vectors = Buffer.from(this.#vectors.buffer, this.#vectors.byteOffset, this.#size * this.#dims * 4);
    writeFileSync(file, Buffer.concat([header, keys, vectors]));
  }

  /** Reads a file `save` wrote; throws when it is not one, or was written for other options. */
  static load(file: string, options: Pick<AnnOptions, 'dimensions' | 'metric'>): FlatIndex {
    const bytes = readFileSync(file);
    if (bytes.length < HEADER_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error(`${file} is not a flat index file`);
    const dims = bytes.readUInt32LE(MAGIC.length);
    const metric = METRIC_CODES[bytes.readUInt32LE(MAGIC.length + 4)];
    const count = Number(bytes.readBigUInt64LE(MAGIC.length + 8));
    if (dims !== options.dimensions || metric !== options.metric) throw new Error(`flat index file ${file} has dimensions ${dims} and metric ${metric}, not ${options.dimensions} and ${options.metric}`);
    if (bytes.length !== HEADER_BYTES + count * 8 + count * dims * 4) throw new Error(`flat index file ${file} is ${bytes.length} bytes, not what ${count} vectors take`);
    // Copied out once, straight into the index's arrays: a Buffer from readFileSync may share a
    // pool and need not be aligned for typed arrays.
    const index = new FlatIndex(options, 0);
    index.#keys = new BigUint64Array(bytes.buffer.slice(bytes.byteOffset + HEADER_BYTES, bytes.byteOffset + HEADER_BYTES + count * 8));
    index.#vectors = new Float32Array(bytes.buffer.slice(bytes.byteOffset + HEADER_BYTES + count * 8, bytes.byteOffset + bytes.length));
    index.#size = count;
    index.#keys.forEach((key, slot) => index.#slots.set(Number(key), slot));
    if (index.#slots.size !== count) throw new Error(`flat index file ${file} holds a key twice`);
    return index;
  }

  /** Builds the file of `chunks` (the flat index has no graph to build: a copy, then a write). */
  static async build(options: AnnOptions, chunks: AsyncIterable<AnnChunk>, file: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const index = new FlatIndex(options);
    for await (const chunk of chunks) {
      signal.throwIfAborted();
      index.add(chunk.keys, chunk.vectors);
    }
    index.save(file);
  }

  #live(): Float32Array {
    return this.#vectors.subarray(0, this.#size * this.#dims);
  }

  /** Slots (as exactSearch numbers the dataset's rows) -> keys. */
  #keysOf(slots: BigUint64Array): BigUint64Array {
    const keys = new BigUint64Array(slots.length);
    for (let i = 0; i < slots.length; i++) keys[i] = this.#keys[Number(slots[i])]!;
    return keys;
  }

  #reserve(slots: number): void {
    if (slots <= this.#keys.length) return;
    const capacity = Math.max(slots, this.#keys.length * 2);
    const keys = new BigUint64Array(capacity);
    keys.set(this.#keys.subarray(0, this.#size));
    const vectors = new Float32Array(capacity * this.#dims);
    vectors.set(this.#vectors.subarray(0, this.#size * this.#dims));
    this.#keys = keys;
    this.#vectors = vectors;
  }
}
