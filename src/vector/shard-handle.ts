// What the engine asks of a shard, wherever it lives: a local `Shard` (standalone) or a
// replicated shard reached through its Raft group's leader (`cluster/vector-shards.ts`).
// The engine's code path is the same for both: it decides everything (ids, vectors) and
// hands each shard its part.
import type { QueryStats, ScoredId } from './bm25.js';
import type { CollectionConfig } from './collection-config.js';
import type { IdRouting } from '../core/shard-hash.js';
import type { Filter } from './filter.js';
import type { DocInput, StoredDoc, VectorHit } from './shard.js';

/** `stale`: any replica may answer from what it applied (see `Consistency` in requests.ts). */
export interface ReadOptions {
  readonly stale?: boolean;
}

/** `collection`: the query's statistics summed over the collection's shards, to rank with. */
export interface Bm25Options extends ReadOptions {
  readonly collection?: QueryStats;
}

/** A page of a scroll: documents whose metadata passes `filter`, with their vectors when `vectors`. */
export interface ScrollOptions extends ReadOptions {
  readonly filter?: Filter;
  readonly vectors?: boolean;
}

/** A document as a scroll lists it: the vector only when asked for. */
export interface ScrolledDoc {
  readonly id: string;
  readonly text: string;
  readonly metadata: Record<string, unknown>;
  readonly vector?: Float32Array;
}

/** `payload: false`: hits carry id and score only (no record is read for them). */
export interface SearchOptions extends ReadOptions {
  readonly payload?: boolean;
}

export interface ShardHandle {
  readonly id: number;
  upsert(docs: readonly DocInput[]): Promise<void>;
  get(id: string, options?: ReadOptions): Promise<StoredDoc | undefined>;
  remove(id: string): Promise<boolean>;
  search(query: Float32Array, k: number, ef: number, filter: Filter | undefined, options?: SearchOptions): Promise<VectorHit[]>;
  searchBm25(query: string, k: number, options?: Bm25Options): Promise<ScoredId[]>;
  /** The shard's part of a BM25 query's statistics (`QueryStats`). */
  bm25Stats(query: string, options?: ReadOptions): Promise<QueryStats>;
  countDocs(options?: ReadOptions): Promise<number>;
  /** Up to `limit` documents from id `from` (inclusive; undefined: the first) in id order. */
  scroll(from: string | undefined, limit: number, options?: ScrollOptions): Promise<ScrolledDoc[]>;
}

/** A collection the cluster holds: its config, routing and one handle per shard. */
export interface ClusteredCollection {
  readonly config: CollectionConfig;
  readonly routing: IdRouting;
  readonly shards: readonly ShardHandle[];
  /** Changes whenever the shard map changes: the engine rebuilds its view then. */
  readonly epoch: number;
}

/** The cluster's collection catalogue (the metadata group), as the engine sees it. */
export interface ClusterCatalogue {
  get(name: string): ClusteredCollection | undefined;
  /** Resolves once this node applied every metadata entry committed before the call (what `get` lacks then does not exist); 503 no_quorum when it cannot. */
  catchUp(): Promise<void>;
  names(): string[];
  create(name: string, config: CollectionConfig): Promise<void>;
  delete(name: string): Promise<void>;
}
