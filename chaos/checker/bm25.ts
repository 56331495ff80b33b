// Checker of the set workload's keyword index. Every element's document has the text
// `<element> <bucket>` (`elementText`): two tokens, each once, so every document is two tokens
// long and a keyword's score depends only on the corpus's statistics. After the final reads,
// each node searches its replicas (`consistency: stale`) for bucket tokens and some elements'
// own tokens. Pure: what each node read and found in, anomalies and figures out.
//
// The index is held to the node's own final read of the set (its stored records), not to the
// history (the set checker judges that): a search for a token must find exactly the present
// documents holding it, each scored by Lucene's formula over the present documents alone.
// With N present documents, df of them holding the token, tf 1 and every length equal to the
// average (2), a term's score is its idf: ln(1 + (N - df + 0.5) / (df + 0.5)). So:
//
// - missing: a present document holding the token was not found (a lost posting, or a replica
//   whose index was not rebuilt after a snapshot, a restart or a reshard's copy);
// - extra: a document found that the node does not hold, or that lacks the token (a deleted
//   document's postings left behind);
// - score: a hit scored otherwise than the present documents' statistics give (N or df
//   counting documents that are gone, or missing ones);
// - no-answer: the node never answered the search.
//
// The same searches go through hybrid search too (`via: 'hybrid'`, with every document's
// vector as the query vector and the vector list's weight 0): a hit's keyword score is its
// `bm25_score`, null for a document only the vector list brought; such a hit must still be a
// document the node holds (a vector index keeping a deleted document is `extra` as well).
import type { SetElement } from './history.js';
import { EXAMPLES } from './listing.js';

/** Elements per bucket token: below the search's k limit (1000), so one search lists a bucket. */
export const BM25_BUCKET_SIZE = 500;
/** The set workload names its elements `e<n>`, n from 1. */
const ELEMENT_RE = /^e(\d+)$/;

export function bucketToken(element: string): string {
  const m = ELEMENT_RE.exec(element);
  if (m === null) throw new Error(`not a set element: ${JSON.stringify(element)}`);
  return `b${Math.floor(Number(m[1]) / BM25_BUCKET_SIZE)}`;
}

/** The text of an element's document: its own token and its bucket's. */
export function elementText(element: string): string {
  return `${element} ${bucketToken(element)}`;
}

export interface Bm25Hit {
  readonly id: string;
  /** The keyword score; null: not among the keyword list's candidates (a hybrid hit the vector list brought). */
  readonly score: number | null;
}

export interface Bm25Search {
  /** One token: a bucket's or an element's. */
  readonly query: string;
  readonly k: number;
  /** Undefined: `search/bm25`. */
  readonly via?: 'hybrid';
  /** Undefined: the node never answered. */
  readonly hits?: readonly Bm25Hit[];
}

export interface Bm25NodeRead {
  readonly node: string;
  /** The node's final read of the set (the set checker's), or undefined when it had none. */
  readonly present: readonly SetElement[] | undefined;
  readonly searches: readonly Bm25Search[];
}

export interface Bm25Anomaly {
  readonly type: 'missing' | 'extra' | 'score' | 'no-answer';
  readonly node: string;
  readonly query: string;
  /** Up to EXAMPLES of the documents concerned. */
  readonly elements: readonly string[];
  readonly count: number;
  readonly detail: string;
}

export interface Bm25Check {
  readonly ok: boolean;
  readonly anomalies: readonly Bm25Anomaly[];
  /** Searches judged (answered, on a node with a final read), and their hits. */
  readonly searches: number;
  readonly hits: number;
}

export interface Bm25Params {
  readonly k1: number;
  readonly b: number;
}

/** The parameters the runner creates the collection with, and the checker scores by. */
export const CHAOS_BM25_PARAMS: Bm25Params = { k1: 1.2, b: 0.75 };

/** Scores are sums of float64s in another order on the node: equal within this relative error. */
const SCORE_TOLERANCE = 1e-9;

/** Lucene's term score for tf 1 in a document of the average length: the idf times (k1 + 1) / (1 + k1). */
export function expectedScore(present: number, df: number, p: Bm25Params): number {
  const idf = Math.log(1 + (present - df + 0.5) / (df + 0.5));
  return (idf * (p.k1 + 1)) / (1 + p.k1);
}

function tokensOf(element: string): string[] {
  return [element, bucketToken(element)];
}

export function checkBm25(reads: readonly Bm25NodeRead[], params: Bm25Params): Bm25Check {
  const anomalies: Bm25Anomaly[] = [];
  let searches = 0;
  let hits = 0;
  for (const read of reads) {
    if (read.present === undefined) continue; // no final read: nothing to hold the index to
    const present = read.present.map(String);
    const held = new Set(present);
    const holding = new Map<string, Set<string>>();
    for (const e of present) {
      for (const token of tokensOf(e)) {
        let set = holding.get(token);
        if (set === undefined) holding.set(token, (set = new Set()));
        set.add(e);
      }
    }
    for (const s of read.searches) {
      const report = (type: Bm25Anomaly['type'], elements: readonly string[], detail: string) =>
        anomalies.push({ type, node: read.node, query: s.query, elements: elements.slice(0, EXAMPLES), count: elements.length, detail });
      if (s.hits === undefined) {
        report('no-answer', [], `${read.node} did not answer the search for ${JSON.stringify(s.query)}`);
        continue;
      }
      searches++;
      hits += s.hits.length;
      const how = s.via === undefined ? '' : ` through ${s.via} search`;
      const expected = holding.get(s.query) ?? new Set<string>();
      const keyword = s.hits.filter((h): h is Bm25Hit & { score: number } => h.score !== null);
      const found = new Set(keyword.map((h) => h.id));
      const extra = [...found].filter((id) => !expected.has(id));
      if (extra.length > 0) report('extra', extra, `found ${extra.length} documents for ${JSON.stringify(s.query)}${how} that ${read.node}'s final read does not hold with that token`);
      const gone = s.hits.filter((h) => h.score === null && !held.has(h.id)).map((h) => h.id);
      if (gone.length > 0) report('extra', gone, `the vector list of a search for ${JSON.stringify(s.query)}${how} brought ${gone.length} documents ${read.node}'s final read does not hold`);
      // A search returns its best k: with more documents holding the token, any k of them do.
      const missing = [...expected].filter((id) => !found.has(id));
      const shortBy = Math.min(expected.size, s.k) - (found.size - extra.length);
      if (missing.length > 0 && shortBy > 0) report('missing', missing, `${missing.length} of ${expected.size} present documents holding ${JSON.stringify(s.query)} not found${how} (k ${s.k})`);
      const score = expectedScore(present.length, expected.size, params);
      const off = keyword.filter((h) => expected.has(h.id) && !(Math.abs(h.score - score) <= SCORE_TOLERANCE * Math.max(1, Math.abs(score))));
      if (off.length > 0) report('score', off.map((h) => h.id), `scored ${off[0]!.score}, not ${score} (N ${present.length}, df ${expected.size}: the index's statistics are not those of the documents it holds)`);
    }
  }
  return { ok: anomalies.length === 0, anomalies, searches, hits };
}
