// Searches of one index asked in the same turn of the event loop (the searches of one
// `search/batch` request, and those of concurrent requests read in one poll phase) run as one
// native batch. The batch runs in the turn's check phase (setImmediate): a microtask would
// run before the next request's callback and see one search. A lone search runs alone.
//
// A large batch is spread over `threads` threads while the calling thread waits: on 2 cores
// a `search/batch` of 100 takes about half the time. A small one stays on this thread:
// usearch starts its helper threads afresh for every call, and for the 3-5 searches that
// concurrent clients bring to one turn that start-up cost more CPU than the second core
// saved (8 clients: 2,872 -> 3,357 searches/s on one thread, bench/ab.ts).
import type { AnnIndex, AnnMatches } from './ann-index.js';

/** Batches of at least this many searches use more than the calling thread. */
export const PARALLEL_SEARCH_MIN = 32;

interface Asked {
  readonly query: Float32Array;
  readonly count: number;
  readonly ef: number;
  resolve(m: AnnMatches): void;
  reject(err: unknown): void;
}

export class BatchedSearch {
  #asked: Asked[] = [];

  /** `index` is read when the batch runs: a compaction may have swapped it meanwhile. */
  constructor(
    private readonly index: () => AnnIndex,
    private readonly threads: number,
    private readonly schedule: (run: () => void) => void = (run) => void setImmediate(run),
  ) {}

  search(query: Float32Array, count: number, ef: number): Promise<AnnMatches> {
    return new Promise((resolve, reject) => {
      if (this.#asked.length === 0) this.schedule(() => this.#run());
      this.#asked.push({ query, count, ef, resolve, reject });
    });
  }

  #run(): void {
    const asked = this.#asked;
    this.#asked = [];
    const index = this.index();
    // One native batch per (count, ef): usearch takes one of each per call.
    const groups = new Map<string, Asked[]>();
    for (const a of asked) {
      const key = `${a.count}:${a.ef}`;
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [a]);
      else group.push(a);
    }
    for (const group of groups.values()) {
      try {
        if (group.length === 1) {
          const a = group[0]!;
          a.resolve(index.search(a.query, a.count, a.ef));
          continue;
        }
        const dims = group[0]!.query.length;
        const queries = new Float32Array(group.length * dims);
        group.forEach((a, i) => queries.set(a.query, i * dims));
        const threads = group.length >= PARALLEL_SEARCH_MIN ? Math.min(this.threads, group.length) : 1;
        const answers = index.searchMany(queries, group[0]!.count, group[0]!.ef, threads);
        group.forEach((a, i) => a.resolve(answers[i]!));
      } catch (err) {
        for (const a of group) a.reject(err);
      }
    }
  }
}
