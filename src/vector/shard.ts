// One shard of a collection: the unit of storage, index and placement. A standalone
// collection is one shard.
//
// Storage (column family `vec`, keys by core/keys.ts):
//   [shard, 'd', docId] -> CBOR {t: text, m: metadata, l: label, s: seq, v: float32 LE bytes}
//   [shard, 's', seq]   -> CBOR {id, l}            the live version of a doc (one per doc)
//   [shard, 't', seq]   -> CBOR {id, l}            a delete (tombstone), kept until an index
//                                                  file covers it
//   [shard, 'm']        -> CBOR {seq, label, a}    last write sequence, next label, and the
//                                                  index of the last command applied
//   [shard, 'r', rid]   -> CBOR {i, o}             a replicated command's request id: the
//                                                  index it applied at and its outcome, kept
//                                                  for REQUEST_ID_WINDOW entries (a retry of it
//                                                  within them changes nothing)
// Every write is a command (`commands.ts`) applied at a log index (`apply`): one synced batch
// touching the records, their seq entries, the meta key (with that index) and the BM25
// postings. A command at or below the applied index is skipped, so a log replayed after a
// restart applies nothing twice. Standalone, the shard numbers its own commands. The records are the truth; the HNSW index is derived from them.
//
// The index maps uint64 labels to doc ids. A doc keeps its label across updates; a deleted
// doc's label is never reused. The index file `shard-<id>.usearch` has a sidecar
// `shard-<id>.json` naming the write sequence it covers. In the background (`maintain`), the
// file is rewritten by a checkpoint: a fresh index built off the event loop (`AnnEngine.build`,
// a worker thread) from a snapshot of the records; when the live index holds many removed
// vectors (usearch keeps them as tombstones in the graph), that fresh index, brought up to date
// from the seq entries, replaces it: a compaction. A graceful close saves the live index
// synchronously (no request is served then). On open: load the file,
// replay every seq/tombstone entry newer than that sequence (remove the label, add the live
// vector), then check the index holds exactly the live docs; if anything is off, rebuild from
// the records. Replay is idempotent, so a sidecar that lags its file is harmless; the sidecar
// is written only after its file is durable, so it never claims more than the file holds.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { type LruScope, SharedLru } from '../core/shared-lru.js';
import type { Logger } from 'pino';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { FirkinError } from '../core/errors.js';
import { decodeKey, decodeTrailingString, encodeKey, prefixRange } from '../core/keys.js';
import { SerialQueue } from '../core/serial.js';
import type { BatchOp, Store, WriteTicket } from '../storage/db.js';
import type { AnnChunk, AnnEngine, AnnIndex, AnnOptions } from './ann/ann-index.js';
import { BatchedSearch } from './ann/batched-search.js';
import { type QueryStats, type ScoredId, topK } from './bm25.js';
import { type Bm25Index, type DiskLimits, type PostingCache, type PreparedChange, type TextChange, bm25ShardRange, newPostingCache, openBm25 } from './bm25-index.js';
import type { CollectionConfig } from './collection-config.js';
import { type Filter, matchesFilter } from './filter.js';
import type { ApplyOutcome, ShardCommand } from './commands.js';
import type { Bm25Options, ScrollOptions, ScrolledDoc, SearchOptions, ShardHandle } from './shard-handle.js';
import { exactScore, scoreFromDistance } from './metric.js';

/** Records read per chunk when rebuilding or replaying. */
const SCAN_CHUNK = 1024;
/**
 * Log entries a request id is remembered for. A router retries a write only within its
 * deadline (seconds), so the window needs to cover the entries committed meanwhile; 10,000 is
 * minutes of a busy shard.
 */
export const REQUEST_ID_WINDOW = 10_000;
/** At most this many records are read on the event loop's thread; more go through the pool. */
const SYNC_READ_KEYS_MAX = 100;
/** Threads a batch of searches may use (usearch's own, while this thread waits). */
const SEARCH_THREADS = availableParallelism();
/** Bytes of decoded hit payloads a node keeps for its shards (about the records' size without their vectors). */
export const PAYLOAD_CACHE_BYTES = 32 * 1024 * 1024;
/** Filtered ANN search widens its candidate list by this factor per round... */
const FILTER_WIDEN = 4;
/** ...up to this many candidates; then it scans every record exactly. */
const FILTER_CANDIDATES_MAX = 4096;

export interface DocInput {
  readonly id: string;
  readonly text: string;
  readonly metadata: Record<string, unknown>;
  readonly vector: Float32Array;
}

export type StoredDoc = DocInput;

/** A search hit; `text` and `metadata` are left out when the search asked for no payload. */
export interface VectorHit {
  readonly id: string;
  readonly score: number;
  readonly text?: string;
  readonly metadata?: Record<string, unknown>;
}

export interface Recovery {
  /** Where the index came from at open. */
  source: 'file' | 'rebuilt' | 'empty';
  /** Seq/tombstone entries replayed over the loaded file. */
  replayed: number;
  /** Why the file was not used, when it was not. */
  reason?: string;
}

interface RecordValue {
  t: string;
  m: Record<string, unknown>;
  l: number;
  s: number;
  v: Uint8Array;
}

interface SeqValue {
  id: string;
  l: number;
}

interface Sidecar {
  seq: number;
  /** The file's length and SHA-256: usearch trusts the bytes it loads, so they are checked first. */
  bytes: number;
  sha256: string;
  engine: string;
  dimensions: number;
  metric: string;
  m: number;
  /** Absent in files written before precisions: f32. */
  precision?: string;
  count: number;
  /** Removed vectors still in the file's graph (absent in files written before it was kept). */
  removed?: number;
}

/** When `maintain` rewrites the index file and compacts the live index. */
export interface MaintenancePolicy {
  /** Compact when the live index holds more removed vectors than this share of its size... */
  readonly removedRatio: number;
  /** ...and at least this many. */
  readonly removedMin: number;
  /** Checkpoint when the writes the file misses reach this share of the live documents. */
  readonly unsavedRatio: number;
}

const MAINTENANCE_DEFAULTS: MaintenancePolicy = { removedRatio: 0.2, removedMin: 1_000, unsavedRatio: 0.2 };

/** A request id the shard remembers: where it applied and what it answered. */
export interface RequestRecord {
  readonly rid: string;
  readonly index: number;
  readonly outcome: ApplyOutcome;
}

/** A piece of a shard's state as a snapshot transfer streams it: documents, then the tail. */
export type ShardStateChunk = { readonly docs: readonly DocInput[] } | { readonly applied: number; readonly requests: readonly RequestRecord[] };

/** A snapshot transfer sends documents in chunks of about this many bytes. */
export const STATE_CHUNK_BYTES = 1 << 20;

export interface ShardDeps {
  store: Store;
  ann: AnnEngine;
  /** Directory of the index files. */
  indexDir: string;
  log: Logger;
  maintenance?: MaintenancePolicy;
  /** Entries a request id is remembered for (tests shorten it); default REQUEST_ID_WINDOW. */
  requestWindow?: number;
  /** Decoded hit payloads and BM25 term lists, shared by the node's shards (one memory bound each); default: the shard's own. */
  caches?: ShardCaches;
  /** The chaos suite's broken build (bm25-kept-deletes): deletes leave the keyword index as it was. */
  unsafeBm25KeepsDeletes?: boolean;
  /** Tests: the upsert pipeline's sizes (default UPSERT_PIPELINE_DEFAULTS). */
  pipeline?: UpsertPipelineSizes;
  /** Tests: the disk keyword backend's limits (default its own). */
  bm25Limits?: DiskLimits;
}

