// Exact BM25 top-k over postings held in memory under small integer keys (the memory backend's
// ordinals), term at a time into a dense array of partial scores indexed by key. Pure: the
// lists and a scratch array come in, the top k goes out.
//
//   Lists are added in query order, so every document's score is summed in query-term order
//   from 0, as `rankBm25` sums it: the same float operations, hence identical scores.
//   Pruning (Turtle & Flood's term-at-a-time MaxScore): before list p, a document not met yet
//   holds none of terms 0..p-1, so it scores at most rest(p) = ub(p) + ... + ub(n-1). Once k
//   documents already met have partial scores above rest(p) (with slack), none unmet can enter
//   the top k: lists p..n-1 only add to documents already met.
//
// Why not `rankBm25MaxScore` here: its candidates are strings in a Set and its lookups a
// generator round trip per chunk, ~300 ns a posting when two common terms meet (6 ms a query,
// most of the memory backend's search time on the corpus); a posting here is a
// multiply-add into a typed array. The disk backend keeps MaxScore: its lists are read from
// RocksDB, where not reading one is what pruning buys.
import { type Bm25Params, type CorpusStats, type ScoredId, idf, termScore } from './bm25.js';
import { BOUND_SLACK, type PostingColumns, type QueryTerm, insertBest } from './bm25-maxscore.js';

/** A term's live postings with each document's key (`0 <= key < universe`), each key once. */
export interface KeyedColumns extends PostingColumns {
  readonly keys: ArrayLike<number>;
}

/**
 * Scratch kept by the caller between searches, grown to the key universe: `scores` is all
 * zero outside a call. Preallocated because pushing a search's ~20k met documents onto arrays
 * cost more than scoring them.
 */
export interface Accumulator {
  scores: Float64Array;
  /** The documents met, in the order met: key, and where it was first met (list, position). */
  metKeys: Int32Array;
  metList: Int32Array;
  metAt: Int32Array;
  /** How many documents the last call met, ranked or not (what pruning saves shows here). */
  met: number;
}

export function newAccumulator(): Accumulator {
  return { scores: new Float64Array(0), metKeys: new Int32Array(0), metList: new Int32Array(0), metAt: new Int32Array(0), met: 0 };
}

function grow(scratch: Accumulator, universe: number): void {
  if (scratch.scores.length >= universe) return;
  const size = Math.max(universe, scratch.scores.length * 2);
  scratch.scores = new Float64Array(size);
  scratch.metKeys = new Int32Array(size);
  scratch.metList = new Int32Array(size);
  scratch.metAt = new Int32Array(size);
}

/**
 * The best `k` documents holding at least one of `terms` (distinct, in query order, df > 0;
 * `lists[i]` is term i's), as `rankBm25` would rank them from the same lists.
 */
export function rankBm25Accumulate(
  terms: readonly QueryTerm[],
  lists: readonly KeyedColumns[],
  stats: CorpusStats,
  params: Bm25Params,
  k: number,
  universe: number,
  scratch: Accumulator,
): ScoredId[] {
  const n = terms.length;
  scratch.met = 0;
  if (stats.docCount === 0 || n === 0 || k <= 0) return [];
  grow(scratch, universe);
  const { scores, metKeys, metList, metAt } = scratch;
  const avgdl = stats.totalLength / stats.docCount;
  const idfs = terms.map((t) => idf(stats.docCount, t.bound.df));
  const rest = new Array<number>(n + 1).fill(0);
  for (let p = n - 1; p >= 0; p--) rest[p] = rest[p + 1]! + termScore(idfs[p]!, terms[p]!.bound.tfMax, terms[p]!.bound.docLengthMin, avgdl, params);

  const best: ScoredId[] = [];
  let met = 0;
  let metInLast = 0;
  let closed = false;
  try {
    for (let p = 0; p < n; p++) {
      if (!closed && p > 0 && met >= k) closed = countAbove(scores, metKeys, met, rest[p]! * BOUND_SLACK, k);
      const w = idfs[p]!;
      const { keys, tfs, docLengths, docIds } = lists[p]!;
      const last = p === n - 1;
      for (let i = 0; i < tfs.length; i++) {
        const key = keys[i]!;
        const before = scores[key]!;
        if (before === 0) {
          if (closed) continue;
          if (last) {
            // Met first in the last list: this term's score is its whole score (0 + it, as summed
            // everywhere), ranked now; nothing reads its partial again.
            metInLast++;
            const score = 0 + termScore(w, tfs[i]!, docLengths[i]!, avgdl, params);
            if (score > 0 && (best.length < k || score >= best[k - 1]!.score)) insertBest(best, { id: docIds[i]!, score }, k);
            continue;
          }
          metKeys[met] = key;
          metList[met] = p;
          metAt[met++] = i;
        }
        scores[key] = before + termScore(w, tfs[i]!, docLengths[i]!, avgdl, params);
      }
    }
    for (let j = 0; j < met; j++) {
      const score = scores[metKeys[j]!]!;
      if (score > 0 && (best.length < k || score >= best[k - 1]!.score)) insertBest(best, { id: lists[metList[j]!]!.docIds[metAt[j]!]!, score }, k);
    }
    return best;
  } finally {
    for (let j = 0; j < met; j++) scores[metKeys[j]!] = 0;
    scratch.met = met + metInLast;
  }
}

/** Do at least `k` of the `met` documents have a partial score above `bound`? */
function countAbove(scores: Float64Array, metKeys: Int32Array, met: number, bound: number, k: number): boolean {
  let above = 0;
  for (let j = 0; j < met; j++) if (scores[metKeys[j]!]! > bound && ++above >= k) return true;
  return false;
}
