// Searches of one index asked in the same turn of the event loop (the searches of one
// `search/batch` request, and those of concurrent requests read in one poll phase) run as one
// batch on the index's own threads: usearch spreads a batch over `threads` threads while the
// calling thread waits, so on 2 cores a batch of searches takes about half the time of one
// after another. The batch runs in the turn's check phase (setImmediate): a microtask would
// run before the next request's callback and see one search. A lone search runs alone.
import type { AnnIndex, AnnMatches } from './ann-index.js';

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
        const answers = index.searchMany(queries, group[0]!.count, group[0]!.ef, Math.min(this.threads, group.length));
        group.forEach((a, i) => a.resolve(answers[i]!));
      } catch (err) {
        for (const a of group) a.reject(err);
      }
    }
  }
}
