// The vector engine's typed inputs. A route (or the gateway) checks a body against its JSON
// schema (`http/routes/vector.ts`), then one of the functions below fills in every default, so
// a request is complete: it means the same on whichever node handles it. These are the
// requests the cluster forwards to a shard's leader; the checks that need the collection
// (a vector's length, an embedder being there) are the engine's. Pure.
import { FirkinError } from '../core/errors.js';
import {
  type CollectionConfig,
  DEFAULTS,
  LIMITS,
  type EmbedderConfig,
  type EmbedderType,
  type Fusion,
  type IndexPrecision,
  type Bm25Backend,
  type Metric,
  type StopwordSet,
} from './collection-config.js';
import { type Filter, parseFilter } from './filter.js';
import { jsonValueProblem } from '../core/values.js';

// ---- bodies, as their schemas admit them ----

export interface EmbedderBody {
  readonly type: EmbedderType;
  readonly url?: string;
  readonly model?: string;
  readonly timeout_ms?: number;
  readonly batch_size?: number;
  readonly retries?: number;
}

export interface CollectionBody {
  readonly dimensions: number;
  readonly num_shards?: number;
  readonly replication_factor?: number;
  readonly metric?: Metric;
  readonly index?: { readonly m?: number; readonly ef_construction?: number; readonly ef_search?: number; readonly precision?: IndexPrecision } | null;
  readonly embedder?: EmbedderBody | null;
  readonly bm25_backend?: Bm25Backend;
  readonly bm25?: { readonly k1?: number; readonly b?: number; readonly stopwords?: StopwordSet | readonly string[] } | null;
}

export interface DocBody {
  readonly id: string;
  readonly text?: string | null;
  readonly metadata?: Record<string, unknown> | null;
  readonly vector?: readonly number[] | null;
}

/**
 * How fresh a read must be on a replicated collection: `linearizable` (default) asks the
 * shard leader to confirm its leadership first; `stale` takes any replica, the local one
 * first, and answers even where no majority is reachable (the spec's minority reads).
 * Standalone, every read is both.
 */
export const CONSISTENCIES = ['linearizable', 'stale'] as const;
export type Consistency = (typeof CONSISTENCIES)[number];

export interface SearchBody {
  readonly consistency?: Consistency;
  readonly vector?: readonly number[] | null;
  readonly query?: string;
  readonly k?: number;
  readonly ef?: number;
  readonly filter?: Record<string, unknown> | null;
  readonly with_payload?: boolean;
}

export interface ScrollBody {
  readonly consistency?: Consistency;
  readonly limit?: number;
  readonly offset?: string;
  readonly filter?: Record<string, unknown> | null;
  readonly include_vector?: boolean;
}

export interface Bm25SearchBody {
  readonly consistency?: Consistency;
  readonly query: string;
  readonly k?: number;
}

export interface HybridSearchBody {
  readonly consistency?: Consistency;
  readonly query: string;
  readonly vector?: readonly number[] | null;
  readonly k?: number;
  readonly ef?: number;
  readonly bm25_weight?: number;
  readonly vector_weight?: number;
  readonly fusion?: Fusion;
}

// ---- requests ----

export interface CreateCollectionRequest {
  readonly collection: string;
  readonly config: CollectionConfig;
}

/** One document; without a vector its text is embedded (once, before it is written). */
export interface DocRequest {
  readonly id: string;
  readonly text: string;
  readonly metadata: Record<string, unknown>;
  readonly vector: readonly number[] | undefined;
}

export interface PutDocsRequest {
  readonly collection: string;
  readonly docs: readonly DocRequest[];
}

export interface SearchRequest {
  readonly collection: string;
  /** Wins over `query` when both are given. */
  readonly vector: readonly number[] | undefined;
  readonly query: string | undefined;
  readonly k: number;
  /** Beam width; undefined: the collection's `index.ef_search`. */
  readonly ef: number | undefined;
  readonly filter: Filter | undefined;
  readonly consistency: Consistency;
  /** false: hits are `{id, score}` only (Qdrant's `with_payload: false`); default true. */
  readonly withPayload: boolean;
}

export interface ScrollRequest {
  readonly collection: string;
  /** The id the page starts at (inclusive); undefined: the first. */
  readonly offset: string | undefined;
  readonly limit: number;
  readonly filter: Filter | undefined;
  readonly withVector: boolean;
  readonly consistency: Consistency;
}

/** Qdrant's scroll page size when none is given. */
export const SCROLL_LIMIT_DEFAULT = 10;

export interface Bm25SearchRequest {
  readonly collection: string;
  readonly query: string;
  readonly k: number;
  readonly consistency: Consistency;
}

export interface HybridSearchRequest {
  readonly collection: string;
  readonly query: string;
  /** The vector side's query; undefined: the collection's embedder embeds `query`. */
  readonly vector: readonly number[] | undefined;
  readonly k: number;
  readonly ef: number | undefined;
  readonly bm25Weight: number;
  readonly vectorWeight: number;
  readonly fusion: Fusion;
  readonly consistency: Consistency;
}

