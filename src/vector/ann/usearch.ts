// usearch (HNSW, SIMD) as an AnnEngine. usearch fixes the search beam at construction but
// widens it to the number of results asked for (`expansion = max(expansion_search, wanted)`),
// so the index is built with a beam of 1 and a search asks for `ef` results and keeps the
// best `count`: that is exactly a search with beam `ef`, chosen per query.
import assert from 'node:assert/strict';
import usearch from 'usearch';
import type { Metric } from '../collection-config.js';
import type { AnnEngine, AnnIndex, AnnMatches, AnnOptions } from './ann-index.js';

const { Index, MetricKind, ScalarKind } = usearch;
type NativeIndex = InstanceType<typeof Index>;

const METRIC_KIND: Record<Metric, (typeof MetricKind)[keyof typeof MetricKind]> = {
  cosine: MetricKind.Cos,
  l2: MetricKind.L2sq,
  ip: MetricKind.IP,
};

/** Batch adds of this size or more use every core; a single add stays on this thread. */
const PARALLEL_ADD_MIN = 256;

function build(options: AnnOptions): NativeIndex {
  return new Index({
    dimensions: options.dimensions,
    metric: METRIC_KIND[options.metric],
    quantization: ScalarKind.F32,
    connectivity: options.m,
    expansion_add: options.efConstruction,
    expansion_search: 1,
    multi: false,
  });
}

class UsearchIndex implements AnnIndex {
  readonly #native: NativeIndex;

  constructor(native: NativeIndex) {
    this.#native = native;
  }

  get size(): number {
    return this.#native.size();
  }

  add(keys: BigUint64Array, vectors: Float32Array): void {
    if (keys.length === 0) return;
    this.#native.add(keys, vectors, keys.length >= PARALLEL_ADD_MIN ? 0 : 1);
  }

  remove(key: bigint): boolean {
    return (this.#native.remove(key) as number) > 0;
  }

  has(key: bigint): boolean {
    return this.#native.contains(key) as boolean;
  }

  search(query: Float32Array, count: number, ef: number): AnnMatches {
    if (this.#native.size() === 0) return { keys: new BigUint64Array(0), distances: new Float32Array(0) };
    const m = this.#native.search(query, Math.max(count, ef), 1);
    return { keys: m.keys.subarray(0, count), distances: m.distances.subarray(0, count) };
  }

  save(file: string): void {
    this.#native.save(file);
  }
}

export const usearchEngine: AnnEngine = {
  name: 'usearch',
  create: (options) => new UsearchIndex(build(options)),
  load(file, options) {
    const native = build(options);
    native.load(file);
    // usearch adopts the file's dimensions silently: a mismatch means the file is not ours.
    assert.equal(native.dimensions(), options.dimensions, `index file ${file} has other dimensions`);
    return new UsearchIndex(native);
  },
};
