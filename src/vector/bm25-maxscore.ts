// Exact BM25 top-k with MaxScore pruning (Turtle & Flood 1995; the term-ordered form Lucene's
// MaxScoreBulkScorer and Tantivy use). Pure: the algorithm is a generator that yields the
// posting reads it needs and receives their answers, so it holds no I/O and never awaits;
// the backend drives it (an async loop for RocksDB).
//
//   ub(t)  = termScore(idf(t), tfMax(t), docLengthMin(t)) >= the score t gives any document
//            (termScore grows with tf and shrinks with |d|; the bounds are kept by the index)
//   terms in order of ub, largest first: t0, t1, ..., tn-1; rest(i) = ub(ti) + ... + ub(tn-1)
//   round i: read ti's postings; a document not met in rounds < i holds none of t0..ti-1, so
//            its score <= rest(i). Once the k-th best score so far exceeds rest(i), no
//            document left unread can enter the top k: stop. Otherwise each new document is
//            scored completely by looking its id up in ti+1..tn-1, dropping it as soon as
//            its partial score + rest of its unlooked terms falls below the k-th best.
//   Only kept documents are remembered as seen (a Set insert per posting was the scan's
//   largest cost): a document dropped by its bound in an earlier round scores below the k-th
//   best then, hence always; met again, it is scored from a part of its terms, lower still,
//   and dropped again. So a list's posting is checked against the seen set only once its
//   bound says it could enter.
//
// Exactness: a document is dropped only when its bound is strictly below the k-th best score
// (an equal score could still win on the id), with a relative slack far above the rounding
// error of a sum of a few float64 terms. Every kept document's score is summed in query-term
// order from 0, exactly as `rankBm25` does, so both return identical ids and scores, ordered
// by `byScoreThenId` (score descending, then id ascending by UTF-16 code units).
import { type Bm25Params, type CorpusStats, type ScoredId, byScoreThenId, idf, termScore } from './bm25.js';

/** What the index keeps per term: the exact df, and bounds valid for every posting of it. */
export interface TermBound {
  readonly df: number;
  /** >= the largest tf among the term's postings (may be looser after deletes). */
  readonly tfMax: number;
  /** <= the smallest document length among them (same). */
  readonly docLengthMin: number;
}

export interface QueryTerm {
  readonly term: string;
  readonly bound: TermBound;
}

/**
 * A read the algorithm needs. `list`: every posting of the term (the answer's order does not
 * matter). `lookup`: the term's posting for each id, tf 0 where the document lacks it (the
 * answer is aligned with `docIds`).
 */
export type PostingRead =
  | { readonly kind: 'list'; readonly term: string }
  | { readonly kind: 'lookup'; readonly term: string; readonly docIds: readonly string[] };

/**
 * Postings column by column: entry i is document `docIds[i]`'s, with `tfs[i]` (0: it lacks the
 * term, in a lookup's answer) and `docLengths[i]`. A scan reads the two number columns in order
 * and touches an id only for a document its bound lets in: one object per posting, scattered
 * over the heap, made nearly every posting of a scan a cache miss.
 */
export interface PostingColumns {
  readonly docIds: readonly string[];
  readonly tfs: Uint32Array;
  readonly docLengths: Uint32Array;
}

export type MaxScoreRun = Generator<PostingRead, ScoredId[], PostingColumns>;

/** Relative slack on every bound: rounding can move a sum of n terms by ~n ulps (1e-16 each). */
export const BOUND_SLACK = 1 + 1e-9;

/**
 * New documents of a round are scored in chunks of this many, so the k-th best score rises
 * within a long first list and later chunks already skip lookups.
 */
const CHUNK_DOCS = 256;

/**
 * The best `k` documents holding at least one of `terms` (distinct, in query order, df > 0),
 * as `rankBm25` would rank them from the full posting lists.
 */
