// usearch (HNSW, SIMD) as an AnnEngine. usearch fixes the search beam at construction but
// widens it to the number of results asked for (`expansion = max(expansion_search, wanted)`),
// so the index is built with a beam of 1 and a search asks for `ef` results and keeps the
// best `count`: that is exactly a search with beam `ef`, chosen per query.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import usearch from 'usearch';
import { USEARCH_METRIC } from './usearch-metric.js';
import type { AnnChunk, AnnEngine, AnnIndex, AnnMatches, AnnOptions } from './ann-index.js';
import { FlatIndex } from './flat.js';

const require = createRequire(import.meta.url);

const { Index, ScalarKind } = usearch;
type NativeIndex = InstanceType<typeof Index>;

/**
 * Keys each thread of a batch add gets at least: a batch uses one thread per this many keys, up
 * to every core. Threads inserting into a small graph at once make a worse graph, and one that
 * differs from run to run (400 keys on 2 threads, then 200 deletes: recall 0.95-1 from run to
 * run under load; on 16 threads as low as 0.81); one thread builds the same graph every time.
 */
const KEYS_PER_ADD_THREAD = 256;
const CORES = availableParallelism();

/** Threads for a batch add of `keys` keys with `cores` available. */
export function addThreads(keys: number, cores: number): number {
  return Math.max(1, Math.min(cores, Math.floor(keys / KEYS_PER_ADD_THREAD)));
}

function nativeOptions(options: AnnOptions) {
  return {
    dimensions: options.dimensions,
    metric: USEARCH_METRIC[options.metric],
    quantization: options.precision === 'f16' ? ScalarKind.F16 : ScalarKind.F32,
    connectivity: options.m,
    expansion_add: options.efConstruction,
    expansion_search: 1,
    multi: false,
  };
}

function build(options: AnnOptions): NativeIndex {
  return new Index(nativeOptions(options));
}

// Plain JavaScript run with `eval`: no TypeScript loader is needed inside the worker. It owns
// an index of its own: adds one chunk per message (on the threads the message says: all cores
// but one at most, one left to the event loop), then saves it. Each message is answered, so the
// sender never queues more than one chunk.
const BUILD_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { Index } = require(workerData.modulePath);
const index = new Index(workerData.options);
// As UsearchIndex.add: an add on more threads than the last reservation covered fails.
let contexts = 1;
parentPort.on('message', (m) => {
  try {
    if (m.kind === 'add') {
      if (m.keys.length > 0) {
        const reserves = index.size() + m.keys.length >= index.capacity();
        let threads = m.threads;
        if (!reserves && threads > contexts) threads = 1;
        index.add(m.keys, m.vectors, threads);
        if (reserves) contexts = threads;
      }
    } else {
      index.save(m.file);
    }
    parentPort.postMessage({ ok: true });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String((err && err.stack) || err) });
  }
});
`;

async function buildInWorker(options: AnnOptions, chunks: AsyncIterable<AnnChunk>, file: string, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  const cores = Math.max(1, CORES - 1);
  const workerData = { modulePath: require.resolve('usearch'), options: nativeOptions(options) };
  const worker = new Worker(BUILD_WORKER_SOURCE, { eval: true, workerData });
  let fail: (err: Error) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined);
  const onAbort = () => fail(signal.reason instanceof Error ? signal.reason : new Error('index build aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  worker.on('error', (err) => fail(err));
  worker.on('exit', (code) => fail(new Error(`index build worker exited (${code})`)));
  const call = (message: object, transfer: ArrayBuffer[] = []): Promise<void> => {
    const answered = new Promise<void>((resolve, reject) =>
      worker.once('message', (m: { ok: boolean; error?: string }) => (m.ok ? resolve() : reject(new Error(`index build failed: ${m.error}`)))),
    );
    worker.postMessage(message, transfer);
    return Promise.race([answered, failed]);
  };
  try {
    for await (const chunk of chunks) {
      signal.throwIfAborted();
      // Copies the worker may take over: the caller's arrays stay usable.
      const keys = chunk.keys.slice();
      const vectors = chunk.vectors.slice();
      await call({ kind: 'add', keys, vectors, threads: addThreads(keys.length, cores) }, [keys.buffer as ArrayBuffer, vectors.buffer as ArrayBuffer]);
    }
    await call({ kind: 'save', file });
  } finally {
    signal.removeEventListener('abort', onAbort);
    worker.removeAllListeners('exit');
    await worker.terminate();
  }
}

class UsearchIndex implements AnnIndex {
  readonly keepsRemoved = true;
  readonly #native: NativeIndex;
  /**
   * Threads the index holds contexts for. The binding reserves (capacity and thread contexts,
   * for the threads of that call) only when an add would not fit; an add on more threads than
   * the last reservation covered fails half way with "Reserve capacity ahead of insertions!".
   * 1 until an add of ours reserved for more (a loaded index: every core, which the load reserved).
   */
  #contexts: number;

  /** `contexts`: what the binding reserved already (a load reserves for every core). */
  constructor(native: NativeIndex, contexts = 1) {
    this.#native = native;
    this.#contexts = contexts;
  }

  get size(): number {
    return this.#native.size();
  }

  add(keys: BigUint64Array, vectors: Float32Array): void {
    if (keys.length === 0) return;
    const reserves = this.#native.size() + keys.length >= this.#native.capacity();
    let threads = addThreads(keys.length, CORES);
    if (!reserves && threads > this.#contexts) threads = 1;
    this.#native.add(keys, vectors, threads);
    if (reserves) this.#contexts = threads;
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

  searchMany(queries: Float32Array, count: number, ef: number, threads: number): AnnMatches[] {
    const dims = this.#native.dimensions();
    const n = queries.length / dims;
    if (n === 0) return [];
    if (this.#native.size() === 0) return Array.from({ length: n }, () => ({ keys: new BigUint64Array(0), distances: new Float32Array(0) }));
    const wanted = Math.max(count, ef);
    // One query comes back as Matches, more as BatchMatches (the wrapper decides by length).
    if (n === 1) return [this.search(queries, count, ef)];
    // More threads than reserved contexts fails ("Reserve capacity ahead of searches!").
    const m = this.#native.search(queries, wanted, Math.max(1, Math.min(threads, this.#contexts))) as unknown as { keys: BigUint64Array; distances: Float32Array; counts: BigUint64Array };
    return Array.from({ length: n }, (_, i) => {
      const at = i * wanted;
      const found = Math.min(count, Number(m.counts[i]));
      return { keys: m.keys.subarray(at, at + found), distances: m.distances.subarray(at, at + found) };
    });
  }

  save(file: string): void {
    this.#native.save(file);
  }
}

/** HNSW through usearch's `Index`; with `m: 0` a flat index over usearch's exact search. */
export const usearchEngine: AnnEngine = {
  name: 'usearch',
  create: (options) => (options.m === 0 ? new FlatIndex(options) : new UsearchIndex(build(options))),
  build: (options, chunks, file, signal) => (options.m === 0 ? FlatIndex.build(options, chunks, file, signal) : buildInWorker(options, chunks, file, signal)),
  load(file, options) {
    if (options.m === 0) return FlatIndex.load(file, options);
    const native = build(options);
    native.load(file);
    // usearch adopts the file's dimensions silently: a mismatch means the file is not ours.
    assert.equal(native.dimensions(), options.dimensions, `index file ${file} has other dimensions`);
    return new UsearchIndex(native, CORES);
  },
};
