// The built-in embedder: signed feature hashing (the "hashing trick") of word unigrams and
// bigrams into `dimensions` buckets, then L2-normalised. Pure, offline, deterministic: the
// same text always gives the same vector, on every node and version. Texts sharing words get
// a positive cosine, so it behaves like a keyword-ish similarity; useful for tests and as a
// dependency-free default. A text with no words embeds to all zeros.
import { hash32 } from '../../core/shard-hash.js';
import { tokenize } from '../tokenize.js';

const BUCKET_SEED = 0;
const SIGN_SEED = 0x9e3779b9;
/** Bigrams weigh less than unigrams: they refine, the words themselves carry the match. */
const BIGRAM_WEIGHT = 0.5;

function addFeature(out: Float64Array, feature: string, weight: number): void {
  const bucket = hash32(feature, BUCKET_SEED) % out.length;
  const sign = hash32(feature, SIGN_SEED) & 1 ? 1 : -1;
  out[bucket]! += sign * weight;
}

export function hashEmbed(text: string, dimensions: number): Float32Array {
  const acc = new Float64Array(dimensions);
  const tokens = tokenize(text);
  for (let i = 0; i < tokens.length; i++) {
    addFeature(acc, tokens[i]!, 1);
    if (i > 0) addFeature(acc, `${tokens[i - 1]!} ${tokens[i]!}`, BIGRAM_WEIGHT);
  }
  let norm = 0;
  for (const x of acc) norm += x * x;
  const out = new Float32Array(dimensions);
  if (norm === 0) return out;
  const inv = 1 / Math.sqrt(norm);
  for (let i = 0; i < dimensions; i++) out[i] = acc[i]! * inv;
  return out;
}