const HYBRID_WEIGHT_DEFAULT = 0.5;

/** An http(s) base URL without query or fragment, trailing slashes dropped. */
function embedderUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '') {
    throw new FirkinError('bad_request', `embedder.url must be an http(s) URL without query or fragment, got ${JSON.stringify(value)}`);
  }
  return value.replace(/\/+$/, '');
}

export function embedderConfig(body: EmbedderBody): EmbedderConfig {
  if (body.type === 'hash') return { type: 'hash' };
  const ollama = body.type === 'ollama';
  return {
    type: body.type,
    url: embedderUrl(body.url ?? (ollama ? DEFAULTS.ollamaUrl : DEFAULTS.openaiUrl)),
    model: body.model ?? (ollama ? DEFAULTS.ollamaModel : DEFAULTS.openaiModel),
    timeout_ms: body.timeout_ms ?? DEFAULTS.embedderTimeoutMs,
    batch_size: body.batch_size ?? DEFAULTS.embedderBatchSize,
    retries: body.retries ?? DEFAULTS.embedderRetries,
  };
}

function stopwords(value: StopwordSet | readonly string[] | undefined): StopwordSet | readonly string[] {
  if (value === undefined) return 'none';
  return typeof value === 'string' ? value : [...new Set(value.map((w) => w.toLowerCase()))];
}

/** What a create request leaves out and the node's settings decide (`SERVICE_REPLICATION_FACTOR`). */
export interface CollectionDefaults {
  readonly replicationFactor: number;
}

export function createCollectionRequest(collection: string, body: CollectionBody, defaults: CollectionDefaults = { replicationFactor: DEFAULTS.replicationFactor }): CreateCollectionRequest {
  // The schema allows 0..mMax: a graph needs two links a node; 0 is no graph (a flat index).
  if (body.index?.m === 1) throw new FirkinError('bad_request', `index.m must be 0 (no graph: every vector search is exact, a flat index) or 2 to ${LIMITS.mMax}, got 1`);
  return {
    collection,
    config: {
      dimensions: body.dimensions,
      num_shards: body.num_shards ?? DEFAULTS.numShards,
      replication_factor: body.replication_factor ?? defaults.replicationFactor,
      metric: body.metric ?? DEFAULTS.metric,
      index: {
        m: body.index?.m ?? DEFAULTS.m,
        ef_construction: body.index?.ef_construction ?? DEFAULTS.efConstruction,
        ef_search: body.index?.ef_search ?? DEFAULTS.efSearch,
        precision: body.index?.precision ?? DEFAULTS.indexPrecision,
      },
      embedder: body.embedder === undefined || body.embedder === null ? null : embedderConfig(body.embedder),
      bm25_backend: body.bm25_backend ?? 'none',
      bm25: { k1: body.bm25?.k1 ?? DEFAULTS.k1, b: body.bm25?.b ?? DEFAULTS.b, stopwords: stopwords(body.bm25?.stopwords) },
    },
  };
}

export function docRequest(body: DocBody): DocRequest {
  const metadata = body.metadata ?? {};
  const problem = jsonValueProblem(metadata, LIMITS.metadataDepthMax, 'metadata');
  if (problem !== undefined) throw new FirkinError('bad_request', problem);
  return { id: body.id, text: body.text ?? '', metadata, vector: body.vector ?? undefined };
}

export function searchRequest(collection: string, body: SearchBody): SearchRequest {
  return {
    collection,
    vector: body.vector ?? undefined,
    query: body.query,
    k: body.k ?? DEFAULTS.k,
    ef: body.ef,
    filter: parseFilter(body.filter),
    consistency: body.consistency ?? 'linearizable',
    withPayload: body.with_payload ?? true,
  };
}

export function scrollRequest(collection: string, body: ScrollBody): ScrollRequest {
  return {
    collection,
    offset: body.offset,
    limit: body.limit ?? SCROLL_LIMIT_DEFAULT,
    filter: parseFilter(body.filter),
    withVector: body.include_vector === true,
    consistency: body.consistency ?? 'linearizable',
  };
}

export function bm25SearchRequest(collection: string, body: Bm25SearchBody): Bm25SearchRequest {
  return { collection, query: body.query, k: body.k ?? DEFAULTS.k, consistency: body.consistency ?? 'linearizable' };
}

export function hybridSearchRequest(collection: string, body: HybridSearchBody): HybridSearchRequest {
  return {
    collection,
    query: body.query,
    vector: body.vector ?? undefined,
    k: body.k ?? DEFAULTS.k,
    ef: body.ef,
    bm25Weight: body.bm25_weight ?? HYBRID_WEIGHT_DEFAULT,
    vectorWeight: body.vector_weight ?? HYBRID_WEIGHT_DEFAULT,
    fusion: body.fusion ?? 'rrf',
    consistency: body.consistency ?? 'linearizable',
  };
}
