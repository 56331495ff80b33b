// The vector service on one node: the collection catalogue, its shards, embedders, and the
// entry points the HTTP routes and the gateway call, with typed requests (`requests.ts`)
// whose shape their route schemas have checked; what depends on the collection (a vector's
// length, an embedder being there) is checked here.
//
// Catalogue (column family `system`):
//   ['vector', 'collection', name] -> JSON {name, config, shards: [shardId...], routing}
//   ['vector', 'next_shard']       -> JSON number, the next shard id (ids are never reused)
//   ['vector', 'drop', shardId]    -> '' while a deleted collection's shard data is removed
// A standalone collection holds one shard; docs route to shards by a hash of their id
// (`core/shard-hash.ts`), so the code path is the same when the cluster places several. An
// entry without `routing` predates hash ranges: its ids keep their `hash32 % n` places.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { NUMBER, OBJECT, STRING, jsonRecordCodec, objectSchema } from '../core/codec.js';
import { FirkinError, isFirkinError } from '../core/errors.js';
import { decodeKey, encodeKey, prefixRange } from '../core/keys.js';
import { type IdRouting, rangeRouting, routeId } from '../core/shard-hash.js';
import { SerialQueue } from '../core/serial.js';
import type { Store } from '../storage/db.js';
import type { AnnEngine } from './ann/ann-index.js';
import { type ScoredId, byScoreThenId, sumQueryStats } from './bm25.js';
import { type CollectionConfig, LIMITS } from './collection-config.js';
import { type EmbedderDeps, createEmbedder } from './embedders/create.js';
import { type Embedder, noEmbedder } from './embedders/embedder.js';
import { checkEmbedderUrl } from './embedders/http.js';
import type { Filter } from './filter.js';
import { type FusedHit, fuse } from './fusion.js';
import { checkEmbedding, parseVector } from './metric.js';
import type { Bm25SearchRequest, Consistency, CreateCollectionRequest, DocRequest, HybridSearchRequest, PutDocsRequest, ScrollRequest, SearchRequest } from './requests.js';
import { type ScrollPage, mergeScroll } from './scroll.js';
import { type DocInput, type MaintenancePolicy, Shard, type StoredDoc, type ShardCaches, type VectorHit, dropShardData, newShardCaches } from './shard.js';
import type { ClusterCatalogue, ClusteredCollection, ShardHandle } from './shard-handle.js';

export interface VectorEngineOptions {
  store: Store;
  ann: AnnEngine;
  dataDir: string;
  log: Logger;
  embedderDeps: EmbedderDeps;
  /** Upkeep of the index files and graphs (`Shard.maintain`) runs this often (0: never; close saves). */
  saveIntervalMs: number;
  /** When that upkeep checkpoints and compacts (default `MAINTENANCE_DEFAULTS`). */
  maintenance?: MaintenancePolicy;
  /** Cluster mode: new collections are the cluster's (replicated shards placed on nodes). */
  cluster?: ClusterCatalogue;
  /** Shared with the node's replicated shards (default: the engine's own). */
  caches?: ShardCaches;
}

interface CatalogueEntry {
  config: CollectionConfig;
  shards: number[];
  /** Absent in entries written before hash ranges. */
  routing?: IdRouting;
}

const catalogueCodec = jsonRecordCodec<CatalogueEntry & { name: string }>(
  'vector collection record',
  objectSchema({ name: STRING, config: OBJECT, shards: { type: 'array', items: NUMBER } }, { routing: OBJECT }),
);
/** The id the next new shard gets. */
const nextShardCodec = jsonRecordCodec<number>('next shard id', { type: 'integer', minimum: 1 });

/** Attempts of an operation whose shard map a reshard switched under it. */
const STALE_EPOCH_RETRIES = 5;

class Collection {
  readonly #byId: Map<number, ShardHandle>;

