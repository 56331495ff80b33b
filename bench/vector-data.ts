// The issue's vector data, shared by bench/vector.ts and bench/pgvector.ts: `n` vectors of 128
// dimensions from a Gaussian mixture of 100 clusters (seed 42), `queries` more from the same
// mixture, and the exact L2 top-10 of each query (usearch's exact search).
import usearch from 'usearch';
import { clusteredVectors } from '../test/vector/clustered.js';

export const DIMS = 128;
export const K = 10;
/** Beams swept to find the smallest one reaching each recall target. */
export const EF_SWEEP = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256];
export const RECALL_TARGETS = [0.95, 0.99];

export interface VectorData {
  readonly data: Float32Array[];
  readonly queries: Float32Array[];
  /** `data` and `queries` end to end, as usearch's batch calls take them. */
  readonly flat: Float32Array;
  readonly qflat: Float32Array;
  /** Per query, the ids (positions in `data`) of its exact top K. */
  readonly truth: Set<number>[];
}

export function issueVectors(n: number, queryCount: number): VectorData {
  const all = clusteredVectors({ seed: 42, count: n + queryCount, dims: DIMS, clusters: 100, noise: 0.25 });
  const data = all.slice(0, n);
  const queries = all.slice(n);
  const flat = new Float32Array(n * DIMS);
  data.forEach((v, i) => flat.set(v, i * DIMS));
  const qflat = new Float32Array(queryCount * DIMS);
  queries.forEach((v, i) => qflat.set(v, i * DIMS));
  const exact = usearch.exactSearch(flat, qflat, DIMS, K, usearch.MetricKind.L2sq, 0) as InstanceType<typeof usearch.BatchMatches>;
  const truth = queries.map((_, i) => new Set(Array.from(exact.get(i).keys, Number)));
  return { data, queries, flat, qflat, truth };
}

/** The share of the true top K found, over every query answered. */
export function recallOf(found: readonly (readonly number[])[], truth: readonly Set<number>[]): number {
  let hits = 0;
  found.forEach((ids, i) => (hits += ids.filter((id) => truth[i]!.has(id)).length));
  return hits / (K * found.length);
}
