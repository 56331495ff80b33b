// A collection's configuration: the one list of metrics, BM25 backends and embedder types,
// their defaults, limits, and the validation of a create request. Pure: no I/O.
import { FirkinError } from '../core/errors.js';

export const METRICS = ['cosine', 'l2', 'ip'] as const;
export type Metric = (typeof METRICS)[number];
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
  batchDocsMax: 10_000,
  stopwordsMax: 10_000,
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
  readonly index: { readonly m: number; readonly ef_construction: number; readonly ef_search: number };
  readonly embedder: EmbedderConfig | null;
  readonly bm25_backend: Bm25Backend;
  readonly bm25: { readonly k1: number; readonly b: number; readonly stopwords: StopwordSet | readonly string[] };
}

const NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

export function validateCollectionName(name: string): void {
  if (name.length === 0 || name.length > LIMITS.nameLengthMax || !NAME_RE.test(name)) {
    throw new FirkinError(
      'bad_request',
      `invalid collection name ${JSON.stringify(name)}: use 1 to ${LIMITS.nameLengthMax} characters from A-Z a-z 0-9 _ . - (not starting with . or -)`,
    );
  }
}

export function validateDocId(id: unknown, where = 'id'): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > LIMITS.docIdLengthMax) {
    throw new FirkinError('bad_request', `${where} must be a string of 1 to ${LIMITS.docIdLengthMax} characters, got ${describe(id)}`);
  }
  return id;
}

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return `${typeof value} ${text.length > 40 ? `${text.slice(0, 40)}...` : text}`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

export function intIn(value: unknown, name: string, min: number, max: number, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new FirkinError('bad_request', `${name} must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

export function numberIn(value: unknown, name: string, min: number, max: number, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new FirkinError('bad_request', `${name} must be a number from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

export function oneOf<T extends string>(values: readonly T[], value: unknown, name: string, fallback?: T): T {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
    throw new FirkinError('bad_request', `${name} must be one of ${values.join(', ')}, got ${describe(value)}`);
  }
  return value as T;
}

function objectOr(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw new FirkinError('bad_request', `${name} must be an object, got ${describe(value)}`);
  return value;
}

function rejectUnknown(obj: Record<string, unknown>, known: readonly string[], where: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) throw new FirkinError('bad_request', `unknown field ${JSON.stringify(key)} in ${where} (known: ${known.join(', ')})`);
  }
}

function httpUrl(value: unknown, name: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value === 'string') {
    try {
      const url = new URL(value);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '') return value.replace(/\/+$/, '');
    } catch {
      // fall through to the error
    }
  }
  throw new FirkinError('bad_request', `${name} must be an http(s) URL without query or fragment, got ${describe(value)}`);
}

export function parseEmbedderConfig(value: unknown): EmbedderConfig | null {
  if (value === undefined || value === null) return null;
  const raw = objectOr(value, 'embedder');
  const type = oneOf(EMBEDDER_TYPES, raw.type, 'embedder.type');
  if (type === 'hash') {
    rejectUnknown(raw, ['type'], 'embedder');
    return { type };
  }
  rejectUnknown(raw, ['type', 'url', 'model', 'timeout_ms', 'batch_size', 'retries'], 'embedder');
  const model = raw.model ?? (type === 'ollama' ? DEFAULTS.ollamaModel : DEFAULTS.openaiModel);
  if (typeof model !== 'string' || model.length === 0 || model.length > 200) {
    throw new FirkinError('bad_request', `embedder.model must be a non-empty string, got ${describe(model)}`);
  }
  return {
    type,
    url: httpUrl(raw.url, 'embedder.url', type === 'ollama' ? DEFAULTS.ollamaUrl : DEFAULTS.openaiUrl),
    model,
    timeout_ms: intIn(raw.timeout_ms, 'embedder.timeout_ms', 1, LIMITS.embedderTimeoutMsMax, DEFAULTS.embedderTimeoutMs),
    batch_size: intIn(raw.batch_size, 'embedder.batch_size', 1, LIMITS.embedderBatchSizeMax, DEFAULTS.embedderBatchSize),
    retries: intIn(raw.retries, 'embedder.retries', 0, LIMITS.embedderRetriesMax, DEFAULTS.embedderRetries),
  };
}

function parseStopwords(value: unknown): StopwordSet | readonly string[] {
  if (value === undefined) return 'none';
  if (Array.isArray(value)) {
    if (value.length > LIMITS.stopwordsMax || !value.every((w) => typeof w === 'string' && w.length > 0 && w.length <= 100)) {
      throw new FirkinError('bad_request', `bm25.stopwords must be "none", "english" or up to ${LIMITS.stopwordsMax} non-empty strings`);
    }
    return [...new Set(value.map((w: string) => w.toLowerCase()))];
  }
  return oneOf(STOPWORD_SETS, value, 'bm25.stopwords');
}

/** Validates a create request body and fills in every default. */
export function parseCollectionConfig(body: unknown): CollectionConfig {
  if (!isPlainObject(body)) throw new FirkinError('bad_request', `the body must be a JSON object, got ${describe(body)}`);
  rejectUnknown(body, ['dimensions', 'num_shards', 'replication_factor', 'metric', 'index', 'embedder', 'bm25_backend', 'bm25'], 'the collection');
  if (body.dimensions === undefined) throw new FirkinError('bad_request', 'dimensions is required (an integer from 1 to 4096)');
  const dimensions = intIn(body.dimensions, 'dimensions', 1, LIMITS.dimensionsMax);
  const index = objectOr(body.index, 'index');
  rejectUnknown(index, ['m', 'ef_construction', 'ef_search'], 'index');
  const bm25 = objectOr(body.bm25, 'bm25');
  rejectUnknown(bm25, ['k1', 'b', 'stopwords'], 'bm25');
  return {
    dimensions,
    num_shards: intIn(body.num_shards, 'num_shards', 1, LIMITS.shardsMax, DEFAULTS.numShards),
    replication_factor: intIn(body.replication_factor, 'replication_factor', 1, LIMITS.replicationFactorMax, DEFAULTS.replicationFactor),
    metric: oneOf(METRICS, body.metric, 'metric', DEFAULTS.metric),
    index: {
      m: intIn(index.m, 'index.m', 2, LIMITS.mMax, DEFAULTS.m),
      ef_construction: intIn(index.ef_construction, 'index.ef_construction', 1, LIMITS.efConstructionMax, DEFAULTS.efConstruction),
      ef_search: intIn(index.ef_search, 'index.ef_search', 1, LIMITS.efMax, DEFAULTS.efSearch),
    },
    embedder: parseEmbedderConfig(body.embedder),
    bm25_backend: oneOf(BM25_BACKENDS, body.bm25_backend, 'bm25_backend', 'none'),
    bm25: {
      k1: numberIn(bm25.k1, 'bm25.k1', 0, 100, DEFAULTS.k1),
      b: numberIn(bm25.b, 'bm25.b', 0, 1, DEFAULTS.b),
      stopwords: parseStopwords(bm25.stopwords),
    },
  };
}
