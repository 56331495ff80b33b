// BM25 scoring (Lucene's formula). Pure: postings come in as plain arrays, scores go out.
//   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))            never negative
//   score(t, d) = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
//   score(d)    = sum over the distinct query terms present in d
// avgdl = total tokens / N. Documents scoring 0 are left out (they match no query term).

export interface Bm25Params {
  readonly k1: number;
  readonly b: number;
}

export interface CorpusStats {
  /** Documents in the corpus. */
  readonly docCount: number;
  /** Sum of all document lengths in tokens. */
  readonly totalLength: number;
}

/**
 * What one shard holds of a query's statistics: its corpus and each query term's df (0 when
 * absent). Summed over a collection's shards (`sumQueryStats`) they are the collection's, so
 * every shard scores with the same idf and avgdl as one index over all of it would.
 */
export interface QueryStats extends CorpusStats {
  readonly df: Readonly<Record<string, number>>;
}

export function sumQueryStats(parts: readonly QueryStats[]): QueryStats {
  let docCount = 0;
  let totalLength = 0;
  const df: Record<string, number> = {};
  for (const p of parts) {
    docCount += p.docCount;
    totalLength += p.totalLength;
    for (const [term, n] of Object.entries(p.df)) df[term] = (df[term] ?? 0) + n;
  }
  return { docCount, totalLength, df };
}

export interface Posting {
  readonly docId: string;
  readonly tf: number;
  /** Length of the document in tokens. */
  readonly docLength: number;
}

export interface ScoredId {
  readonly id: string;
  readonly score: number;
}

export function idf(docCount: number, df: number): number {
  return Math.log(1 + (docCount - df + 0.5) / (df + 0.5));
}

export function termScore(idfValue: number, tf: number, docLength: number, avgdl: number, params: Bm25Params): number {
  const norm = avgdl > 0 ? docLength / avgdl : 0;
  return (idfValue * tf * (params.k1 + 1)) / (tf + params.k1 * (1 - params.b + params.b * norm));
}

/** Term frequencies of a token list. */
export function termFrequencies(tokens: readonly string[]): Map<string, number> {
  const tf = new Map<string, number>();
  for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
  return tf;
}

/** Orders by score descending, then id ascending so equal scores come back in a stable order. */
export function byScoreThenId(a: ScoredId, b: ScoredId): number {
  return b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Scores every document that contains at least one query term and returns the best `k`.
 * `postingsByTerm` holds, per distinct query term, all of its postings (df = its length).
 */
export function rankBm25(
  postingsByTerm: ReadonlyMap<string, readonly Posting[]>,
  stats: CorpusStats,
  params: Bm25Params,
  k: number,
): ScoredId[] {
  if (stats.docCount === 0) return [];
  const avgdl = stats.totalLength / stats.docCount;
  const scores = new Map<string, number>();
  for (const postings of postingsByTerm.values()) {
    if (postings.length === 0) continue;
    const w = idf(stats.docCount, postings.length);
    for (const p of postings) scores.set(p.docId, (scores.get(p.docId) ?? 0) + termScore(w, p.tf, p.docLength, avgdl, params));
  }
  const out: ScoredId[] = [];
  for (const [id, score] of scores) if (score > 0) out.push({ id, score });
  return topK(out, k);
}

/**
 * The best `k` of `items` by byScoreThenId, best first. Keeps a sorted window of k and
 * rejects most items with one comparison: O(n + k log k)-ish instead of sorting all n, which
 * matters when a common term matches most of the corpus.
 */
export function topK<T extends ScoredId>(items: readonly T[], k: number): T[] {
  if (items.length <= k) return [...items].sort(byScoreThenId);
  const best: T[] = [];
  for (const item of items) {
    if (best.length === k && byScoreThenId(item, best[k - 1]!) >= 0) continue;
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
  return best;
}