export function* rankBm25MaxScore(terms: readonly QueryTerm[], stats: CorpusStats, params: Bm25Params, k: number): MaxScoreRun {
  const n = terms.length;
  if (stats.docCount === 0 || n === 0 || k <= 0) return [];
  const avgdl = stats.totalLength / stats.docCount;
  const idfs = terms.map((t) => idf(stats.docCount, t.bound.df));
  const ub = terms.map((t, i) => termScore(idfs[i]!, t.bound.tfMax, t.bound.docLengthMin, avgdl, params));
  const order = terms.map((_, i) => i).sort((a, b) => ub[b]! - ub[a]! || a - b);
  // rest[p] = ub of order[p..], so rest[n] = 0.
  const rest = new Array<number>(n + 1).fill(0);
  for (let p = n - 1; p >= 0; p--) rest[p] = rest[p + 1]! + ub[order[p]!]!;

  const best: ScoredId[] = [];
  /** Could a document whose score is at most `bound` still enter the top k? */
  const canEnter = (bound: number): boolean => best.length < k || bound * BOUND_SLACK >= best[k - 1]!.score;
  const seen = new Set<string>();

  /**
   * Documents first met in list `p` (with that term's score), looked up in the later lists
   * while they can still enter; the sum runs in query-term order, as the exhaustive scorer's.
   */
  function* scoreChunk(chunk: readonly string[], partial: number[], p: number): Generator<PostingRead, void, PostingColumns> {
    const ti = order[p]!;
    // contributions[j * n + i]: what query term i adds to chunk[j] (0: absent); `partial`
    // starts as list p's scores and gathers the later terms' (the caller hands it over).
    const contributions = new Float64Array(chunk.length * n);
    for (let j = 0; j < chunk.length; j++) contributions[j * n + ti] = partial[j]!;
    let alive = chunk.map((_, j) => j);
    for (let q = p + 1; q < n && alive.length > 0; q++) {
      alive = alive.filter((j) => canEnter(partial[j]! + rest[q]!));
      if (alive.length === 0) break;
      const tq = order[q]!;
      const docIds = alive.map((j) => chunk[j]!);
      const found = yield { kind: 'lookup', term: terms[tq]!.term, docIds };
      alive.forEach((j, a) => {
        const tf = found.tfs[a]!;
        if (tf === 0) return;
        const c = termScore(idfs[tq]!, tf, found.docLengths[a]!, avgdl, params);
        contributions[j * n + tq] = c;
        partial[j] = partial[j]! + c;
      });
    }
    for (const j of alive) {
      let score = 0;
      for (let i = 0; i < n; i++) score += contributions[j * n + i]!;
      if (score > 0) insertBest(best, { id: chunk[j]!, score }, k);
    }
  }

  for (let p = 0; p < n; p++) {
    if (!canEnter(rest[p]!)) break;
    const ti = order[p]!;
    const idfT = idfs[ti]!;
    const { docIds, tfs, docLengths } = yield { kind: 'list', term: terms[ti]!.term };
    // A later list skips what this one scored; the last list needs no memory of it.
    const remember = p + 1 < n;
    const afterThis = rest[p + 1]!;
    let chunk: string[] = [];
    let scores: number[] = [];
    for (let i = 0; i < tfs.length; i++) {
      const tf = tfs[i]!;
      if (tf === 0) continue;
      const score = termScore(idfT, tf, docLengths[i]!, avgdl, params);
      // Even with every later term at its bound it stays out (the k-th best only rises).
      if (!canEnter(score + afterThis)) continue;
      const docId = docIds[i]!;
      if (p > 0 && seen.has(docId)) continue;
      if (remember) seen.add(docId);
      if (!remember) {
        // The last list: a new document here holds none of the other terms (each earlier
        // list marked its documents seen), so this term's score is its whole score.
        if (score > 0) insertBest(best, { id: docId, score }, k);
        continue;
      }
      chunk.push(docId);
      scores.push(score);
      if (chunk.length === CHUNK_DOCS) {
        yield* scoreChunk(chunk, scores, p);
        chunk = [];
        scores = [];
      }
    }
    if (chunk.length > 0) yield* scoreChunk(chunk, scores, p);
  }
  return best;
}

/** Adds `item` to the sorted window `best` of at most k items (the `topK` insertion). */
export function insertBest(best: ScoredId[], item: ScoredId, k: number): void {
  if (best.length === k && byScoreThenId(item, best[k - 1]!) >= 0) return;
  let lo = 0;
  let hi = best.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byScoreThenId(best[mid]!, item) <= 0) lo = mid + 1;
    else hi = mid;
  }
  best.splice(lo, 0, item);
  if (best.length > k) best.pop();
}

/** Widens a bound by one posting (a write adding it). */
export function widenBound(bound: TermBound | undefined, tf: number, docLength: number): TermBound {
  if (bound === undefined) return { df: 1, tfMax: tf, docLengthMin: docLength };
  return { df: bound.df + 1, tfMax: Math.max(bound.tfMax, tf), docLengthMin: Math.min(bound.docLengthMin, docLength) };
}

/** The exact bound of a full posting list. */
export function exactBound(list: PostingColumns): TermBound {
  let tfMax = 0;
  let docLengthMin = Number.POSITIVE_INFINITY;
  for (let i = 0; i < list.tfs.length; i++) {
    if (list.tfs[i]! > tfMax) tfMax = list.tfs[i]!;
    if (list.docLengths[i]! < docLengthMin) docLengthMin = list.docLengths[i]!;
  }
  return { df: list.tfs.length, tfMax, docLengthMin };
}
