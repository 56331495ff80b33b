// A collection's configuration: the one list of metrics, BM25 backends and embedder types,
// their defaults and limits. Pure: no I/O. Requests are checked by their schemas
// (`http/routes/vector.ts`) and completed in `requests.ts`.
import { isPlainObject } from '../core/values.js';

export const METRICS = ['cosine', 'l2', 'ip'] as const;
export type Metric = (typeof METRICS)[number];

/**
 * How the HNSW index keeps its vectors (the records always keep them as float32): `f16` halves
 * the index's memory and searches faster with the same hits at the usual beam widths
 * (docs/benchmarks.md); `f32` keeps the index's distances, hence scores, exact.
 */
export const INDEX_PRECISIONS = ['f32', 'f16'] as const;
export type IndexPrecision = (typeof INDEX_PRECISIONS)[number];
export const BM25_BACKENDS = ['none', 'memory', 'disk'] as const;
export type Bm25Backend = (typeof BM25_BACKENDS)[number];
export const EMBEDDER_TYPES = ['hash', 'ollama', 'openai'] as const;
export type EmbedderType = (typeof EMBEDDER_TYPES)[number];
export const STOPWORD_SETS = ['none', 'english'] as const;
export type StopwordSet = (typeof STOPWORD_SETS)[number];
export const FUSIONS = ['rrf', 'linear'] as const;
export type Fusion = (typeof FUSIONS)[number];

export const LIMITS = {
  dimensionsMax: 4096,
  shardsMax: 1024,
  replicationFactorMax: 9,
  kMax: 1000,
  efMax: 4096,
  mMax: 256,
  efConstructionMax: 4096,
  nameLengthMax: 200,
  docIdLengthMax: 1024,
  /** A document's metadata: nesting, as a database document's. */
  metadataDepthMax: 64,
  batchDocsMax: 10_000,
  /** Searches in one `search/batch` request. */
  searchBatchMax: 100,
  stopwordsMax: 10_000,
  stopwordCharsMax: 100,
  k1Max: 100,
  embedderModelCharsMax: 200,
  embedderUrlCharsMax: 2048,
  embedderTimeoutMsMax: 600_000,
  embedderBatchSizeMax: 2048,
  embedderRetriesMax: 10,
} as const;

export const DEFAULTS = {
  numShards: 4,
  replicationFactor: 2,
  metric: 'cosine' as Metric,
  m: 16,
  efConstruction: 200,
  /** For new collections; one stored without a precision (created before it existed) is f32. */
  indexPrecision: 'f16' as IndexPrecision,
  /** The beam width of a search is max(k, efSearch) unless the query or the collection says otherwise. */
  efSearch: 64,
  k: 10,
  k1: 1.2,
  b: 0.75,
  embedderTimeoutMs: 30_000,
  embedderBatchSize: 32,
  embedderRetries: 2,
  ollamaUrl: 'http://localhost:11434',
  ollamaModel: 'nomic-embed-text',
  openaiUrl: 'https://api.openai.com',
  openaiModel: 'text-embedding-3-small',
} as const;

export type EmbedderConfig =
  | { readonly type: 'hash' }
  | {
      readonly type: 'ollama' | 'openai';
      readonly url: string;
      readonly model: string;
      readonly timeout_ms: number;
      readonly batch_size: number;
      readonly retries: number;
    };

export interface CollectionConfig {
  readonly dimensions: number;
  readonly num_shards: number;
  readonly replication_factor: number;
  readonly metric: Metric;
  readonly index: { readonly m: number; readonly ef_construction: number; readonly ef_search: number; readonly precision?: IndexPrecision };
  readonly embedder: EmbedderConfig | null;
  readonly bm25_backend: Bm25Backend;
  readonly bm25: { readonly k1: number; readonly b: number; readonly stopwords: StopwordSet | readonly string[] };
}

/**
 * Collection names: the schema pattern of every route that takes one. Not `__proto__`: CBOR
 * (cbor-x) decodes a map key of that name as `__proto_`, so a cluster's metadata snapshot would
 * rename the collection.
 */
export const COLLECTION_NAME_PATTERN = '^(?!__proto__$)[A-Za-z0-9_][A-Za-z0-9_.-]*$';

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return `${typeof value} ${text.length > 40 ? `${text.slice(0, 40)}...` : text}`;
}
