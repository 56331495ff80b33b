// The BM25 corpus, generated deterministically (bench/text.ts, bench/text-profile.ts):
// documents of 8 to 40 words drawn from a Zipf distribution (vocabulary 50,000, s = 1.07) and
// queries of 1 to 3 distinct words from the same distribution, the 20 most common excluded.
import { mulberry32 } from '../test/vector/clustered.js';

const VOCABULARY = 50_000;
const ZIPF_S = 1.07;
const WORDS_MIN = 8;
const WORDS_MAX = 40;
const QUERY_TERMS_MAX = 3;
const COMMON_EXCLUDED = 20;
/** Seed of the corpus; the queries use SEED + 1. */
export const SEED = 42;

/** Draws word ranks (0 = most common) with P(r) proportional to 1 / (r + 1)^s. */
function zipfSampler(rand: () => number): () => number {
  const cdf = new Float64Array(VOCABULARY);
  let sum = 0;
  for (let r = 0; r < VOCABULARY; r++) cdf[r] = sum += 1 / (r + 1) ** ZIPF_S;
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = VOCABULARY - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const word = (rank: number) => `w${rank.toString(36)}`;

export function textCorpus(count: number, seed: number): string[] {
  const rand = mulberry32(seed);
  const rank = zipfSampler(rand);
  return Array.from({ length: count }, () => Array.from({ length: WORDS_MIN + Math.floor(rand() * (WORDS_MAX - WORDS_MIN + 1)) }, () => word(rank())).join(' '));
}

export function textQueries(count: number, seed: number): string[] {
  const rand = mulberry32(seed);
  const rank = zipfSampler(rand);
  return Array.from({ length: count }, () => {
    const terms = new Set<string>();
    const want = 1 + Math.floor(rand() * QUERY_TERMS_MAX);
    while (terms.size < want) {
      const r = rank();
      if (r >= COMMON_EXCLUDED) terms.add(word(r));
    }
    return [...terms].join(' ');
  });
}