  /** `local`: the shards this node holds and keeps (standalone); empty for a clustered collection. */
  constructor(
    readonly name: string,
    readonly config: CollectionConfig,
    readonly shards: readonly ShardHandle[],
    readonly local: readonly Shard[],
    readonly routing: IdRouting,
    readonly embedder: Embedder | undefined,
  ) {
    this.#byId = new Map(shards.map((s) => [s.id, s]));
  }

  get count(): number {
    return this.local.reduce((n, s) => n + s.count, 0);
  }

  shardFor(id: string): ShardHandle {
    const shard = this.#byId.get(routeId(this.routing, id));
    assert.ok(shard !== undefined, `collection ${this.name} routes ${JSON.stringify(id)} to a shard it does not hold`);
    return shard;
  }
}

/** A shard that could not answer a search, by id, with the reason. */
export interface FailedShard {
  shard: number;
  error: string;
  message: string;
}

/** Search results, and the shards missing from them (empty: the answer is complete). */
export interface SearchAnswer<T> {
  results: T[];
  failed: FailedShard[];
}

export interface DocResult {
  id?: string;
  status?: 'created';
  error?: string;
  message?: string;
}

/** A document checked against its collection; `vector` undefined: its text is to be embedded. */
interface CheckedDoc {
  id: string;
  text: string;
  metadata: Record<string, unknown>;
  vector: Float32Array | undefined;
}

const collectionKey = (name: string) => encodeKey(['vector', 'collection', name]);
const NEXT_SHARD_KEY = encodeKey(['vector', 'next_shard']);
const dropKey = (shard: number) => encodeKey(['vector', 'drop', shard]);

/** Candidates each side of a hybrid search fetches: deeper than k so fusion can reorder. */
function hybridDepth(k: number): number {
  return Math.min(LIMITS.kMax * 2, Math.max(k * 3, 50));
}

export class VectorEngine {
  readonly #o: VectorEngineOptions;
  /** Recent hits' payloads and decoded BM25 term lists of every local shard. */
  readonly #caches: ShardCaches;
  readonly #collections = new Map<string, Collection>();
  /** Catalogue changes (create, delete) one at a time. */
  readonly #catalogueQueue = new SerialQueue();
  #saveTimer: NodeJS.Timeout | undefined;
  /** Set when close starts: requests from then on are 503 (the node is stopping). */
  #stopping = false;
  #saveRunning: Promise<void> | undefined;
  readonly indexDir: string;

  private constructor(options: VectorEngineOptions) {
    this.#o = options;
    this.#caches = options.caches ?? newShardCaches();
    this.indexDir = path.join(options.dataDir, 'vector');
  }

  static async open(options: VectorEngineOptions): Promise<VectorEngine> {
    const engine = new VectorEngine(options);
    await engine.#open();
    if (options.saveIntervalMs > 0) {
      engine.#saveTimer = setInterval(() => {
        engine.#saveRunning ??= engine
          .maintain()
          .catch((err: unknown) => options.log.error({ err }, 'saving vector indexes failed'))
          .finally(() => (engine.#saveRunning = undefined));
      }, options.saveIntervalMs);
      engine.#saveTimer.unref();
    }
    return engine;
  }

