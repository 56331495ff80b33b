// Scores by metric, the exact distances used when the filtered set is small, and vector
// validation. Pure. Every score is "higher is more similar":
//   cosine  score = cos(a, b) = 1 - cosine distance           in [-1, 1]
//   ip      score = a . b     = 1 - usearch's ip distance      unbounded
//   l2      score = 1 / (1 + |a - b|)   (Euclidean, not squared) in (0, 1]
import { FirkinError } from '../core/errors.js';
import type { Metric } from './collection-config.js';
import { describe } from './collection-config.js';

/** Largest finite float32: a bigger double would become Infinity once stored. */
export const FLOAT32_MAX = 3.4028234663852886e38;

/** The distance an ANN engine reports -> the score users see. */
export function scoreFromDistance(metric: Metric, distance: number): number {
  switch (metric) {
    case 'cosine':
    case 'ip':
      return 1 - distance;
    case 'l2':
      return 1 / (1 + Math.sqrt(Math.max(0, distance)));
  }
}

/** Exact score of two vectors, consistent with scoreFromDistance over the ANN distances. */
export function exactScore(metric: Metric, a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
    const d = x - y;
    l2 += d * d;
  }
  switch (metric) {
    case 'cosine':
      return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
    case 'ip':
      return dot;
    case 'l2':
      return 1 / (1 + Math.sqrt(l2));
  }
}

/** Checks a client vector (length, finite float32 values, non-zero for cosine). */
export function parseVector(value: unknown, dimensions: number, metric: Metric, where = 'vector'): Float32Array {
  if (!Array.isArray(value)) throw new FirkinError('bad_request', `${where} must be an array of ${dimensions} numbers, got ${describe(value)}`);
  if (value.length !== dimensions) {
    throw new FirkinError('bad_request', `${where} has ${value.length} numbers; this collection has ${dimensions} dimensions`);
  }
  const out = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const x = value[i];
    if (typeof x !== 'number' || !Number.isFinite(x) || Math.abs(x) > FLOAT32_MAX) {
      throw new FirkinError('bad_request', `${where}[${i}] must be a finite number, got ${describe(x)}`);
    }
    out[i] = x;
    norm += x * x;
  }
  if (metric === 'cosine' && norm === 0) throw new FirkinError('bad_request', `${where} is all zeros: cosine similarity needs a non-zero vector`);
  return out;
}

/** Same checks for a vector an embedder returned: a failure is the embedder's, not the client's. */
export function checkEmbedding(vector: Float32Array, dimensions: number, metric: Metric): string | undefined {
  if (vector.length !== dimensions) return `the embedder returned ${vector.length} dimensions; the collection has ${dimensions}`;
  let norm = 0;
  for (const x of vector) {
    if (!Number.isFinite(x)) return 'the embedder returned a non-finite number';
    norm += x * x;
  }
  if (metric === 'cosine' && norm === 0) return 'the text has no words to embed (the embedding is all zeros)';
  return undefined;
}