/**
 * Standalone upserts on a store with a write thread (and a keyword index that allows it, or
 * none): a group is prepared while up to IN_FLIGHT_WRITES_MAX earlier groups' batches are
 * written. `partDocs`: a request of more documents is written in parts of at most this many,
 * each its own group (so one request's parts overlap), in a collection without a graph only:
 * usearch inserts a batch on two threads from 512 vectors on, so a graph's parts would insert
 * on one (a 1,000-document request in parts of 340: -13 %, docs/benchmarks.md).
 * `minDocsAhead`: a group starts early only behind at least this many documents in flight
 * (tiny groups would only cost fsyncs).
 */
export interface UpsertPipelineSizes {
  readonly partDocs: number;
  readonly minDocsAhead: number;
}

export const UPSERT_PIPELINE_DEFAULTS: UpsertPipelineSizes = { partDocs: 500, minDocsAhead: 64 };

/** Upsert batches on their way to disk at once: one being written while the next is prepared. */
const IN_FLIGHT_WRITES_MAX = 2;

/** An upsert group's batch handed to the write thread and not committed yet. */
interface InFlightWrite {
  readonly ticket: WriteTicket;
  readonly docs: number;
  /** Settles, never rejects, once the batch is committed in memory, or has failed. */
  readonly settled: Promise<void>;
  /** The shard's counters once it commits: what the next group builds on. */
  readonly seq: number;
  readonly nextLabel: number;
  readonly index: number;
  /** The documents it writes, as it leaves them. */
  readonly written: ReadonlyMap<string, { readonly label: number; readonly seq: number; readonly text: string | undefined }>;
}

/** A group of upserts made into one batch's ops, and what committing it changes in memory. */
interface PlannedUpserts {
  readonly ops: BatchOp[];
  readonly planned: { doc: DocInput; label: number; seq: number; prev: { label: number; seq: number } | undefined }[];
  readonly seq: number;
  readonly nextLabel: number;
  readonly bm25: PreparedChange | undefined;
}

function vectorBytes(v: Float32Array): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