  async #open(): Promise<void> {
    const { store } = this.#o;
    await mkdir(this.indexDir, { recursive: true });
    // Finish deletes a crash interrupted.
    for await (const [key] of store.entries('system', prefixRange(['vector', 'drop']))) {
      const shard = decodeKey(key)[2] as number;
      await dropShardData(store, shard, this.indexDir);
      await store.del('system', key, { sync: true });
    }
    for await (const [, value] of store.entries('system', prefixRange(['vector', 'collection']))) {
      const entry = catalogueCodec.decode(value);
      this.#collections.set(entry.name, await this.#openCollection(entry.name, entry));
    }
  }

  async #openCollection(name: string, entry: CatalogueEntry): Promise<Collection> {
    const shards = [];
    for (const id of entry.shards) {
      shards.push(await Shard.open(id, entry.config, { store: this.#o.store, ann: this.#o.ann, indexDir: this.indexDir, log: this.#o.log, maintenance: this.#o.maintenance, caches: this.#caches }));
    }
    const routing = entry.routing ?? { scheme: 'legacy_modulo', shards: entry.shards };
    return new Collection(name, entry.config, shards, shards, routing, this.#embedderFor(entry.config));
  }

  #embedderFor(config: CollectionConfig): Embedder | undefined {
    return config.embedder === null ? undefined : createEmbedder(config.embedder, config.dimensions, this.#o.embedderDeps);
  }

  /** Views of clustered collections, rebuilt when their shard map changes. */
  readonly #clustered = new Map<string, { from: ClusteredCollection; view: Collection }>();

  #clusteredView(name: string): Collection | undefined {
    const from = this.#o.cluster?.get(name);
    if (from === undefined) {
      this.#clustered.delete(name);
      return undefined;
    }
    const cached = this.#clustered.get(name);
    if (cached !== undefined && cached.from === from) return cached.view;
    const view = new Collection(name, from.config, from.shards, [], from.routing, this.#embedderFor(from.config));
    this.#clustered.set(name, { from, view });
    return view;
  }

  #catalogue<T>(fn: () => Promise<T>): Promise<T> {
    return this.#catalogueQueue.run(fn);
  }

  #collection(name: string): Collection {
    if (this.#stopping) throw new FirkinError('unavailable', 'the node is stopping: retry on another node or after it restarts');
    const c = this.#collections.get(name) ?? this.#clusteredView(name);
    if (c === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} not found`);
    return c;
  }

  /**
   * The collection, as `#collection` finds it; in a cluster, one absent from this node's copy
   * of the metadata is 404 only once that copy is brought up to date (a node that just joined,
   * or lags, may not have applied its create yet: a 404 there would say its documents do not
   * exist).
   */
  async #collectionNow(name: string): Promise<Collection> {
    if (this.#o.cluster !== undefined && !this.#collections.has(name) && this.#o.cluster.get(name) === undefined) await this.#o.cluster.catchUp();
    return this.#collection(name);
  }

  // ---- collections ----

  createCollection(request: CreateCollectionRequest): Promise<void> {
    const { collection: name, config } = request;
    if (config.embedder !== null && config.embedder.type !== 'hash') checkEmbedderUrl(config.embedder.url, this.#o.embedderDeps.outbound);
    return this.#catalogue(async () => {
      if (this.#collections.has(name) || this.#o.cluster?.get(name) !== undefined) throw new FirkinError('already_exists', `collection ${JSON.stringify(name)} already exists`);
      // Cluster mode: the metadata group places the shards; every node hosting a replica opens it.
      if (this.#o.cluster !== undefined) return this.#o.cluster.create(name, config);
      const { store } = this.#o;
      const raw = await store.get('system', NEXT_SHARD_KEY);
      const shardId = raw === undefined ? 1 : nextShardCodec.decode(raw);
      // Standalone: one local shard holds the collection; num_shards is kept for placement.
      const entry: CatalogueEntry & { name: string } = { name, config, shards: [shardId], routing: rangeRouting([shardId]) };
      await store.batch(
        [
          { type: 'put', cf: 'system', key: NEXT_SHARD_KEY, value: nextShardCodec.encode(shardId + 1) },
          { type: 'put', cf: 'system', key: collectionKey(name), value: catalogueCodec.encode(entry) },
        ],
        { sync: true },
      );
      this.#collections.set(name, await this.#openCollection(name, entry));
    });
  }

  deleteCollection(name: string): Promise<void> {
    return this.#catalogue(async () => {
      if (!this.#collections.has(name) && this.#o.cluster !== undefined) {
        await this.#collectionNow(name); // 404 when the cluster does not have it either
        return this.#o.cluster.delete(name);
      }
      const c = this.#collection(name);
      this.#collections.delete(name);
      const { store } = this.#o;
      await store.batch(
        [
          { type: 'del', cf: 'system', key: collectionKey(name) },
          ...c.local.map((s) => ({ type: 'put' as const, cf: 'system' as const, key: dropKey(s.id), value: Buffer.alloc(0) })),
        ],
        { sync: true },
      );
      for (const shard of c.local) {
        await shard.drop();
        await store.del('system', dropKey(shard.id), { sync: true });
      }
    });
  }

  listCollections(): Record<string, { dimension: number; shards: number; replication_factor: number }> {
    const out: Record<string, { dimension: number; shards: number; replication_factor: number }> = {};
    const names = new Set([...this.#collections.keys(), ...(this.#o.cluster?.names() ?? [])]);
    for (const name of [...names].sort()) {
      const c = this.#collections.get(name) ?? this.#clusteredView(name);
      if (c === undefined) continue;
      out[name] = { dimension: c.config.dimensions, shards: c.config.num_shards, replication_factor: c.config.replication_factor };
    }
    return out;
  }

  /** The collection as this node knows it now; `count` covers its local shards only (see describeCollection). */
  getCollection(name: string): Record<string, unknown> {
    return this.#view(this.#collection(name), name);
  }

  /** As `getCollection`, but a name this node's copy of the cluster's metadata lacks is looked up again once it is up to date. */
  async getCollectionNow(name: string): Promise<Record<string, unknown>> {
    return this.#view(await this.#collectionNow(name), name);
  }

  #view(c: Collection, name: string): Record<string, unknown> {
    const { dimensions, ...rest } = c.config;
    return { name, dimension: dimensions, count: c.count, dimensions, ...rest };
  }

  /** GET /collections/:c: the config and the exact document count, asked of every shard. */
  async describeCollection(name: string): Promise<Record<string, unknown>> {
    const { c, counts } = await this.#onCurrentMap(name, async (c) => ({ c, counts: await Promise.all(c.shards.map((s) => s.countDocs())) }));
    const { dimensions, ...rest } = c.config;
    return { name, dimension: dimensions, count: counts.reduce((a, b) => a + b, 0), dimensions, ...rest };
  }

  /** For /health: totals, and per shard where its index came from at start and what it covers. */
  stats(): { collections: number; documents: number; shards: Record<string, unknown>[] } {
    let documents = 0;
    const shards: Record<string, unknown>[] = [];
    for (const c of this.#collections.values()) {
      documents += c.count;
      for (const s of c.local) shards.push({ collection: c.name, id: s.id, count: s.count, seq: s.seq, saved_seq: s.savedSeq, removed: s.removed, recovery: s.recovery });
    }
    return { collections: this.#collections.size, documents, shards };
  }

  // ---- documents ----

  /** Checks a document against its collection; a missing vector is embedded later. */
  #checkDoc(c: Collection, doc: DocRequest): CheckedDoc {
    const vector = doc.vector === undefined ? undefined : parseVector(doc.vector, c.config.dimensions, c.config.metric);
    if (vector === undefined && c.embedder === undefined) throw noEmbedder(`document ${JSON.stringify(doc.id)} has no vector; embedding its text`);
    return { id: doc.id, text: doc.text, metadata: doc.metadata, vector };
  }

  async #embed(c: Collection, texts: string[]): Promise<Float32Array[]> {
    const vectors = await c.embedder!.embed(texts);
    for (const v of vectors) {
      const problem = checkEmbedding(v, c.config.dimensions, c.config.metric);
      if (problem !== undefined) {
        const status = c.embedder!.type === 'hash' ? 'bad_request' : 'bad_gateway';
        throw new FirkinError(status, problem);
      }
    }
    return vectors;
  }

  /**
   * Everything is decided by now (ids, vectors): one upsert per shard (the command a clustered
   * shard proposes), all shards in parallel. Each shard's part is atomic; a shard that fails
   * fails only its own documents, which the result names (never a silent partial success).
   * Returns the error of each document whose shard failed.
   */
  async #writeDocs(c: Collection, docs: DocInput[]): Promise<Map<string, FirkinError>> {
    let failed = await this.#writeOnce(c, docs);
    // Documents a fenced shard refused (a reshard switching the map) go again on the new map.
    for (let attempt = 1; attempt < STALE_EPOCH_RETRIES; attempt++) {
      const stale = docs.filter((d) => failed.get(d.id)?.code === 'stale_epoch');
      if (stale.length === 0) break;
      const again = await this.#writeOnce(this.#collection(c.name), stale);
      for (const d of stale) failed.delete(d.id);
      failed = new Map([...failed, ...again]);
    }
    return failed;
  }

  async #writeOnce(c: Collection, docs: DocInput[]): Promise<Map<string, FirkinError>> {
    const byShard = new Map<ShardHandle, DocInput[]>();
    for (const d of docs) {
      const shard = c.shardFor(d.id);
      const list = byShard.get(shard);
      if (list === undefined) byShard.set(shard, [d]);
      else list.push(d);
    }
    const parts = [...byShard];
    const settled = await Promise.allSettled(parts.map(([shard, list]) => shard.upsert(list)));
    const failed = new Map<string, FirkinError>();
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') return;
      if (!isFirkinError(r.reason)) throw r.reason; // a bug: fail the call
      for (const d of parts[i]![1]) failed.set(d.id, r.reason);
    });
    return failed;
  }

  /** One document (an upsert). Returns its id. */
  async putDoc(name: string, doc: DocRequest): Promise<string> {
    const c = await this.#collectionNow(name);
    const checked = this.#checkDoc(c, doc);
    const vector = checked.vector ?? (await this.#embed(c, [checked.text]))[0]!;
    const failed = await this.#writeDocs(c, [{ ...checked, vector }]);
    const err = failed.get(checked.id);
    if (err !== undefined) throw err;
    return checked.id;
  }

  /**
   * The batch form: a document its collection refuses gets an error in its result, the others
   * are written in one atomic batch per shard. Only `FirkinError`s become results: anything
   * else is a bug and fails the call.
   */
  async putDocs(request: PutDocsRequest): Promise<DocResult[]> {
    const c = await this.#collectionNow(request.collection);
    const results: DocResult[] = [];
    const checked: { index: number; doc: CheckedDoc }[] = [];
    request.docs.forEach((doc, index) => {
      try {
        checked.push({ index, doc: this.#checkDoc(c, doc) });
      } catch (err) {
        if (!isFirkinError(err)) throw err;
        results[index] = { id: doc.id, error: err.code, message: err.message };
      }
    });
    const toEmbed = checked.filter((p) => p.doc.vector === undefined);
    let embedError: FirkinError | undefined;
    if (toEmbed.length > 0) {
      try {
        const vectors = await this.#embed(c, toEmbed.map((p) => p.doc.text));
        toEmbed.forEach((p, i) => (p.doc.vector = vectors[i]));
      } catch (err) {
        if (!isFirkinError(err)) throw err;
        embedError = err;
      }
    }
    const ready: DocInput[] = [];
    for (const p of checked) {
      if (p.doc.vector === undefined) {
        results[p.index] = { id: p.doc.id, error: embedError!.code, message: embedError!.message };
      } else {
        ready.push({ id: p.doc.id, text: p.doc.text, metadata: p.doc.metadata, vector: p.doc.vector });
        results[p.index] = { id: p.doc.id, status: 'created' };
      }
    }
    const failed = ready.length > 0 ? await this.#writeDocs(c, ready) : new Map<string, FirkinError>();
    if (failed.size > 0 && failed.size === ready.length && checked.length === request.docs.length) throw failed.values().next().value!;
    request.docs.forEach((doc, index) => {
      const err = results[index]?.status === 'created' ? failed.get(doc.id) : undefined;
      if (err !== undefined) results[index] = { id: doc.id, error: err.code, message: err.message };
    });
    return results;
  }

  /**
   * Run `op` on the collection's current view; a reshard that switched the shard map under it
   * (`stale_epoch`: the old shard refused, nothing was applied) runs it again on the new one.
   */
  async #onCurrentMap<T>(name: string, op: (c: Collection) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await op(await this.#collectionNow(name));
      } catch (err) {
        if (!(isFirkinError(err) && err.code === 'stale_epoch') || attempt >= STALE_EPOCH_RETRIES) throw err;
      }
    }
  }

  async getDoc(name: string, id: string, consistency: Consistency = 'linearizable'): Promise<StoredDoc> {
    const doc = await this.#onCurrentMap(name, (c) => c.shardFor(id).get(id, { stale: consistency === 'stale' }));
    if (doc === undefined) throw new FirkinError('not_found', `document ${JSON.stringify(id)} not found in ${JSON.stringify(name)}`);
    return doc;
  }

  async deleteDoc(name: string, id: string): Promise<void> {
    if (!(await this.#onCurrentMap(name, (c) => c.shardFor(id).remove(id)))) throw new FirkinError('not_found', `document ${JSON.stringify(id)} not found in ${JSON.stringify(name)}`);
  }

  /**
   * A page of the collection's documents in id order from `offset` (inclusive), and the id the
   * next page starts at. Every shard must answer: a listing is never partial (a shard without
   * a reachable leader fails the page, to be asked again).
   */
  async scroll(request: ScrollRequest): Promise<ScrollPage> {
    const options = { filter: request.filter, vectors: request.withVector, stale: request.consistency === 'stale' };
    return this.#onCurrentMap(request.collection, async (c) => mergeScroll(await Promise.all(c.shards.map((s) => s.scroll(request.offset, request.limit + 1, options))), request.limit));
  }

  // ---- search ----

  /** The query's vector: the client's, or its text embedded. */
  async #queryVector(c: Collection, vector: readonly number[] | undefined, query: string | undefined, what: string): Promise<Float32Array> {
    if (vector !== undefined) return parseVector(vector, c.config.dimensions, c.config.metric);
    if (query === undefined) throw new FirkinError('bad_request', `${what} needs a non-empty string "query" or a "vector"`);
    if (c.embedder === undefined) throw noEmbedder(what === 'search' ? 'a text query' : `${what} without a "vector" (its vector side embeds the query)`);
    return (await this.#embed(c, [query]))[0]!;
  }

  /**
   * Every shard in parallel, merged by score then id. A shard that fails (a replicated shard
   * with no reachable leader in time) is named in `failed` beside the others' hits: a partial
   * answer, never a silent gap. When every shard fails the call fails.
   */
  async #fanOut<T extends { id: string; score: number }>(c: Collection, k: number, ask: (s: ShardHandle) => Promise<T[]>): Promise<SearchAnswer<T>> {
    const settled = await Promise.allSettled(c.shards.map(ask));
    // The shard map changed under the search: it runs again on the new one (#onCurrentMap).
    const stale = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected' && isFirkinError(r.reason) && r.reason.code === 'stale_epoch');
    if (stale !== undefined) throw stale.reason;
    const failed: FailedShard[] = [];
    const hits: T[] = [];
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') hits.push(...r.value);
      else if (isFirkinError(r.reason)) failed.push({ shard: c.shards[i]!.id, error: r.reason.code, message: r.reason.message });
      else throw r.reason;
    });
    if (failed.length === c.shards.length) {
      const first = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
      throw first.reason;
    }
    return { results: hits.sort(byScoreThenId).slice(0, k), failed };
  }

  #vectorSearch(c: Collection, query: Float32Array, k: number, ef: number, filter: Filter | undefined, consistency: Consistency, payload: boolean): Promise<SearchAnswer<VectorHit>> {
    return this.#fanOut(c, k, (s) => s.search(query, k, ef, filter, { stale: consistency === 'stale', payload }));
  }

  async search(request: SearchRequest): Promise<SearchAnswer<VectorHit>> {
    const first = await this.#collectionNow(request.collection);
    const query = await this.#queryVector(first, request.vector, request.query, 'search');
    return this.#onCurrentMap(request.collection, async (c) => {
      const ef = Math.max(request.k, request.ef ?? c.config.index.ef_search);
      const answer = await this.#vectorSearch(c, query, request.k, ef, request.filter, request.consistency, request.withPayload);
      // A filtered search read the records anyway; without payload it answers alike.
      return request.withPayload ? answer : { ...answer, results: answer.results.map((h) => ({ id: h.id, score: h.score })) };
    });
  }

  /**
   * Several searches of one collection in one call (Qdrant's `search/batch`): one HTTP
   * request's parsing and answer instead of many; each search runs as `search` would.
   */
  searchBatch(requests: readonly SearchRequest[]): Promise<SearchAnswer<VectorHit>[]> {
    return Promise.all(requests.map((r) => this.search(r)));
  }

  #requireBm25(c: Collection): void {
    if (c.config.bm25_backend === 'none') {
      throw new FirkinError('no_bm25_index', `collection ${JSON.stringify(c.name)} has no BM25 index: create it with "bm25_backend": "memory" or "disk"`);
    }
  }

  /**
   * Over several shards, two rounds: the query's statistics from every shard, summed, then the
   * search, each shard ranking with the collection's idf and avgdl. Scores then do not depend
   * on how documents are spread (one index over the whole collection ranks the same), at the
   * cost of a round of small reads (no barrier, no posting read).
   */
  async #bm25Search(c: Collection, query: string, k: number, consistency: Consistency): Promise<SearchAnswer<ScoredId>> {
    const stale = consistency === 'stale';
    if (c.shards.length === 1) return this.#fanOut(c, k, (s) => s.searchBm25(query, k, { stale }));
    const parts = await Promise.allSettled(c.shards.map((s) => s.bm25Stats(query, { stale })));
    const answered = parts.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    // None answered: the search round reports each shard's failure as a search would.
    const collection = answered.length === 0 ? undefined : sumQueryStats(answered);
    return this.#fanOut(c, k, (s) => s.searchBm25(query, k, { stale, collection }));
  }

  async searchBm25(request: Bm25SearchRequest): Promise<SearchAnswer<ScoredId>> {
    return this.#onCurrentMap(request.collection, (c) => {
      this.#requireBm25(c);
      return this.#bm25Search(c, request.query, request.k, request.consistency);
    });
  }

  /** BM25 and vector search of the same query, fused; the vector side uses the client's vector when given. */
  async searchHybrid(request: HybridSearchRequest): Promise<SearchAnswer<FusedHit>> {
    const first = await this.#collectionNow(request.collection);
    this.#requireBm25(first);
    const vector = await this.#queryVector(first, request.vector, request.query, 'hybrid search');
    return this.#onCurrentMap(request.collection, (c) => this.#hybrid(c, request, vector));
  }

  async #hybrid(c: Collection, request: HybridSearchRequest, vector: Float32Array): Promise<SearchAnswer<FusedHit>> {
    const depth = hybridDepth(request.k);
    const ef = Math.max(depth, request.ef ?? c.config.index.ef_search);
    const [bm25, hits] = await Promise.all([this.#bm25Search(c, request.query, depth, request.consistency), this.#vectorSearch(c, vector, depth, ef, undefined, request.consistency, false)]);
    const results = fuse(request.fusion, {
      bm25: bm25.results,
      vector: hits.results.map((h) => ({ id: h.id, score: h.score })),
      bm25Weight: request.bm25Weight,
      vectorWeight: request.vectorWeight,
      k: request.k,
    });
    const failed = [...bm25.failed, ...hits.failed.filter((f) => !bm25.failed.some((b) => b.shard === f.shard))];
    return { results, failed };
  }

  // ---- lifecycle ----

  /** Background upkeep of every shard's index file and graph (`Shard.maintain`), one shard at a time. */
  async maintain(): Promise<void> {
    for (const c of [...this.#collections.values()]) {
      for (const s of c.local) {
        if (this.#stopping) return;
        await s.maintain();
      }
    }
  }

  async close(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#saveTimer);
    // Closing a shard stops its running checkpoint, so the upkeep loop ends soon after.
    await this.#catalogue(async () => {
      for (const c of this.#collections.values()) for (const s of c.local) await s.close({ save: true });
    });
    await this.#saveRunning;
  }
}
