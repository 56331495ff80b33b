// What a usearch search costs with warm and with cold CPU caches, in this process: the issue's
// 100k × 128 vectors (M 16, ef_construction 200), ef 48, the time of the native call alone.
//   hot        searches back to back (what bench/vector.ts's in-process baseline measures)
//   immediate  one event-loop turn between searches (setImmediate)
//   thrash     4 MiB of other memory touched between searches (about what a server's HTTP,
//              JSON and bookkeeping walk through between two searches; the L2 is 2 MiB a core)
//   idle       1 ms asleep between searches (a one-client server waits about this long)
// A node answering over HTTP is in the last two cases, whatever its own code costs.
// Usage: npx tsx bench/usearch-cache.ts   (USEARCH_CACHE_ROUNDS, default 3)
import usearch from 'usearch';
import { clusteredVectors } from '../test/vector/clustered.js';
import { type BenchResult, report } from './support.js';

const N = 100_000;
const DIMS = 128;
const EF = 48;
const ROUNDS = Number(process.env.USEARCH_CACHE_ROUNDS ?? 3);

const all = clusteredVectors({ seed: 42, count: N + 1_000, dims: DIMS, clusters: 100, noise: 0.25 });
const index = new usearch.Index({ dimensions: DIMS, metric: usearch.MetricKind.L2sq, quantization: usearch.ScalarKind.F32, connectivity: 16, expansion_add: 200, expansion_search: 1, multi: false });
const flat = new Float32Array(N * DIMS);
all.slice(0, N).forEach((v, i) => flat.set(v, i * DIMS));
const keys = BigUint64Array.from({ length: N }, (_, i) => BigInt(i));
for (let i = 0; i < N; i += 1_000) index.add(keys.subarray(i, i + 1_000), flat.subarray(i * DIMS, (i + 1_000) * DIMS), 2);
const queries = all.slice(N).map((v) => Float32Array.from(v));

const other = new Uint8Array(4 << 20);
let sink = 0;
const between: Record<string, () => Promise<void> | void> = {
  hot: () => undefined,
  immediate: () => new Promise((resolve) => setImmediate(resolve)),
  thrash: () => {
    for (let i = 0; i < other.length; i += 64) sink += other[i]!++;
  },
  idle: () => new Promise((resolve) => setTimeout(resolve, 1)),
};

const totals = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  // The cases alternate within a round, so a drift of the machine's speed hits them alike.
  for (const [name, gap] of Object.entries(between)) {
    let ns = 0n;
    for (const q of queries) {
      await gap();
      const t0 = process.hrtime.bigint();
      index.search(q, EF, 1);
      ns += process.hrtime.bigint() - t0;
    }
    totals.set(name, [...(totals.get(name) ?? []), Number(ns) / 1_000 / queries.length]);
  }
}
const results: BenchResult[] = [...totals].map(([name, us]) => {
  const sorted = [...us].sort((a, b) => a - b);
  return { bench: `usearch search ef=${EF}, ${name}`, us_median: sorted[Math.floor(sorted.length / 2)]!, us_min: sorted[0]!, us_max: sorted.at(-1)! };
});
report(results);
if (sink === -1) console.log(sink); // keeps the touching loop from being optimised away
