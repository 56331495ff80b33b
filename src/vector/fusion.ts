// Hybrid fusion of a BM25 ranking and a vector ranking. Pure.
//   rrf:    score(d) = sum over the lists containing d of weight / (60 + rank), rank 1-based
//   linear: score(d) = sum over the lists containing d of weight * (s - min) / (max - min),
//           min and max taken over that list's candidates (a list whose scores are all equal
//           normalises them to 1). A document absent from a list gets nothing from it.
// Each fused hit keeps its raw score from each list (null when it was not a candidate there).
import { type Fusion } from './collection-config.js';
import { type ScoredId, byScoreThenId } from './bm25.js';

export const RRF_K = 60;

export interface FusedHit {
  readonly id: string;
  readonly score: number;
  readonly bm25_score: number | null;
  readonly vector_score: number | null;
}

export interface FusionInput {
  /** Both lists sorted best first. */
  readonly bm25: readonly ScoredId[];
  readonly vector: readonly ScoredId[];
  readonly bm25Weight: number;
  readonly vectorWeight: number;
  readonly k: number;
}

function contributions(list: readonly ScoredId[], fusion: Fusion, weight: number): Map<string, number> {
  const out = new Map<string, number>();
  if (fusion === 'rrf') {
    list.forEach((hit, i) => {
      if (!out.has(hit.id)) out.set(hit.id, weight / (RRF_K + i + 1));
    });
    return out;
  }
  let min = Infinity;
  let max = -Infinity;
  for (const hit of list) {
    min = Math.min(min, hit.score);
    max = Math.max(max, hit.score);
  }
  for (const hit of list) {
    if (out.has(hit.id)) continue;
    out.set(hit.id, weight * (max > min ? (hit.score - min) / (max - min) : 1));
  }
  return out;
}

export function fuse(fusion: Fusion, input: FusionInput): FusedHit[] {
  const bm25 = contributions(input.bm25, fusion, input.bm25Weight);
  const vector = contributions(input.vector, fusion, input.vectorWeight);
  const raw = (list: readonly ScoredId[]) => {
    const m = new Map<string, number>();
    for (const hit of list) if (!m.has(hit.id)) m.set(hit.id, hit.score);
    return m;
  };
  const bm25Raw = raw(input.bm25);
  const vectorRaw = raw(input.vector);
  const hits: FusedHit[] = [];
  for (const id of new Set([...bm25.keys(), ...vector.keys()])) {
    hits.push({
      id,
      score: (bm25.get(id) ?? 0) + (vector.get(id) ?? 0),
      bm25_score: bm25Raw.get(id) ?? null,
      vector_score: vectorRaw.get(id) ?? null,
    });
  }
  hits.sort(byScoreThenId);
  return hits.slice(0, input.k);
}
