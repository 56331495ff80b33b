// The built-in embedder: signed feature hashing (the "hashing trick") of word unigrams and
// bigrams into `dimensions` buckets, then L2-normalised. Pure, offline, deterministic: the
// same text always gives the same vector, on every node and version. Texts sharing words get
// a positive cosine, so it behaves like a keyword-ish similarity; useful for tests and as a
// dependency-free default. A text with no words embeds to all zeros. With few dimensions a
// text's signed features can cancel out exactly ("plum fig apple" in 13); such a text is
// embedded again with every sign positive, so a text with words is never the zero vector
// (every other text keeps the vector it always had).
import { hash32 } from '../../core/shard-hash.js';
import { tokenize } from '../tokenize.js';

const BUCKET_SEED = 0;
const SIGN_SEED = 0x9e3779b9;
/** Bigrams weigh less than unigrams: they refine, the words themselves carry the match. */
const BIGRAM_WEIGHT = 0.5;

function addFeature(out: Float64Array, feature: string, weight: number, signed: boolean): void {
  const bucket = hash32(feature, BUCKET_SEED) % out.length;
  const sign = !signed || hash32(feature, SIGN_SEED) & 1 ? 1 : -1;
  out[bucket]! += sign * weight;
}

function accumulate(tokens: readonly string[], dimensions: number, signed: boolean): { acc: Float64Array; norm: number } {
  const acc = new Float64Array(dimensions);
  for (let i = 0; i < tokens.length; i++) {
    addFeature(acc, tokens[i]!, 1, signed);
    if (i > 0) addFeature(acc, `${tokens[i - 1]!} ${tokens[i]!}`, BIGRAM_WEIGHT, signed);
  }
  let norm = 0;
  for (const x of acc) norm += x * x;
  return { acc, norm };
}

export function hashEmbed(text: string, dimensions: number): Float32Array {
  const tokens = tokenize(text);
  let { acc, norm } = accumulate(tokens, dimensions, true);
  if (norm === 0 && tokens.length > 0) ({ acc, norm } = accumulate(tokens, dimensions, false));
  const out = new Float32Array(dimensions);
  if (norm === 0) return out;
  const inv = 1 / Math.sqrt(norm);
  for (let i = 0; i < dimensions; i++) out[i] = acc[i]! * inv;
  return out;
}