function bytesVector(b: Uint8Array): Float32Array {
  // Copy: the decoded bytes may sit at an offset that is not 4-aligned.
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

function packChunk(dimensions: number, keys: bigint[], vectors: Float32Array[]): AnnChunk {
  const flat = new Float32Array(keys.length * dimensions);
  vectors.forEach((v, i) => flat.set(v, i * dimensions));
  return { keys: BigUint64Array.from(keys), vectors: flat };
}

function addMany(index: AnnIndex, dimensions: number, keys: bigint[], vectors: Float32Array[]): void {
  if (keys.length === 0) return;
  const chunk = packChunk(dimensions, keys, vectors);
  index.add(chunk.keys, chunk.vectors);
}

function decodeRecord(id: string, raw: Buffer): StoredDoc & { label: number; seq: number } {
  const r = decodeCbor(raw) as RecordValue;
  return { id, text: r.t, metadata: r.m, vector: bytesVector(r.v), label: r.l, seq: r.s };
}

/** What a search hit shows of a record, and the write sequence of the version it comes from. */
export interface Payload {
  readonly seq: number;
  readonly text: string;
  readonly metadata: Record<string, unknown>;
}

/** Entry overhead counted beside a payload's bytes in the cache. */
const PAYLOAD_ENTRY_BYTES = 96;

/** Recent search hits' payloads, shared by a node's shards: each shard instance has its scope, by doc id (see `Shard.#payloadsOf`). */
export type PayloadCache = SharedLru<Payload>;

export function newPayloadCache(maxBytes = PAYLOAD_CACHE_BYTES): PayloadCache {
  return new SharedLru({ maxSize: maxBytes });
}

/**
 * The decoded-data caches a node's shards share, standalone and replicated alike: one memory
 * bound each for the whole node (`node.ts` makes them and reports their size in /metrics).
 */
export interface ShardCaches {
  readonly payloads: PayloadCache;
  readonly postings: PostingCache;
}

export function newShardCaches(): ShardCaches {
  return { payloads: newPayloadCache(), postings: newPostingCache() };
}


interface UpsertGroup {
  readonly members: (readonly DocInput[])[];
  size: number;
  done: Promise<void>;
}

/** A group stops taking upserts at this many documents (one batch stays a sensible size). */
const GROUP_DOCS_MAX = 10_000;

/** The last version of each id, in the order of those last occurrences. */
function lastOfEachId(docs: readonly DocInput[]): DocInput[] {
  const byId = new Map<string, DocInput>();
  for (const doc of docs) {
    byId.delete(doc.id); // keep the order of last occurrence
    byId.set(doc.id, doc);
  }
  return [...byId.values()];
}

export class Shard implements ShardHandle {
  readonly id: number;
  readonly config: CollectionConfig;
  readonly #deps: ShardDeps;
  readonly #annOptions: AnnOptions;
  #ann: AnnIndex;
  /** Searches arriving together run as one batch on the index's threads (labels are never reused, so a hit's label still names its document after the wait). */
  readonly #batched = new BatchedSearch(() => this.#ann, SEARCH_THREADS);
  #bm25: Bm25Index | undefined;
  /** doc id -> its label and the seq of its live version. */
  readonly #docs = new Map<string, { label: number; seq: number }>();
  /** Request ids applied within the window. */
  readonly #requests = new Map<string, { index: number; outcome: ApplyOutcome }>();
  /**
   * The same ids in index order, from `#requestHead` on: expiry takes them from the front.
   * (Walking the Map from its front instead cost ~6 µs an apply: V8 keeps a deleted entry's
   * slot until the table is rebuilt, and an iterator steps over every one of them.)
   */
  readonly #requestOrder: { rid: string; index: number }[] = [];
  #requestHead = 0;
  /** label -> doc id, for the live docs. */
  readonly #labels = new Map<number, string>();
  /**
   * Recent hits' payloads by doc id, this instance's scope of the node's cache: a shard reopened
   * over dropped data (a replica's snapshot install) numbers its writes from the start again,
   * so its entries must never meet the old instance's. An entry serves only while `#docs` still
   * names its seq: every write gives the doc a new seq (and a delete removes it), so nothing is
   * invalidated by hand. Payloads are shared between answers and never modified.
   */
  readonly #payloads: LruScope<Payload>;
  readonly #postings: PostingCache;
  /** Last committed write sequence; every committed write is in the index. */
  #seq = 0;
  /** Log index of the last command applied (durable in the meta key with its data). */
  #applied = 0;
  #nextLabel = 1;
  /** Write sequence the index file on disk covers (-1: no usable file). */
  #savedSeq = -1;
  readonly #writes = new SerialQueue();
  /** Upserts not yet written, taking new members (see `upsert`). */
  #openGroup: UpsertGroup | undefined;
  /** Upsert batches being written, oldest first (pipelined upserts only: see `#startUpserts`). */
  readonly #inFlight: InFlightWrite[] = [];
  /** Whether upserts are pipelined (set at open: `UpsertPipelineSizes`). */
  #pipelines = false;
  /** Removed vectors still in the live index's graph (updates and deletes since it was built). */
  #removed = 0;
  /** The running save or checkpoint: never two at once. */
  #saving: Promise<void> | undefined;
  /** Stops a running checkpoint's build when close starts. */
  readonly #stopBuild = new AbortController();
  /** Set when close starts, with the reason: no new write is queued after it. */
  #closing: 'stopping' | 'dropped' | undefined;
  /** Set when close ends: no save runs after it. */
  #closed = false;
  recovery: Recovery = { source: 'empty', replayed: 0 };

  private constructor(id: number, config: CollectionConfig, deps: ShardDeps) {
    this.id = id;
    this.config = config;
    this.#deps = deps;
    this.#annOptions = { dimensions: config.dimensions, metric: config.metric, m: config.index.m, efConstruction: config.index.ef_construction, precision: config.index.precision ?? 'f32' };
    this.#ann = deps.ann.create(this.#annOptions);
    const caches = deps.caches ?? newShardCaches();
    this.#payloads = caches.payloads.scope();
    this.#postings = caches.postings;
  }

  get count(): number {
    return this.#docs.size;
  }

  countDocs(): Promise<number> {
    return Promise.resolve(this.#docs.size);
  }

  get seq(): number {
    return this.#seq;
  }

  /** Log index of the last command applied: a restarted replica's log resumes after it. */
  get appliedIndex(): number {
    return this.#applied;
  }

  /**
   * A log entry with nothing for the shard: the applied index moves past it, stored with the
   * shard's meta but not synced (a crash replays the entry). What a snapshot transfer reads as
   * the state's index (`exportState`), so a snapshot taken after such an entry can be loaded.
   */
  async skipTo(index: number): Promise<void> {
    if (index <= this.#applied) return;
    await this.#deps.store.batch([this.#metaOp(index)], { sync: false });
    this.#applied = index;
  }

  /** The shard's meta record (`[shard,'m']`) as a batch op: its write counters and applied index. */
  #metaOp(index: number, seq = this.#seq, label = this.#nextLabel): BatchOp {
    return { type: 'put', cf: 'vec', key: this.#key('m'), value: encodeCbor({ seq, label, a: index }) };
  }

  get savedSeq(): number {
    return this.#savedSeq;
  }

  get removed(): number {
    return this.#removed;
  }

  get hasBm25(): boolean {
    return this.#bm25 !== undefined;
  }

  get indexFile(): string {
    return path.join(this.#deps.indexDir, `shard-${this.id}.usearch`);
  }

  get sidecarFile(): string {
    return path.join(this.#deps.indexDir, `shard-${this.id}.json`);
  }

  #key(...rest: (string | number)[]): Buffer {
    return encodeKey([this.id, ...rest]);
  }

  static async open(id: number, config: CollectionConfig, deps: ShardDeps): Promise<Shard> {
    const shard = new Shard(id, config, deps);
    await shard.#open();
    return shard;
  }

  async #open(): Promise<void> {
    const { store } = this.#deps;
    const meta = await store.get('vec', this.#key('m'));
    if (meta !== undefined) {
      const m = decodeCbor(meta) as { seq: number; label: number; a?: number };
      this.#seq = m.seq;
      this.#nextLabel = m.label;
      this.#applied = m.a ?? 0; // shards written before commands had no applied index
    }
    const requests: { rid: string; index: number; outcome: ApplyOutcome }[] = [];
    for await (const [key, value] of store.entries('vec', prefixRange([this.id, 'r']))) {
      const r = decodeCbor(value) as { i: number; o: ApplyOutcome };
      requests.push({ rid: decodeKey(key)[2] as string, index: r.i, outcome: r.o });
    }
    for (const r of requests.sort((a, b) => a.index - b.index)) this.#rememberRequest(r.rid, r.index, r.outcome);
    for await (const [key, value] of store.entries('vec', prefixRange([this.id, 's']))) {
      const e = decodeCbor(value) as SeqValue;
      this.#docs.set(e.id, { label: e.l, seq: decodeKey(key)[2] as number });
      this.#labels.set(e.l, e.id);
    }
    this.#bm25 = await openBm25(this.config, store, this.id, this.#postings, this.#deps.bm25Limits);
    const needsTextScan = this.#bm25?.backend === 'memory';

    const loaded = await this.#loadFile();
    if (loaded.ok) {
      this.#ann = loaded.index;
      this.#savedSeq = loaded.seq;
      const { replayed, removed } = await this.#replay(this.#ann, loaded.seq);
      this.#removed = loaded.removed + removed;
      if (this.#ann.size === this.#docs.size) {
        this.recovery = { source: 'file', replayed };
      } else {
        this.recovery = { source: 'rebuilt', replayed: 0, reason: `index holds ${this.#ann.size} vectors after replay, ${this.#docs.size} docs are live` };
        this.#savedSeq = -1;
      }
    } else {
      this.recovery = { source: this.#docs.size === 0 ? 'empty' : 'rebuilt', replayed: 0, reason: loaded.reason };
    }
    const rebuild = this.recovery.source !== 'file';
    if (rebuild) {
      this.#ann = this.#deps.ann.create(this.#annOptions);
      this.#removed = 0;
    }
    if (rebuild || needsTextScan) await this.#scanRecords({ index: rebuild, text: needsTextScan });
    this.#pipelines = store.pipelinesWrites && (this.#bm25 === undefined || this.#bm25.pipelines);
    if (this.recovery.source === 'rebuilt') this.#deps.log.warn({ shard: this.id, reason: this.recovery.reason, docs: this.#docs.size }, 'vector index rebuilt from records');
  }

  async #loadFile(): Promise<{ ok: true; index: AnnIndex; seq: number; removed: number } | { ok: false; reason: string }> {
    let sidecar: Sidecar;
    try {
      const fh = await open(this.sidecarFile, 'r');
      try {
        sidecar = JSON.parse(await fh.readFile('utf8')) as Sidecar;
      } finally {
        await fh.close();
      }
    } catch (err) {
      return { ok: false, reason: `no index file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
    }
    const o = this.#annOptions;
    if (sidecar.engine !== this.#deps.ann.name || sidecar.dimensions !== o.dimensions || sidecar.metric !== o.metric || sidecar.m !== o.m || (sidecar.precision ?? 'f32') !== o.precision) {
      return { ok: false, reason: 'index file was built with other options' };
    }
    if (!(Number.isSafeInteger(sidecar.seq) && sidecar.seq >= 0 && sidecar.seq <= this.#seq)) {
      return { ok: false, reason: `index file covers seq ${sidecar.seq}, the records end at ${this.#seq}` };
    }
    try {
      const { bytes, sha256 } = await digestFile(this.indexFile);
      if (bytes !== sidecar.bytes || sha256 !== sidecar.sha256) return { ok: false, reason: 'index file does not match its checksum' };
      return { ok: true, index: this.#deps.ann.load(this.indexFile, o), seq: sidecar.seq, removed: sidecar.removed ?? 0 };
    } catch (err) {
      return { ok: false, reason: `index file unreadable: ${(err as Error).message}` };
    }
  }

  /**
   * Re-applies every write after `fromSeq` to `index` (the live one, or one about to be).
   * Idempotent. Counts the entries replayed and the vectors removed.
   */
  async #replay(index: AnnIndex, fromSeq: number): Promise<{ replayed: number; removed: number }> {
    const { store } = this.#deps;
    let replayed = 0;
    let removed = 0;
    const after = (kind: 's' | 't') => ({ gt: this.#key(kind, fromSeq), lt: prefixRange([this.id, kind]).lt });
    for await (const [, value] of store.entries('vec', after('t'))) {
      const e = decodeCbor(value) as SeqValue;
      if (index.remove(BigInt(e.l)) && index.keepsRemoved) removed++;
      replayed++;
    }
    let chunk: SeqValue[] = [];
    const flush = async () => {
      const raws = await store.getMany('vec', chunk.map((e) => this.#key('d', e.id)));
      const keys: bigint[] = [];
      const vectors: Float32Array[] = [];
      chunk.forEach((e, i) => {
        const raw = raws[i];
        assert.ok(raw !== undefined, `seq entry for ${e.id} without its record`);
        const rec = decodeRecord(e.id, raw);
        if (index.remove(BigInt(e.l)) && index.keepsRemoved) removed++;
        keys.push(BigInt(e.l));
        vectors.push(rec.vector);
      });
      addMany(index, this.config.dimensions, keys, vectors);
      replayed += chunk.length;
      chunk = [];
    };
    for await (const [, value] of store.entries('vec', after('s'))) {
      chunk.push(decodeCbor(value) as SeqValue);
      if (chunk.length >= SCAN_CHUNK) await flush();
    }
    if (chunk.length > 0) await flush();
    return { replayed, removed };
  }

  async #scanRecords(what: { index: boolean; text: boolean }): Promise<void> {
    const keys: bigint[] = [];
    const vectors: Float32Array[] = [];
    const texts: TextChange[] = [];
    const range = prefixRange([this.id, 'd']);
    const prefixLength = range.gte.length;
    for await (const [key, value] of this.#deps.store.entries('vec', range)) {
      const r = decodeCbor(value) as RecordValue;
      if (what.index) {
        keys.push(BigInt(r.l));
        vectors.push(bytesVector(r.v));
        if (keys.length >= SCAN_CHUNK) this.#addMany(keys.splice(0), vectors.splice(0));
      }
      if (what.text) {
        const id = decodeTrailingString(key, prefixLength);
        texts.push({ id, oldText: undefined, newText: r.t });
        if (texts.length >= SCAN_CHUNK) this.#bm25!.prepare(texts.splice(0)).apply();
      }
    }
    if (keys.length > 0) this.#addMany(keys, vectors);
    if (texts.length > 0) this.#bm25!.prepare(texts).apply();
  }

  #addMany(keys: bigint[], vectors: Float32Array[]): void {
    addMany(this.#ann, this.config.dimensions, keys, vectors);
  }

  /** Removes a label from the live index, counting the tombstone it leaves (a graph's). */
  #removeLabel(label: number): void {
    if (this.#ann.remove(BigInt(label)) && this.#ann.keepsRemoved) this.#removed++;
  }

  /** Runs `fn` after every earlier write of this shard: one writer at a time. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) return Promise.reject(this.#closedError());
    // Anything queued after the open upsert group closes it: a later upsert must not jump
    // ahead of this job by joining the earlier group.
    this.#openGroup = undefined;
    return this.#writes.run(async () => {
      await this.#writesSettled();
      return fn();
    });
  }

  /** Resolves once no upsert batch is in flight (each committed or failed). */
  async #writesSettled(): Promise<void> {
    while (this.#inFlight.length > 0) await this.#inFlight.at(-1)!.settled;
  }

  /** The stored texts of those of `ids` that are live (committed) documents. */
  async #oldTexts(ids: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (this.#bm25 === undefined) return out;
    const present = ids.filter((id) => this.#docs.has(id));
    const raws = await this.#deps.store.getMany('vec', present.map((id) => this.#key('d', id)));
    present.forEach((id, i) => {
      const raw = raws[i];
      assert.ok(raw !== undefined, `live doc ${id} without its record`);
      out.set(id, (decodeCbor(raw) as RecordValue).t);
    });
    return out;
  }

  /**
   * Inserts or replaces docs (the last of equal ids wins), durably, then indexes them.
   * Group commit: upserts that arrive while an earlier write is running join one pending
   * group, written as ONE synced batch (one fsync for all of them) when its turn comes. A
   * group stops taking members once any other write (a delete) is queued behind it, so
   * writes still apply in arrival order. Pipelined (`UpsertPipelineSizes`), a large request
   * is written in parts, each one batch: a crash may leave its first parts written, none of
   * it acknowledged.
   */
  upsert(input: readonly DocInput[]): Promise<void> {
    if (this.#closing !== undefined) return Promise.reject(this.#closedError());
    if (!this.#pipelines) return this.#joinGroup(input, GROUP_DOCS_MAX);
    const partDocs = this.config.index.m === 0 ? (this.#deps.pipeline ?? UPSERT_PIPELINE_DEFAULTS).partDocs : GROUP_DOCS_MAX;
    if (input.length <= partDocs) return this.#joinGroup(input, partDocs);
    // In parts of near-equal size, each its own group, queued in order in this same turn.
    const count = Math.ceil(input.length / partDocs);
    const size = Math.ceil(input.length / count);
    const parts: Promise<void>[] = [];
    for (let at = 0; at < input.length; at += size) parts.push(this.#joinGroup(input.slice(at, at + size), partDocs));
    return Promise.all(parts).then(() => undefined);
  }

  /** Adds `input` to the open group, or to a new one when it would pass `cap` documents. */
  #joinGroup(input: readonly DocInput[], cap: number): Promise<void> {
    let group = this.#openGroup;
    // A request (or part) is never split here, so a group passes the cap only by its first.
    if (group === undefined || group.size + input.length > cap) {
      const created: UpsertGroup = { members: [], size: 0, done: Promise.resolve() };
      if (this.#pipelines) {
        const { minDocsAhead } = this.#deps.pipeline ?? UPSERT_PIPELINE_DEFAULTS;
        created.done = this.#writes
          .run(async () => {
            // Still taking members meanwhile: while the write thread has its hands full, or
            // while what it holds is too small to be worth overlapping.
            while (this.#inFlight.length >= IN_FLIGHT_WRITES_MAX || (this.#inFlight.length > 0 && this.#docsInFlight() < minDocsAhead)) await this.#inFlight[0]!.settled;
            if (this.#openGroup === created) this.#openGroup = undefined; // started: later upserts start another
            return this.#startUpserts(created.members.flat());
          })
          .then(({ durable }) => durable);
      } else {
        created.done = this.#exclusive(() => {
          // Its turn: the group is being written, later upserts start a new one.
          if (this.#openGroup === created) this.#openGroup = undefined;
          return this.#applyNow({ kind: 'upsert', docs: created.members.flat() }).then(() => undefined);
        });
      }
      this.#openGroup = group = created;
    }
    group.members.push(input);
    group.size += input.length;
    return group.done;
  }

  #docsInFlight(): number {
    let docs = 0;
    for (const w of this.#inFlight) docs += w.docs;
    return docs;
  }

  /**
   * Prepares a group of upserts on top of the batches in flight (their documents, counters and
   * keyword statistics as they leave them), hands its batch to the write thread behind theirs,
   * and returns at once with the promise of its commit. The batch is refused unwritten if one
   * it was built on failed. Commits happen in batch order, each once its batch is durable:
   * searches and reads of memory never see a batch before then. Standalone only (the shard
   * numbers its commands): a replica applies its log one command at a time (`apply`).
   */
  async #startUpserts(input: readonly DocInput[]): Promise<{ durable: Promise<void> }> {
    const docs = lastOfEachId(input);
    // Taken now: batches that commit while this one reads stay its base (their data is the same).
    const ahead = [...this.#inFlight];
    const last = ahead.at(-1);
    const base = last ?? { seq: this.#seq, nextLabel: this.#nextLabel, index: this.#applied };
    const index = base.index + 1;
    const inFlight = new Map<string, { label: number; seq: number; text: string | undefined }>();
    for (const w of ahead) for (const [id, d] of w.written) inFlight.set(id, d);
    // Ids no batch in flight writes: the committed state, which nothing changes meanwhile
    // (every other write waits for the batches in flight, and this one holds the queue).
    const oldTexts = await this.#oldTexts(docs.flatMap((d) => (inFlight.has(d.id) ? [] : [d.id])));
    const prevOf = (id: string) => inFlight.get(id) ?? this.#docs.get(id);
    const oldTextOf = (id: string) => (inFlight.has(id) ? inFlight.get(id)!.text : oldTexts.get(id));
    const outcome: ApplyOutcome = { kind: 'upsert', written: docs.length };
    const plan = this.#planUpserts(docs, index, base, prevOf, oldTextOf, this.#requestOps(undefined, index, outcome));
    let handed: { ticket: WriteTicket; durable: Promise<void> };
    try {
      handed = this.#deps.store.batchAfter(plan.ops, last?.ticket, plan.bm25?.packed);
    } catch (err) {
      plan.bm25?.abandon();
      throw err;
    }
    const written = new Map(plan.planned.map((p) => [p.doc.id, { label: p.label, seq: p.seq, text: p.doc.text }]));
    // Assigned below, before the write can answer (the function runs to its first await).
    let entry!: InFlightWrite;
    const durable = (async () => {
      try {
        try {
          plan.bm25?.stage();
          await handed.durable;
        } catch (err) {
          await handed.durable.catch(() => undefined);
          plan.bm25?.abandon();
          throw err;
        }
        await last?.settled; // memory takes the batches in their order
        this.#commitPlanned(plan, index);
        this.#noteRequest(undefined, index, outcome);
      } finally {
        this.#inFlight.splice(this.#inFlight.indexOf(entry), 1);
      }
    })();
    const settled = durable.then(
      () => undefined,
      () => undefined,
    );
    entry = { ticket: handed.ticket, docs: docs.length, settled, seq: plan.seq, nextLabel: plan.nextLabel, index, written };
    this.#inFlight.push(entry);
    return { durable };
  }

  /**
   * Applies one command at log index `index` (a Raft entry's, or the next local one): its data
   * and the index in one synced batch, then memory and the indexes. At or below the applied
   * index it is skipped (a replayed entry). Commands apply one at a time, in order.
   */
  /** The log index at which request `rid` first applied, while it is in the request window. */
  requestIndex(rid: string): number | undefined {
    return this.#requests.get(rid)?.index;
  }

  /**
   * What request `rid` did when it first applied, if a command carrying it at log `index` is a
   * retry of it (within the request window), or undefined.
   */
  retryOutcome(rid: string | undefined, index: number): ApplyOutcome | undefined {
    const seen = rid === undefined ? undefined : this.#requests.get(rid);
    return seen !== undefined && index - seen.index < (this.#deps.requestWindow ?? REQUEST_ID_WINDOW) ? seen.outcome : undefined;
  }

  apply(command: ShardCommand, index: number): Promise<ApplyOutcome | undefined> {
    if (this.#closing !== undefined) return Promise.reject(this.#closedError());
    return this.#exclusive(() => this.#applyAt(command, index));
  }

  /** Standalone: the command takes the next index (called inside the queue). */
  #applyNow(command: ShardCommand): Promise<ApplyOutcome | undefined> {
    // A delete of nothing changes nothing: standalone, it takes no index and no fsync.
    if (command.kind === 'delete' && !command.ids.some((id) => this.#docs.has(id))) return Promise.resolve({ kind: 'delete', deleted: command.ids.map(() => false) });
    return this.#applyAt(command, this.#applied + 1);
  }

  async #applyAt(command: ShardCommand, index: number): Promise<ApplyOutcome | undefined> {
    if (!Number.isSafeInteger(index) || index <= 0) throw new FirkinError('error', `shard ${this.id}: bad log index ${index}`);
    if (index <= this.#applied) return undefined;
    const rid = command.rid;
    const retried = this.retryOutcome(rid, index);
    if (retried !== undefined) {
      // A retry of a command that already applied (through an earlier leader): applying it
      // again could undo writes made since. Only the applied index moves.
      const ops: BatchOp[] = [...this.#requestOps(undefined, index, retried), this.#metaOp(index)];
      await this.#deps.store.batch(ops, { sync: true });
      this.#applied = index;
      this.#noteRequest(undefined, index, retried);
      return retried;
    }
    if (command.kind === 'upsert') {
      const docs = lastOfEachId(command.docs);
      const outcome: ApplyOutcome = { kind: 'upsert', written: docs.length };
      await this.#commitUpserts(docs, index, this.#requestOps(rid, index, outcome));
      this.#noteRequest(rid, index, outcome);
      return outcome;
    }
    const deleted = this.#deletedOf(command.ids);
    const outcome: ApplyOutcome = { kind: 'delete', deleted };
    await this.#commitDeletes(command.ids, index, this.#requestOps(rid, index, outcome));
    this.#noteRequest(rid, index, outcome);
    return outcome;
  }

  /** Writes for the request table at `index`: the new id (if any), and ids past the window. */
  #requestOps(rid: string | undefined, index: number, outcome: ApplyOutcome): BatchOp[] {
    const ops: BatchOp[] = [];
    const end = this.#requestsExpiredBy(index);
    for (let i = this.#requestHead; i < end; i++) {
      const old = this.#requestOrder[i]!;
      if (this.#requests.get(old.rid)?.index === old.index) ops.push({ type: 'del', cf: 'vec', key: this.#key('r', old.rid) });
    }
    if (rid !== undefined) ops.push({ type: 'put', cf: 'vec', key: this.#key('r', rid), value: encodeCbor({ i: index, o: outcome }) });
    return ops;
  }

  /** After the batch: the same changes in memory. */
  #noteRequest(rid: string | undefined, index: number, outcome: ApplyOutcome): void {
    const end = this.#requestsExpiredBy(index);
    for (let i = this.#requestHead; i < end; i++) {
      const old = this.#requestOrder[i]!;
      // Only the entry this slot recorded: an id applied again later is live under its new index.
      if (this.#requests.get(old.rid)?.index === old.index) this.#requests.delete(old.rid);
    }
    this.#requestHead = end;
    if (this.#requestHead > 4_096 && this.#requestHead * 2 > this.#requestOrder.length) {
      this.#requestOrder.splice(0, this.#requestHead);
      this.#requestHead = 0;
    }
    if (rid !== undefined) this.#rememberRequest(rid, index, outcome);
  }

  /** The end of the front run of `#requestOrder` that falls out of the window at `index`. */
  #requestsExpiredBy(index: number): number {
    const oldest = index - (this.#deps.requestWindow ?? REQUEST_ID_WINDOW);
    let end = this.#requestHead;
    while (end < this.#requestOrder.length && this.#requestOrder[end]!.index <= oldest) end++;
    return end;
  }

  /** Ids arrive in index order (applies, and loads sorted by index). */
  #rememberRequest(rid: string, index: number, outcome: ApplyOutcome): void {
    this.#requests.set(rid, { index, outcome });
    this.#requestOrder.push({ rid, index });
  }

  /** Request ids still remembered, oldest first: part of a snapshot. */
  exportRequests(): RequestRecord[] {
    return [...this.#requests].map(([rid, e]) => ({ rid, index: e.index, outcome: e.outcome })).sort((a, b) => a.index - b.index);
  }

  /** Which of `ids` a delete removes: the first occurrence of each present id. */
  #deletedOf(ids: readonly string[]): boolean[] {
    return ids.map((id, i) => this.#docs.has(id) && ids.indexOf(id) === i);
  }

  async #commitUpserts(docs: DocInput[], index: number, extra: readonly BatchOp[] = []): Promise<void> {
    const oldTexts = await this.#oldTexts(docs.map((d) => d.id));
    const plan = this.#planUpserts(docs, index, { seq: this.#seq, nextLabel: this.#nextLabel }, (id) => this.#docs.get(id), (id) => oldTexts.get(id), extra);
    const written = this.#deps.store.batch(plan.ops, { sync: true }, plan.bm25?.packed);
    // BM25's new postings go into its lists while the write thread syncs (most of a batch's
    // time after it is sent), invisible to searches until applied below.
    try {
      plan.bm25?.stage();
      await written;
    } catch (err) {
      // The write failed, or staging did: either way the batch must have ended before undoing.
      await written.catch(() => undefined);
      plan.bm25?.abandon();
      throw err;
    }
    this.#commitPlanned(plan, index);
  }

  /**
   * A group's ops on top of `base` (the counters) and each id's previous version and text as
   * `prevOf` and `oldTextOf` tell them. Its keyword change is prepared last: from then on it is
   * the caller's to apply or abandon.
   */
  #planUpserts(
    docs: readonly DocInput[],
    index: number,
    base: { readonly seq: number; readonly nextLabel: number },
    prevOf: (id: string) => { label: number; seq: number } | undefined,
    oldTextOf: (id: string) => string | undefined,
    extra: readonly BatchOp[],
  ): PlannedUpserts {
    let seq = base.seq;
    let nextLabel = base.nextLabel;
    const ops: BatchOp[] = [];
    const planned = docs.map((doc) => {
      const found = prevOf(doc.id);
      const prev = found === undefined ? undefined : { label: found.label, seq: found.seq };
      const label = prev?.label ?? nextLabel++;
      seq += 1;
      const record: RecordValue = { t: doc.text, m: doc.metadata, l: label, s: seq, v: vectorBytes(doc.vector) };
      ops.push({ type: 'put', cf: 'vec', key: this.#key('d', doc.id), value: encodeCbor(record) });
      if (prev !== undefined) ops.push({ type: 'del', cf: 'vec', key: this.#key('s', prev.seq) });
      ops.push({ type: 'put', cf: 'vec', key: this.#key('s', seq), value: encodeCbor({ id: doc.id, l: label } satisfies SeqValue) });
      return { doc, label, seq, prev };
    });
    ops.push(...extra);
    ops.push(this.#metaOp(index, seq, nextLabel));
    const bm25 = this.#bm25?.prepare(docs.map((d) => ({ id: d.id, oldText: oldTextOf(d.id), newText: d.text })));
    if (bm25 !== undefined) ops.push(...bm25.ops);
    return { ops, planned, seq, nextLabel, bm25 };
  }

  /** A group's batch is durable: bring memory and the index up to it, with no await in between. */
  #commitPlanned(plan: PlannedUpserts, index: number): void {
    this.#applied = index;
    for (const p of plan.planned) {
      if (p.prev !== undefined) this.#removeLabel(p.label);
      this.#docs.set(p.doc.id, { label: p.label, seq: p.seq });
      this.#labels.set(p.label, p.doc.id);
    }
    this.#addMany(plan.planned.map((p) => BigInt(p.label)), plan.planned.map((p) => p.doc.vector));
    plan.bm25?.apply();
    this.#seq = plan.seq;
    this.#nextLabel = plan.nextLabel;
  }

  /** Deletes a doc; false when it does not exist. */
  async remove(id: string): Promise<boolean> {
    if (this.#closing !== undefined) throw this.#closedError();
    const outcome = await this.#exclusive(() => this.#applyNow({ kind: 'delete', ids: [id] }));
    return outcome?.kind === 'delete' && outcome.deleted[0] === true;
  }

  /** Deletes the ids that exist (each once); says per id whether it was there. */
  async #commitDeletes(ids: readonly string[], index: number, extra: readonly BatchOp[] = []): Promise<boolean[]> {
    const present = [...new Set(ids)].filter((id) => this.#docs.has(id));
    const oldTexts = await this.#oldTexts(present);
    let seq = this.#seq;
    const ops: BatchOp[] = [];
    const gone = present.map((id) => {
      const prev = this.#docs.get(id)!;
      seq += 1;
      ops.push({ type: 'del', cf: 'vec', key: this.#key('d', id) });
      ops.push({ type: 'del', cf: 'vec', key: this.#key('s', prev.seq) });
      ops.push({ type: 'put', cf: 'vec', key: this.#key('t', seq), value: encodeCbor({ id, l: prev.label } satisfies SeqValue) });
      return { id, label: prev.label };
    });
    ops.push(...extra);
    ops.push(this.#metaOp(index, seq));
    const bm25 = this.#deps.unsafeBm25KeepsDeletes === true ? undefined : this.#bm25?.prepare(present.map((id) => ({ id, oldText: oldTexts.get(id), newText: undefined })));
    if (bm25 !== undefined) ops.push(...bm25.ops);
    try {
      await this.#deps.store.batch(ops, { sync: true }, bm25?.packed);
    } catch (err) {
      bm25?.abandon();
      throw err;
    }
    this.#applied = index;
    for (const g of gone) {
      this.#removeLabel(g.label);
      this.#docs.delete(g.id);
      this.#labels.delete(g.label);
    }
    bm25?.apply();
    this.#seq = seq;
    const deleted = new Set(present);
    return ids.map((id, i) => deleted.has(id) && ids.indexOf(id) === i);
  }

  /** Every live document in id order, in chunks: a snapshot's content (taken between applies). */
  async *exportDocs(chunkSize = SCAN_CHUNK): AsyncGenerator<DocInput[]> {
    let chunk: DocInput[] = [];
    for await (const [key, value] of this.#deps.store.entries('vec', prefixRange([this.id, 'd']))) {
      const { label: _l, seq: _s, ...doc } = decodeRecord(decodeKey(key)[2] as string, value);
      chunk.push(doc);
      if (chunk.length >= chunkSize) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
  }

  /**
   * The shard's state at one instant (one RocksDB iterator, so one point between two applied
   * commands): its documents in chunks of about `chunkBytes`, then its applied index and
   * request ids. What a snapshot transfer streams; nothing is held whole.
   */
  async *exportState(chunkBytes = STATE_CHUNK_BYTES): AsyncGenerator<ShardStateChunk> {
    let docs: DocInput[] = [];
    let bytes = 0;
    let applied = 0;
    const requests: RequestRecord[] = [];
    for await (const [key, value] of this.#deps.store.entries('vec', prefixRange([this.id]))) {
      const [, kind, part] = decodeKey(key);
      if (kind === 'd') {
        const { label: _l, seq: _s, ...doc } = decodeRecord(part as string, value);
        docs.push(doc);
        bytes += value.length;
        if (bytes >= chunkBytes || docs.length >= SCAN_CHUNK) {
          yield { docs };
          docs = [];
          bytes = 0;
        }
      } else if (kind === 'm') {
        applied = (decodeCbor(value) as { a?: number }).a ?? 0;
      } else if (kind === 'r') {
        const r = decodeCbor(value) as { i: number; o: ApplyOutcome };
        requests.push({ rid: part as string, index: r.i, outcome: r.o });
      }
    }
    if (docs.length > 0) yield { docs };
    yield { applied, requests };
  }

  /**
   * Loads a streamed state into an empty shard (just opened over dropped data): documents
   * chunk by chunk with the applied index left at 0, and only the last batch records the
   * applied index and request ids, so a crash midway leaves a shard that asks for the snapshot
   * again rather than one that claims it. Returns the applied index loaded.
   */
  load(stream: AsyncIterable<ShardStateChunk> | Iterable<ShardStateChunk>): Promise<number> {
    return this.#exclusive(async () => {
      if (this.#applied !== 0 || this.#docs.size !== 0) throw new FirkinError('error', `shard ${this.id}: a snapshot loads only into an empty shard`);
      for await (const chunk of stream) {
        if ('docs' in chunk) {
          await this.#commitUpserts(lastOfEachId(chunk.docs), 0);
          continue;
        }
        const ops: BatchOp[] = chunk.requests.map((r) => ({ type: 'put', cf: 'vec', key: this.#key('r', r.rid), value: encodeCbor({ i: r.index, o: r.outcome }) }));
        ops.push(this.#metaOp(chunk.applied));
        await this.#deps.store.batch(ops, { sync: true });
        for (const r of [...chunk.requests].sort((a, b) => a.index - b.index)) this.#rememberRequest(r.rid, r.index, r.outcome);
        this.#applied = chunk.applied;
        return chunk.applied;
      }
      throw new FirkinError('unavailable', `shard ${this.id}: the state stream ended before its applied index`);
    });
  }

  /**
   * SHA-256 over the shard's records in id order (id, text, metadata, vector bytes), with the
   * applied index it was taken at: two replicas that applied the same commands agree on both.
   * Taken inside the write queue, so no command lands halfway through it.
   */
  digest(): Promise<{ applied: number; docs: number; sha256: string }> {
    return this.#exclusive(async () => {
      const hash = createHash('sha256');
      let docs = 0;
      for await (const [key, value] of this.#deps.store.entries('vec', prefixRange([this.id, 'd']))) {
        const r = decodeCbor(value) as RecordValue;
        hash.update(JSON.stringify([decodeKey(key)[2], r.t, r.m])).update(r.v);
        docs++;
      }
      return { applied: this.#applied, docs, sha256: hash.digest('hex') };
    });
  }

  async get(id: string): Promise<StoredDoc | undefined> {
    const raw = await this.#deps.store.get('vec', this.#key('d', id));
    return raw === undefined ? undefined : decodeRecord(id, raw);
  }

  /**
   * Up to `limit` documents from id `from` (inclusive) in id order (the records' key order),
   * those whose metadata passes the filter; a vector is decoded only when asked for.
   */
  async scroll(from: string | undefined, limit: number, options: ScrollOptions = {}): Promise<ScrolledDoc[]> {
    const all = prefixRange([this.id, 'd']);
    const range = from === undefined ? all : { gte: this.#key('d', from), lt: all.lt };
    const prefixLength = all.gte.length;
    const out: ScrolledDoc[] = [];
    if (limit <= 0) return out;
    for await (const [key, value] of this.#deps.store.entries('vec', range)) {
      const r = decodeCbor(value) as RecordValue;
      if (options.filter !== undefined && !matchesFilter(options.filter, r.m)) continue;
      const id = decodeTrailingString(key, prefixLength);
      out.push({ id, text: r.t, metadata: r.m, ...(options.vectors === true ? { vector: bytesVector(r.v) } : {}) });
      if (out.length >= limit) break;
    }
    return out;
  }

  /** The payloads of `ids`' stored versions (undefined: gone), from the cache where it holds the live one. */
  async #payloadsOf(ids: readonly string[]): Promise<(Payload | undefined)[]> {
    const payloads: (Payload | undefined)[] = new Array(ids.length);
    const missed: number[] = [];
    ids.forEach((id, i) => {
      const cached = this.#payloads.get(id);
      if (cached !== undefined && cached.seq === this.#docs.get(id)?.seq) payloads[i] = cached;
      else missed.push(i);
    });
    if (missed.length === 0) return payloads;
    // A search's hits are a few keys, read on this thread (Store.getManySync says why) and
    // cached; a widened filtered search's candidates go through the thread pool and are not
    // cached (most are not hits, and they would push the hot hits out).
    const keys = missed.map((i) => this.#key('d', ids[i]!));
    const onThread = keys.length <= SYNC_READ_KEYS_MAX;
    const raws = onThread ? this.#deps.store.getManySync('vec', keys) : await this.#deps.store.getMany('vec', keys);
    raws.forEach((raw, j) => {
      if (raw === undefined) return;
      const r = decodeCbor(raw) as RecordValue;
      const id = ids[missed[j]!]!;
      const payload: Payload = { seq: r.s, text: r.t, metadata: r.m };
      payloads[missed[j]!] = payload;
      if (onThread) this.#payloads.set(id, payload, id.length + raw.length - r.v.byteLength + PAYLOAD_ENTRY_BYTES);
    });
    return payloads;
  }

  /**
   * The `k` most similar docs (by this collection's metric), optionally filtered. Without
   * `payload` (and without a filter, which needs the metadata) no record is read: ids and
   * scores come straight from the index, whose labels are exactly the live documents.
   */
  async search(query: Float32Array, k: number, ef: number, filter: Filter | undefined, options: SearchOptions = {}): Promise<VectorHit[]> {
    const size = this.#ann.size;
    if (size === 0) return [];
    if (options.payload === false && filter === undefined) {
      const m = await this.#batched.search(query, k, Math.max(ef, k));
      const hits: VectorHit[] = [];
      m.keys.forEach((key, i) => {
        const id = this.#labels.get(Number(key));
        if (id !== undefined) hits.push({ id, score: scoreFromDistance(this.config.metric, m.distances[i]!) });
      });
      return hits;
    }
    let count = filter === undefined ? k : Math.min(size, k * FILTER_WIDEN);
    for (;;) {
      const m = await this.#batched.search(query, count, Math.max(ef, count));
      const ids: string[] = [];
      const scores: number[] = [];
      m.keys.forEach((key, i) => {
        const id = this.#labels.get(Number(key));
        if (id === undefined) return;
        ids.push(id);
        scores.push(scoreFromDistance(this.config.metric, m.distances[i]!));
      });
      const payloads = await this.#payloadsOf(ids);
      const hits: VectorHit[] = [];
      payloads.forEach((p, i) => {
        if (p === undefined) return; // deleted while we read
        if (filter !== undefined && !matchesFilter(filter, p.metadata)) return;
        hits.push({ id: ids[i]!, text: p.text, score: scores[i]!, metadata: p.metadata });
      });
      if (filter === undefined || hits.length >= k || count >= size) return hits.slice(0, k);
      if (count >= FILTER_CANDIDATES_MAX) return this.#exactSearch(query, k, filter);
      count = Math.min(size, count * FILTER_WIDEN, FILTER_CANDIDATES_MAX);
    }
  }

  /** Brute force over every record that passes the filter: exact, for selective filters. */
  async #exactSearch(query: Float32Array, k: number, filter: Filter): Promise<VectorHit[]> {
    const range = prefixRange([this.id, 'd']);
    const prefixLength = range.gte.length;
    const hits: VectorHit[] = [];
    for await (const [key, value] of this.#deps.store.entries('vec', range)) {
      const r = decodeCbor(value) as RecordValue;
      if (!matchesFilter(filter, r.m)) continue;
      const id = decodeTrailingString(key, prefixLength);
      hits.push({ id, text: r.t, metadata: r.m, score: exactScore(this.config.metric, query, bytesVector(r.v)) });
    }
    return topK(hits, k);
  }

  async searchBm25(query: string, k: number, options: Bm25Options = {}): Promise<ScoredId[]> {
    assert.ok(this.#bm25 !== undefined, 'caller checks hasBm25');
    return this.#bm25.search(query, k, options.collection);
  }

  async bm25Stats(query: string): Promise<QueryStats> {
    assert.ok(this.#bm25 !== undefined, 'caller checks hasBm25');
    return this.#bm25.queryStats(query);
  }

  /**
   * Background upkeep, at most one job at a time (with a close's save too). A checkpoint when
   * the index file misses many writes (or there is none), and a compaction when the live index
   * holds many removed vectors. Neither blocks the event loop for long: see `#checkpoint`.
   */
  maintain(): Promise<void> {
    if (this.#closing !== undefined || this.#closed || this.#saving !== undefined) return this.#saving ?? Promise.resolve();
    const policy = this.#deps.maintenance ?? MAINTENANCE_DEFAULTS;
    const compact = this.#removed >= policy.removedMin && this.#removed > policy.removedRatio * this.#ann.size;
    const unsaved = this.#seq - this.#savedSeq;
    const checkpoint = unsaved > 0 && (this.#savedSeq < 0 || unsaved >= policy.unsavedRatio * this.#docs.size);
    if (!compact && !checkpoint) return Promise.resolve();
    this.#saving = this.#checkpoint(compact)
      .catch((err: unknown) => {
        if (this.#closing === undefined) throw err; // stopped by close: the next start redoes it
      })
      .finally(() => (this.#saving = undefined));
    return this.#saving;
  }

  /**
   * Writes a new index file from a snapshot of the records at a write sequence S, built off the
   * event loop (`AnnEngine.build`). With `swap`, the built index then replaces the live one:
   * loaded, and brought from S up to date by replaying the seq entries, while writes wait and
   * searches go on against the old index; then swapped in with no await in between.
   */
  async #checkpoint(swap: boolean): Promise<void> {
    const { store, ann } = this.#deps;
    const range = prefixRange([this.id, 'd']);
    // Open the snapshot while no write runs: it then holds exactly the writes up to S.
    const opened = await this.#exclusive(async () => {
      const records = store.entries('vec', range);
      const first = await records.next();
      return { seq: this.#seq, records, first };
    });
    const dims = this.config.dimensions;
    let count = 0;
    async function* chunks(): AsyncGenerator<AnnChunk> {
      let keys: bigint[] = [];
      let vectors: Float32Array[] = [];
      const take = (value: Buffer) => {
        const r = decodeCbor(value) as RecordValue;
        keys.push(BigInt(r.l));
        vectors.push(bytesVector(r.v));
        count++;
      };
      if (opened.first.done !== true) take(opened.first.value[1]);
      for await (const [, value] of opened.records) {
        take(value);
        if (keys.length >= SCAN_CHUNK) {
          yield packChunk(dims, keys, vectors);
          keys = [];
          vectors = [];
        }
      }
      if (keys.length > 0) yield packChunk(dims, keys, vectors);
    }
    const built = `${this.indexFile}.build`;
    try {
      await ann.build(this.#annOptions, chunks(), built, this.#stopBuild.signal);
    } finally {
      await opened.records.return(undefined);
    }
    await this.#install(built, { seq: opened.seq, count, removed: 0 });
    if (!swap) return;
    await this.#exclusive(async () => {
      const index = ann.load(this.indexFile, this.#annOptions);
      const { removed } = await this.#replay(index, opened.seq);
      assert.equal(index.size, this.#docs.size, 'a compacted index holds every live document');
      this.#ann = index;
      this.#removed = removed;
    });
    this.#deps.log.info({ shard: this.id, docs: this.#docs.size }, 'vector index compacted');
  }

  /** Saves the live index if writes happened since the last file; for close (it blocks the loop). */
  #saveIfDirty(): Promise<void> {
    if (this.#closed || this.#seq === this.#savedSeq || (this.#seq === 0 && this.#docs.size === 0)) return this.#saving ?? Promise.resolve();
    this.#saving ??= this.#save().finally(() => (this.#saving = undefined));
    return this.#saving;
  }

  async #save(): Promise<void> {
    // The synchronous save and the reads of #seq and #removed happen with no await between
    // them, so the file holds exactly the writes up to `seq`.
    const tmp = `${this.indexFile}.tmp`;
    const covers = { seq: this.#seq, count: this.#docs.size, removed: this.#removed };
    this.#ann.save(tmp);
    await this.#install(tmp, covers);
  }

  /** Makes `file` the index file covering `covers.seq`: file first, then its sidecar, each durable. */
  async #install(file: string, covers: { seq: number; count: number; removed: number }): Promise<void> {
    const { bytes, sha256 } = await digestFile(file);
    const sidecar: Sidecar = {
      seq: covers.seq,
      bytes,
      sha256,
      engine: this.#deps.ann.name,
      dimensions: this.config.dimensions,
      metric: this.config.metric,
      m: this.config.index.m,
      precision: this.#annOptions.precision,
      count: covers.count,
      removed: covers.removed,
    };
    await fsyncFile(file);
    await rename(file, this.indexFile);
    await writeFile(`${this.sidecarFile}.tmp`, JSON.stringify(sidecar));
    await fsyncFile(`${this.sidecarFile}.tmp`);
    await rename(`${this.sidecarFile}.tmp`, this.sidecarFile);
    await fsyncFile(this.#deps.indexDir);
    this.#savedSeq = covers.seq;
    // Tombstones the file covers are no longer needed for replay.
    if (!this.#closed) await this.#deps.store.clearRange('vec', { gte: this.#key('t'), lt: this.#key('t', covers.seq + 1) });
  }

  /** A write after close began: the node is stopping (503), or the collection is gone (404). */
  #closedError(): FirkinError {
    return this.#closing === 'dropped'
      ? new FirkinError('not_found', 'the collection was deleted')
      : new FirkinError('unavailable', 'the node is stopping: retry on another node or after it restarts');
  }

  /** Waits for pending writes and saves; later writes fail (see #closedError). */
  async close(options: { save: boolean; reason?: 'stopping' | 'dropped' }): Promise<void> {
    this.#closing ??= options.reason ?? 'stopping';
    this.#stopBuild.abort(new FirkinError('unavailable', 'the shard is closing'));
    await this.#writes.idle();
    await this.#writesSettled();
    // A checkpoint stopped by the abort leaves the previous file in place: fine, it is replaced next.
    await this.#saving?.catch(() => undefined);
    if (options.save) await this.#saveIfDirty();
    await this.#saving;
    this.#closed = true;
  }

  /** Closes and removes every record, posting and file of the shard. */
  async drop(): Promise<void> {
    await this.close({ save: false, reason: 'dropped' });
    await dropShardData(this.#deps.store, this.id, this.#deps.indexDir);
  }
}

export async function dropShardData(store: Store, shard: number, indexDir: string): Promise<void> {
  await store.clearRange('vec', prefixRange([shard]));
  await store.clearRange('bm25', bm25ShardRange(shard));
  for (const f of [`shard-${shard}.usearch`, `shard-${shard}.json`, `shard-${shard}.usearch.tmp`, `shard-${shard}.usearch.build`, `shard-${shard}.json.tmp`]) {
    await rm(path.join(indexDir, f), { force: true });
  }
}

async function digestFile(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return { bytes: (await stat(file)).size, sha256: hash.digest('hex') };
}

async function fsyncFile(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
