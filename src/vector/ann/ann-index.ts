// The approximate-nearest-neighbour index behind a shard: a small interface so another engine
// can replace usearch. Keys are uint64 labels the shard maps to document ids; the calls on an
// index are synchronous (they run on the calling thread), building one is not.
import type { IndexPrecision, Metric } from '../collection-config.js';

export interface AnnOptions {
  readonly dimensions: number;
  readonly metric: Metric;
  /** HNSW links per node (M); 0: no graph, a flat index searched exactly (`flat.ts`). */
  readonly m: number;
  readonly efConstruction: number;
  /** How the index keeps vectors (absent: f32). */
  readonly precision?: IndexPrecision;
}

export interface AnnMatches {
  /** Best first. */
  readonly keys: BigUint64Array;
  /** Engine distances (see metric.ts for the score of each). */
  readonly distances: Float32Array;
}

export interface AnnIndex {
  readonly size: number;
  /**
   * Whether a removed vector stays in the structure until the index is rebuilt (an HNSW graph
   * marks it deleted), which the shard counts towards a compaction.
   */
  readonly keepsRemoved: boolean;
  /** `vectors` holds keys.length vectors back to back. A key must not be present already. */
  add(keys: BigUint64Array, vectors: Float32Array): void;
  /** True when the key was present. */
  remove(key: bigint): boolean;
  has(key: bigint): boolean;
  /** The `count` nearest, searched with a beam of width `ef` (>= count). */
  search(query: Float32Array, count: number, ef: number): AnnMatches;
  /**
   * Several queries (back to back in `queries`) on up to `threads` threads; the calling
   * thread waits for all of them. One answer per query, as `search` gives it.
   */
  searchMany(queries: Float32Array, count: number, ef: number, threads: number): AnnMatches[];
  /** Write the whole index to `file` (synchronously). */
  save(file: string): void;
}

/** Vectors for `AnnEngine.build`, a chunk at a time. */
export interface AnnChunk {
  readonly keys: BigUint64Array;
  /** keys.length vectors back to back. */
  readonly vectors: Float32Array;
}

export interface AnnEngine {
  readonly name: string;
  create(options: AnnOptions): AnnIndex;
  /**
   * Builds a new index of the given vectors OFF the calling thread and writes it to `file`,
   * in the format `load` reads. Rejects when `signal` aborts (the file is then unfinished).
   */
  build(options: AnnOptions, chunks: AsyncIterable<AnnChunk>, file: string, signal: AbortSignal): Promise<void>;
  /** Load a saved index; throws when the file is unreadable or was built with other options. */
  load(file: string, options: AnnOptions): AnnIndex;
}
