// The exhaustive BM25 oracle the tests compare ranked answers with: every posting of every
// query term over a whole corpus (id -> text), scored by `rankBm25` with the default k1 and b.
import { type Posting, type ScoredId, rankBm25, termFrequencies } from '../../src/vector/bm25.js';
import { tokenize } from '../../src/vector/tokenize.js';

export const DEFAULT_BM25 = { k1: 1.2, b: 0.75 };

/** Each distinct query term's full posting list over `corpus`, and the corpus statistics. */
export function fullPostings(corpus: ReadonlyMap<string, string>, query: string) {
  const byTerm = new Map<string, Posting[]>();
  let totalLength = 0;
  const docs = [...corpus].map(([id, text]) => {
    const tokens = tokenize(text);
    totalLength += tokens.length;
    return { id, length: tokens.length, tf: termFrequencies(tokens) };
  });
  for (const term of new Set(tokenize(query))) {
    const list = docs.filter((d) => d.tf.has(term)).map((d) => ({ docId: d.id, tf: d.tf.get(term)!, docLength: d.length }));
    if (list.length > 0) byTerm.set(term, list);
  }
  return { byTerm, stats: { docCount: corpus.size, totalLength } };
}

/** The exact top `k` of `query` over `corpus`, as one index over all of it ranks them. */
export function exactBm25(corpus: ReadonlyMap<string, string>, query: string, k: number): ScoredId[] {
  const { byTerm, stats } = fullPostings(corpus, query);
  return rankBm25(byTerm, stats, DEFAULT_BM25, k);
}
