// The document database engine: catalogue, the serialised write path (group commit, one
// atomic synced batch per group), reads, changes, and the notifier long-poll and SSE wait on.
// It knows nothing of HTTP: it takes parsed inputs and throws FirkinError.
//
// Write path. Every database has one queue. A writer drains it: it takes the waiting jobs
// (one job = one request's edits) up to LIMITS.groupEditsMax edits, reads the document
// records they touch and the bodies the edits will read, applies each edit in order and
// synchronously against an in-memory overlay (so two edits of one document in one group see
// each other), and commits the whole group with ONE `store.batch(ops, {sync: true})`. A
// request's writes are therefore always atomic (they are never split across groups), and
// concurrent writers share one fsync. Applying an edit to the group (its checks, its revision
// and its batch operations) is the pure part, in `edit-apply.ts`.
import { type LruScope, SharedLru } from '../core/shared-lru.js';
import type { Logger } from 'pino';
import { FirkinError } from '../core/errors.js';
import { type Clock, type Hlc, type HybridClock, HLC_ZERO, compareHlc, hlcToText, tickHlc } from '../core/hlc.js';
import { decodeKey } from '../core/keys.js';
import { SerialQueue } from '../core/serial.js';
import { isPlainObject, ownValue } from '../core/values.js';
import type { WriteTicket, BatchOp, ColumnFamily, EntryCursor, Store } from '../storage/db.js';
import { type Blob, type ParsedDoc, parseDoc } from './doc-input.js';
import { type Body, type Edit, type EditResult, type WinnerChange, type WinnerIndexer, type WriteGroup, applyEdit, bodyKey, chunkCount, digestsOfAll, notFoundDoc } from './edit-apply.js';
export type { Body, EditResult, WinnerChange, WinnerIndexer } from './edit-apply.js';
import { LIMITS, checkAttachmentName, checkDbName, checkDocId } from './names.js';
import {
  type AttachmentMeta,
  type BodyRecord,
  DOC_CFS,
  type DbRecord,
  type DocRecord,
  decodeBody,
  decodeDbRecord,
  decodeDocRecord,
  decodeSeq,
  encodeDbRecord,
  encodeDocRecord,
  keys,
  seqFromKey,
} from './records.js';
import {
  type RevPath,
  conflicts,
  deletedConflicts,
  findRev,
  isLeaf,
  isRev,
  isValidPath,
  latestLeaves,
  leaves,
  pathFromRevisions,
  revGen,
  revisions,
  revsDiff,
  revsInfo,
} from './revtree.js';

/**
 * Whether a write's answer says it probably left an older body for compaction: it succeeded
 * with a revision that has a parent (generation above 1). Exact for local edits; a replicated
 * revision's parent may never have been here. What a shard leader counts towards proposing a
 * compaction (the engine itself counts exactly, from the records).
 */
export function leftOlderBody(result: EditResult): boolean {
  return result.ok && revGen(result.rev) > 1;
}

/** One document edit as the write queue applies it (and as a replicated shard's log carries it). */
export type DocEdit = Edit;
/** A group whose batch was handed to the write thread and has not settled yet. */
interface InFlightGroup {
  readonly g: Group;
  /** How many edits it applied (requests' entries refused before queueing aside). */
  readonly edits: number;
  /** The database record this group leaves (counters, update_seq). */
  readonly record: DbRecord;
  readonly ticket: WriteTicket;
  /** Resolves, never rejects, once the group is durable and in the caches, or has failed. */
  readonly settled: Promise<void>;
  /** Resolves once the group is durable and in the caches; rejects if it (or its base) failed. */
  readonly durable: Promise<void>;
}

/** Groups written at once per database: one on its way to disk while the next is applied. */
const IN_FLIGHT_GROUPS_MAX = 2;

/** Requests' edits committed as one batch; `done` holds each request's results, in order. */
interface EditGroup {
  readonly requests: (readonly (Edit | EditResult)[])[];
  edits: number;
  readonly done: Promise<EditResult[][]>;
}

interface DbState {
  record: DbRecord;
  /** Every write of this database runs here, one at a time. */
  readonly writes: SerialQueue;
  /** The queued group that has not started yet: a new request joins it (group commit). */
  openGroup: EditGroup | undefined;
  dropped: boolean;
  readonly listeners: Set<() => void>;
  /** Recently used document records (durable state only: written once a batch is durable); this database's scope of the node's cache. */
  readonly cache: LruScope<DocRecord>;
  /**
   * Groups whose batch is on its way to disk, oldest first. The next group is built on their
   * records, bodies and counters and written after them (never if one of them failed), so
   * applying a group overlaps the write of the one before (docs/docdb.md).
   */
  readonly inFlight: InFlightGroup[];
  /** Bumped after every commit: a read that raced a commit must not fill the cache. */
  version: number;
  /**
   * Leaf bodies by `docId NUL rev`. A rev names its content, so an entry never goes stale;
   * reads check the rev is still a leaf before using it. This database's part of the node's
   * cache, bounded in bytes.
   */
  readonly bodies: LruScope<BodyRecord>;
  /**
   * Writes since the last compaction started that left an older revision's body to drop
   * (drives the automatic pass: a database only ever written with new documents has nothing
   * to compact, and a pass walks every record).
   */
  writesSinceCompact: number;
  /** The compaction in progress, if any: a second request joins it. */
  compaction: Promise<void> | undefined;
  /** How far it got, for `_active_tasks`. */
  compactionProgress: CompactionProgress | undefined;
}

/** A running compaction, as `_active_tasks` shows it (CouchDB's `database_compaction`). */
export interface CompactionProgress {
  readonly database: string;
  readonly startedMs: number;
  updatedMs: number;
  /** Document records walked so far, and how many the database had when it started. */
  docsDone: number;
  readonly docsTotal: number;
}

/** Documents one compaction slice rewrites in one batch, between two write groups. */
const COMPACT_SLICE_DOCS = 256;

/**
 * The node's document caches, shared by its databases (src/core/shared-lru.ts: a cache per
 * database bounded each one, not the node). Bytes of leaf bodies; bigger bodies are not cached.
 */
const BODY_CACHE_BYTES_MAX = 16 * 1024 * 1024;
const BODY_CACHE_ENTRY_BYTES_MAX = 256 * 1024;

/** Document records cached by the node (a record is a few hundred bytes). */
const RECORD_CACHE_MAX = 20_000;

export interface DocCaches {
  readonly records: SharedLru<DocRecord>;
  readonly bodies: SharedLru<BodyRecord>;
}

// lru-cache, not a Map in insertion order: evicting a Map's oldest entry again and again makes
// each `keys().next()` step over every slot deleted before it (~11 µs a write at 20k records).
function newDocCaches(): DocCaches {
  return {
    records: new SharedLru({ max: RECORD_CACHE_MAX }),
    bodies: new SharedLru({ maxSize: BODY_CACHE_BYTES_MAX, maxEntrySize: BODY_CACHE_ENTRY_BYTES_MAX }),
  };
}

function newState(record: DbRecord, caches: DocCaches): DbState {
  return {
    record,
    writes: new SerialQueue(),
    openGroup: undefined,
    dropped: false,
    listeners: new Set(),
    cache: caches.records.scope(),
    inFlight: [],
    version: 0,
    bodies: caches.bodies.scope(),
    writesSinceCompact: 0,
    compaction: undefined,
    compactionProgress: undefined,
  };
}

export interface DbInfo {
  db_name: string;
  doc_count: number;
  doc_del_count: number;
  update_seq: string;
  last_seq: string;
  disk_size: number;
  data_size: number;
  instance_start_time: string;
  revs_limit: number;
  compact_running: boolean;
}

export interface GetDocOptions {
  rev?: string;
  revs?: boolean;
  conflicts?: boolean;
  deletedConflicts?: boolean;
  /** Serve the winner even when it is a tombstone. */
  deleted?: boolean;
  /** `_revs_info`: the revision's ancestry with each body's status. */
  revsInfo?: boolean;
  /** Serve the leaf that descends from `rev` (CouchDB's `latest=true`), not `rev` itself. */
  latest?: boolean;
}

export interface ChangeEntry {
  seq: string;
  hlc: string;
  id: string;
  rev: string;
  changes: { rev: string }[];
  deleted: boolean;
  doc?: Record<string, unknown> | null;
}

export interface ChangesOptions {
  /** Exclusive lower bound; undefined = from the beginning. */
  since: Hlc | undefined;
  limit: number | undefined;
  descending: boolean;
  docIds: ReadonlySet<string> | undefined;
  includeDocs: boolean;
  /** Content filter (query or path patterns); `body` is undefined for a deletion. */
  filter?: ChangeFilter;
}

/** A filter on the document a change leaves behind (the query engine builds these). */
export interface ChangeFilter {
  test(docId: string, body: Readonly<Body> | undefined): boolean;
}

/** Changes entries read per native call. */
const CHANGES_BATCH = 1_024;

/** Changes are checked against their bodies in chunks of this many (one multi-get each). */
const FILTER_CHUNK = 256;

export interface AllDocsOptions {
  startkey?: string;
  endkey?: string;
  inclusiveEnd: boolean;
  limit?: number;
  skip: number;
  descending: boolean;
  includeDocs: boolean;
}

export interface AllDocsRow {
  id?: string;
  key: string;
  value?: { rev: string; deleted?: boolean };
  doc?: Record<string, unknown> | null;
  error?: string;
}

export interface DocEngineOptions {
  store: Store;
  hlc: HybridClock;
  log: Logger;
  clock: Clock;
  revsLimit: number;
  /** Start a compaction of a database after this many document writes to it; 0 = never. */
  compactAfterWrites: number;
  /** Tests: the write pipeline's sizes (default PIPELINE_DEFAULTS). */
  pipeline?: PipelineSizes;
}

/**
 * With the write thread, a database applies its next group while earlier groups' batches are
 * written (at most IN_FLIGHT_GROUPS_MAX of them). Two sizes decide when that pays:
 * - `partEdits`: a request of more edits is applied and written in parts of at most this
 *   many (each its own group), so even one client's large `_bulk_docs` overlaps applying a
 *   part with writing the one before; groups of small requests stop at this size too.
 * - `minEditsAhead`: a group starts before the ones ahead of it are durable only if they
 *   carry at least this many edits. Small groups (single PUTs) would gain little overlap and
 *   lose by starting smaller: more batches and fsyncs, more main-thread work per write
 *   (measured: -8 % PUTs with 16 clients when every group pipelined).
 */
export interface PipelineSizes {
  readonly partEdits: number;
  readonly minEditsAhead: number;
}

export const PIPELINE_DEFAULTS: PipelineSizes = { partEdits: 128, minEditsAhead: 64 };

const notFoundDb = (db: string) => new FirkinError('not_found', `database ${JSON.stringify(db)} does not exist`);

function errorResult(id: string | null, err: unknown): EditResult {
  if (err instanceof FirkinError) return { ok: false, id, error: err.code, message: err.message };
  throw err;
}

/** A write group as the engine builds it: the edits' overlay, and the groups in flight it is built on. */
interface Group extends WriteGroup {
  /** The in-flight groups this one is built on, oldest first (their overlays come before the store). */
  readonly ahead: readonly InFlightGroup[];
}

/** A write decided by a replicated shard's leader and applied from its log. */
export interface LoggedWrite {
  /** The leader's clock when it proposed: changes get sequences from here, above the last one. */
  readonly at: Hlc;
  /** Committed in the same batch (the shard's applied index, request ids), given the edits' results. */
  ops(results: readonly EditResult[]): readonly BatchOp[];
}

/** Sequences of a logged write: `at` or just above the database's last one, whichever is later, then one apart. */
function loggedSeqs(last: Hlc | undefined, at: Hlc): () => Hlc {
  let prev = last ?? HLC_ZERO;
  let first = true;
  return () => {
    const next = tickHlc(prev, 0);
    prev = first && compareHlc(at, next) > 0 ? at : next;
    first = false;
    return prev;
  };
}

const replicaOnly = (db: string, owner: string) =>
  new FirkinError('forbidden', `database ${JSON.stringify(db)} is a replica of the cluster's shard ${owner}: it changes only through its virtual database (/vdb)`);

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
}

function editsInFlight(state: DbState): number {
  let edits = 0;
  for (const f of state.inFlight) edits += f.edits;
  return edits;
}

/** Resolves once no group of the database is in flight (none can start meanwhile from inside its queue). */
async function settled(state: DbState): Promise<void> {
  while (state.inFlight.length > 0) await state.inFlight.at(-1)!.settled;
}


/**
 * The entries of a `_bulk_docs` request as edits (ids generated where missing), or as the
 * error result of an entry that is bad on its own. With `newEdits: false` each entry is a
 * foreign revision with its history.
 */
export function bulkEdits(docs: readonly unknown[], newEdits: boolean, generateId: () => string): (DocEdit | EditResult)[] {
  return docs.map((raw): Edit | EditResult => {
    // The entry's own _id names its error, even when the rest of it is what is wrong.
    let id: string | null = isPlainObject(raw) && typeof raw._id === 'string' ? raw._id : null;
    try {
      const doc = parseDoc(raw);
      id = doc.id ?? null;
      if (!newEdits) {
        if (doc.id === undefined) throw new FirkinError('bad_request', 'with new_edits: false every document needs _id');
        const docId = checkDocId(doc.id);
        if (doc.rev === undefined) throw new FirkinError('bad_request', 'with new_edits: false every document needs _rev');
        const path = doc.revisions === undefined ? { revs: [doc.rev], deleted: doc.deleted } : pathFromRevisions(doc.revisions, doc.deleted);
        if (path.revs[0] !== doc.rev || !isValidPath(path)) throw new FirkinError('bad_request', `_revisions of ${JSON.stringify(docId)} do not end in its _rev ${doc.rev}`);
        return { kind: 'replicate', docId, body: doc.body, attachments: doc.attachments, path };
      }
      const docId = doc.id === undefined ? generateId() : checkDocId(doc.id);
      id = docId;
      return { kind: 'update', docId, body: doc.body, attachments: doc.attachments, deleted: doc.deleted, rev: doc.rev };
    } catch (err) {
      return errorResult(id, err);
    }
  });
}

/** See `DocEngine.exportDb`. */
export interface DbExport {
  readonly record: Buffer;
  readonly ranges: readonly { readonly cf: ColumnFamily; readonly cursor: EntryCursor }[];
}

/**
 * The revision a read of `docId` names (`options.rev`, its latest leaf with `latest`, else the
 * winner) and whether it is a deletion; a 404 for a revision the tree lacks, or for a deleted
 * winner unless `deleted` asks for it.
 */
function revToRead(docId: string, rec: DocRecord, options: GetDocOptions): { rev: string; deleted: boolean } {
  const rev = options.rev === undefined ? rec.winner : options.latest ? (latestLeaves(rec.tree, options.rev)[0] ?? options.rev) : options.rev;
  const node = findRev(rec.tree, rev);
  if (node === undefined) throw new FirkinError('not_found', `revision ${rev} of ${JSON.stringify(docId)} not found`);
  if (options.rev === undefined && rec.deleted && options.deleted !== true) throw new FirkinError('not_found', `document ${JSON.stringify(docId)} is deleted`);
  return { rev, deleted: node.deleted };
}

/** The engine's read door, as the modules that only read documents see it. */
export type DocReader = Pick<DocEngine, 'has' | 'dbInfo' | 'getRecords' | 'getBodies' | 'scanRecords'>;

export class DocEngine {
  readonly #store: Store;
  readonly #hlc: HybridClock;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #revsLimit: number;
  /** Why a plain database may not take a name (undefined: it may): `reserveNames`. */
  #reserved: ((db: string) => string | undefined) | undefined;
  /** Resolves when `#reserved` can answer for a name (undefined: at once): `reserveNames`. */
  #reservedReady: ((db: string) => Promise<void> | undefined) | undefined;
  readonly #compactAfterWrites: number;
  readonly #pipeline: PipelineSizes;
  readonly #dbs = new Map<string, DbState>();
  readonly #caches = newDocCaches();

  /** The node's document caches (record entries; body bytes), for /metrics. */
  get caches(): DocCaches {
    return this.#caches;
  }
  readonly #indexers: WinnerIndexer[] = [];
  readonly #dropHooks: ((db: string) => Promise<void>)[] = [];
  readonly #commitHooks: ((db: string, ops: readonly BatchOp[]) => void)[] = [];
  readonly #closeListeners = new Set<() => void>();
  /** Create and drop run one at a time (a name cannot be created while it is being dropped). */
  readonly #catalogue = new SerialQueue();
  #closed = false;
  #stopping = false;

  private constructor(options: DocEngineOptions) {
    this.#store = options.store;
    this.#hlc = options.hlc;
    this.#log = options.log;
    this.#clock = options.clock;
    this.#revsLimit = options.revsLimit;
    this.#compactAfterWrites = options.compactAfterWrites;
    this.#pipeline = options.pipeline ?? PIPELINE_DEFAULTS;
  }

  /** Load the catalogue, finish drops a crash interrupted, and move the clock past every stored seq. */
  static async open(options: DocEngineOptions): Promise<DocEngine> {
    const engine = new DocEngine(options);
    const store = options.store;
    for await (const [key] of store.entries('system', keys.dropMarkers())) {
      const db = decodeKey(key)[1] as string;
      await engine.#clearData(db);
      await store.del('system', key, { sync: true });
    }
    for await (const [, value] of store.entries('system', keys.dbRecords())) {
      const record = decodeDbRecord(value);
      engine.#dbs.set(record.name, newState(record, engine.#caches));
      // Never issue a sequence at or below one already on disk, even if the wall clock went back.
      if (record.updateSeq !== undefined && engine.#hlc.update(record.updateSeq) === undefined) {
        options.log.warn({ db: record.name, seq: hlcToText(record.updateSeq) }, 'stored sequence is beyond the HLC max offset');
      }
    }
    return engine;
  }

  /** Register an indexer called inside every write batch whose winner changes. */
  addIndexer(indexer: WinnerIndexer): void {
    this.#indexers.push(indexer);
  }

  /**
   * Register a hook called synchronously after every durable batch that ran indexers, with
   * the very ops array the indexers filled (an indexer can keep in-memory state keyed by it).
   */
  onCommitted(hook: (db: string, ops: readonly BatchOp[]) => void): void {
    this.#commitHooks.push(hook);
  }

  /**
   * Run `fn` between two commits of `db` (as a job of its write queue): no write of that
   * database is in flight, so a snapshot taken inside sees exactly the committed batches.
   */
  atCommitBoundary<T>(db: string, fn: () => T): Promise<T> {
    const state = this.#state(db);
    let value: T;
    return this.#exclusive(state, async () => {
      value = fn();
    }).then(() => value);
  }

  /**
   * A consistent view of one database for a snapshot transfer or a digest: its record and
   * cursors over its ranges in every document column family (and `system` ranges given by
   * the caller), all opened between two commits. Read them at leisure, then close them.
   */
  exportDb(db: string, systemRanges: readonly { gte: Buffer; lt: Buffer }[] = []): Promise<DbExport> {
    const state = this.#state(db);
    return this.atCommitBoundary(db, () => ({
      record: encodeDbRecord(state.record),
      ranges: [
        ...DOC_CFS.map((cf) => ({ cf, cursor: this.#store.cursor(cf, keys.dbPrefix(db)) })),
        ...systemRanges.map((r) => ({ cf: 'system' as const, cursor: this.#store.cursor('system', r) })),
      ],
    }));
  }

  /**
   * Install a database from an export of another node's replica (its keys as they were
   * there): drop marker first, entries in batches, then the record and `finalOps` in one
   * synced batch. A crash half way leaves the marker, and the next start clears the rest.
   */
  async importDb(db: string, record: Buffer, entries: AsyncIterable<{ cf: ColumnFamily; entries: readonly [Buffer, Buffer][] }>, finalOps: readonly BatchOp[]): Promise<void> {
    this.#checkOpen();
    if (this.#dbs.has(db)) throw new FirkinError('conflict', `database ${JSON.stringify(db)} exists: drop it before loading a copy`);
    const decoded = decodeDbRecord(record);
    if (decoded.name !== db) throw new FirkinError('bad_request', `the copy is of ${JSON.stringify(decoded.name)}, not ${JSON.stringify(db)}`);
    await this.#store.put('system', keys.dropMarker(db), Buffer.alloc(0), { sync: true });
    for (const cf of DOC_CFS) await this.#store.clearRange(cf, keys.dbPrefix(db));
    const range = keys.dbPrefix(db);
    for await (const chunk of entries) {
      if (!DOC_CFS.includes(chunk.cf)) throw new FirkinError('bad_request', `a database copy holds no ${chunk.cf} entries`);
      if (chunk.entries.some(([key]) => Buffer.compare(key, range.gte) < 0 || Buffer.compare(key, range.lt) >= 0)) throw new FirkinError('bad_request', `a copy of ${JSON.stringify(db)} holds a key of another database`);
      await this.#store.batch(chunk.entries.map(([key, value]) => ({ type: 'put', cf: chunk.cf, key, value })), { sync: false });
    }
    await this.#store.batch([{ type: 'put', cf: 'system', key: keys.dbRecord(db), value: record }, { type: 'del', cf: 'system', key: keys.dropMarker(db) }, ...finalOps], { sync: true });
    this.#dbs.set(db, newState(decoded, this.#caches));
    if (decoded.updateSeq !== undefined) this.#hlc.update(decoded.updateSeq);
  }

  /** Register cleanup run when a database is dropped (after its ranges are cleared). */
  onDrop(hook: (db: string) => Promise<void>): void {
    this.#dropHooks.push(hook);
  }

  /** Called when the engine closes: streams end so shutdown is not held up. Returns an unsubscribe. */
  onClose(listener: () => void): () => void {
    this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  get closed(): boolean {
    return this.#closed;
  }

  // ---- catalogue -------------------------------------------------------------------------

  listDbs(): string[] {
    return [...this.#dbs.keys()].sort();
  }

  /**
   * The databases users made, in order: `listDbs` less a cluster node's shard replicas (a VDB's
   * shards are its own, listed under /vdb; only its log writes them).
   */
  userDbs(): string[] {
    return this.listDbs().filter((db) => this.#dbs.get(db)!.record.owner === undefined);
  }

  has(db: string): boolean {
    const state = this.#dbs.get(db);
    return state !== undefined && !state.dropped;
  }

  #state(db: string): DbState {
    const state = this.#dbs.get(db);
    if (state === undefined || state.dropped) throw notFoundDb(db);
    return state;
  }

  /** Throws not_found when the database does not exist. */
  assertDb(db: string): void {
    this.#state(db);
  }

  #serialCatalogue<T>(fn: () => Promise<T>): Promise<T> {
    return this.#catalogue.run(fn);
  }

  /**
   * Names a plain database may not take, and why (a cluster node's: its VDBs' shard names, whose
   * replicas could not open beside a plain database of the same name). `ready`: what to wait for
   * before asking about a name (a cluster node catches its copy of the metadata up, so a VDB made
   * through another node is known here); waited outside the catalogue's queue.
   */
  reserveNames(reserved: (db: string) => string | undefined, ready?: (db: string) => Promise<void> | undefined): void {
    this.#reserved = reserved;
    this.#reservedReady = ready;
  }

  /**
   * A new database. `owner` makes it a replica of a cluster shard (only its log writes it, and
   * its creation time is the shard's, the same on every replica).
   */
  createDb(db: string, replica?: { owner: string; createdMs: number }): Promise<DbInfo> {
    checkDbName(db);
    const ready = replica === undefined ? this.#reservedReady?.(db) : undefined;
    return ready === undefined ? this.#createDb(db, replica) : ready.then(() => this.#createDb(db, replica));
  }

  #createDb(db: string, replica: { owner: string; createdMs: number } | undefined): Promise<DbInfo> {
    return this.#serialCatalogue(async () => {
      this.#checkOpen();
      if (this.#dbs.has(db)) throw new FirkinError('conflict', `database ${JSON.stringify(db)} already exists`);
      const reserved = replica === undefined ? this.#reserved?.(db) : undefined;
      if (reserved !== undefined) throw new FirkinError('conflict', reserved);
      const nowMs = replica?.createdMs ?? this.#clock.nowMs();
      const record: DbRecord = {
        name: db,
        createdMs: nowMs,
        instanceStartTime: String(nowMs * 1000),
        revsLimit: this.#revsLimit,
        docCount: 0,
        delCount: 0,
        updateSeq: undefined,
        dataBytes: 0,
        ...(replica === undefined ? {} : { owner: replica.owner }),
      };
      await this.#store.put('system', keys.dbRecord(db), encodeDbRecord(record), { sync: true });
      this.#dbs.set(db, newState(record, this.#caches));
      return this.#info(record);
    });
  }

  /** Drop a database; a shard replica's only with its owner's name. */
  deleteDb(db: string, owner?: string): Promise<void> {
    return this.#serialCatalogue(async () => {
      this.#checkOpen();
      const state = this.#state(db);
      if (state.record.owner !== undefined && state.record.owner !== owner) throw replicaOnly(db, state.record.owner);
      // Let queued writes finish, then refuse new ones: the drop is the last thing the queue runs.
      await this.#exclusive(state, async () => {
        state.dropped = true;
        await this.#store.batch(
          [
            { type: 'del', cf: 'system', key: keys.dbRecord(db) },
            { type: 'put', cf: 'system', key: keys.dropMarker(db), value: Buffer.alloc(0) },
          ],
          { sync: true },
        );
      });
      this.#dbs.delete(db);
      state.cache.clear();
      state.bodies.clear();
      for (const listener of state.listeners) listener();
      await this.#clearData(db);
      await this.#store.del('system', keys.dropMarker(db), { sync: true });
    });
  }

  async #clearData(db: string): Promise<void> {
    for (const cf of DOC_CFS) await this.#store.clearRange(cf, keys.dbPrefix(db));
    for (const hook of this.#dropHooks) await hook(db);
  }

  dbInfo(db: string): DbInfo {
    const state = this.#state(db);
    return { ...this.#info(state.record), compact_running: state.compaction !== undefined };
  }

  #info(record: DbRecord): DbInfo {
    const seq = hlcToText(record.updateSeq ?? HLC_ZERO);
    return {
      db_name: record.name,
      doc_count: record.docCount,
      doc_del_count: record.delCount,
      update_seq: seq,
      last_seq: seq,
      disk_size: record.dataBytes,
      data_size: record.dataBytes,
      instance_start_time: record.instanceStartTime,
      revs_limit: record.revsLimit,
      compact_running: false,
    };
  }

  /** The database's last sequence (HLC_ZERO when nothing was written). */
  lastSeq(db: string): Hlc {
    return this.#state(db).record.updateSeq ?? HLC_ZERO;
  }

  // ---- writes ----------------------------------------------------------------------------

  #checkOpen(): void {
    if (this.#closed) throw new FirkinError('unavailable', 'the document engine is shutting down');
  }

  // Async so a refusal is a rejection, as before; the job is still queued synchronously.
  async #exclusive(state: DbState, run: () => Promise<void>): Promise<void> {
    this.#checkOpen();
    // Edits queued after this job must not jump ahead of it by joining an earlier group.
    state.openGroup = undefined;
    return state.writes.run(async () => {
      await settled(state); // it sees every group before it durable, and no later one
      return run();
    });
  }

  /** The shard group owning a replica database, if it is one. */
  ownerOf(db: string): string | undefined {
    return this.#state(db).record.owner;
  }

  async #submit(db: string, edits: readonly (Edit | EditResult)[]): Promise<EditResult[]> {
    const state = this.#state(db);
    this.#checkOpen();
    if (state.record.owner !== undefined) throw replicaOnly(db, state.record.owner);
    if (!this.#store.pipelinesWrites) return this.#enqueue(state, edits, LIMITS.groupEditsMax);
    const { partEdits } = this.#pipeline;
    if (edits.length <= partEdits) return this.#enqueue(state, edits, partEdits);
    // In parts of near-equal size, each its own group, queued in order in this same turn.
    const count = Math.ceil(edits.length / partEdits);
    const size = Math.ceil(edits.length / count);
    const parts: Promise<EditResult[]>[] = [];
    for (let at = 0; at < edits.length; at += size) parts.push(this.#enqueue(state, edits.slice(at, at + size), partEdits));
    return (await Promise.all(parts)).flat();
  }

  /** Queue one request's edits into the database's open group, or a new one past `cap` edits. */
  #enqueue(state: DbState, edits: readonly (Edit | EditResult)[], cap: number): Promise<EditResult[]> {
    let group = state.openGroup;
    // A request (or part) is never split here, so a group may exceed the cap only by its first.
    if (group === undefined || group.edits + edits.length > cap) {
      const requests: (readonly (Edit | EditResult)[])[] = [];
      const created: EditGroup = {
        requests,
        edits: 0,
        done: state.writes
          .run(async () => {
            // Still taking requests meanwhile: while the write thread has its hands full, or
            // while what it holds is too small to be worth overlapping (PipelineSizes).
            while (state.inFlight.length >= IN_FLIGHT_GROUPS_MAX || (state.inFlight.length > 0 && editsInFlight(state) < this.#pipeline.minEditsAhead)) {
              await state.inFlight[0]!.settled;
            }
            if (state.openGroup === created) state.openGroup = undefined; // started: later requests start another
            if (state.dropped) throw notFoundDb(state.record.name);
            if (this.#store.pipelinesWrites) return this.#startGroup(state, requests, created.edits);
            return { results: await this.#commitGroup(state, requests), durable: Promise.resolve() };
          })
          .then(({ results, durable }) => durable.then(() => results)),
      };
      state.openGroup = group = created;
    }
    const index = group.requests.push(edits) - 1;
    group.edits += edits.length;
    return group.done.then((results) => results[index]!);
  }

  /**
   * Apply the edits of one committed log entry of a shard replica: the same edits on the same
   * state give every replica the same tree, winner, conflicts and sequences. One synced batch
   * with `logged.ops`, even when no edit changed anything.
   */
  async applyLogged(db: string, edits: readonly Edit[], logged: LoggedWrite): Promise<EditResult[]> {
    const state = this.#state(db);
    this.#checkOpen();
    state.openGroup = undefined;
    const [results] = await state.writes.run(async () => {
      await settled(state);
      if (state.dropped) throw notFoundDb(state.record.name);
      return this.#commitGroup(state, [edits], logged);
    });
    return results!;
  }

  /** Read, apply and write one group, answering once it is durable (no group in flight). */
  async #commitGroup(state: DbState, jobs: readonly (readonly (Edit | EditResult)[])[], logged?: LoggedWrite): Promise<EditResult[][]> {
    const { g, results } = await this.#buildGroup(state, jobs, logged);
    if (g.ops.length === 0 && logged !== undefined) {
      await this.#store.batch([...logged.ops(results[0] ?? [])], { sync: true });
    } else if (g.ops.length > 0) {
      const record = this.#groupRecord(g);
      if (logged !== undefined) g.ops.push(...logged.ops(results[0] ?? []));
      await this.#store.batch(g.ops, { sync: true });
      this.#committed(state, g, record);
    }
    return results;
  }

  /**
   * Read and apply one group on top of the groups in flight, hand its batch to the write
   * thread behind theirs, and return its results with the promise of its durability (which
   * also rejects when a group it was built on failed: its batch is then never written).
   */
  async #startGroup(state: DbState, jobs: readonly (readonly (Edit | EditResult)[])[], edits: number): Promise<{ results: EditResult[][]; durable: Promise<void> }> {
    const { g, results } = await this.#buildGroup(state, jobs, undefined);
    const before = g.ahead.at(-1);
    // Nothing to write, but the answers were read from the groups in flight: they hold only
    // once those are durable (a conflict with a write that then failed was no conflict).
    if (g.ops.length === 0) return { results, durable: before?.durable ?? Promise.resolve() };
    const record = this.#groupRecord(g);
    const { ticket, durable: written } = this.#store.batchAfter(g.ops, before?.ticket);
    // Assigned below, before the write can answer (the function runs to its first await).
    let entry!: InFlightGroup;
    const durable = (async () => {
      try {
        await written;
        await before?.settled; // the caches and the record take the groups in batch order
        this.#committed(state, g, record);
      } finally {
        state.inFlight.splice(state.inFlight.indexOf(entry), 1);
      }
    })();
    const settled = durable.then(
      () => undefined,
      () => undefined,
    );
    entry = { g, edits, record, ticket, settled, durable };
    state.inFlight.push(entry);
    return { results, durable };
  }

  /** The group's database record, appended to its batch. */
  #groupRecord(g: Group): DbRecord {
    const record: DbRecord = { ...g.base, docCount: g.docCount, delCount: g.delCount, dataBytes: g.dataBytes, updateSeq: g.updateSeq };
    g.ops.push({ type: 'put', cf: 'system', key: keys.dbRecord(g.db), value: encodeDbRecord(record) });
    return record;
  }

  /** A group's batch is durable: what it wrote becomes the database's state. */
  #committed(state: DbState, g: Group, record: DbRecord): void {
    for (const hook of this.#commitHooks) hook(g.db, g.ops);
    state.record = record;
    state.version++;
    for (const id of g.changed) state.cache.set(id, g.records.get(id)!);
    for (const listener of state.listeners) listener();
    state.writesSinceCompact += g.compactable;
    // A replica compacts when its log says so, never on a local count.
    if (state.record.owner === undefined && this.#compactAfterWrites > 0 && state.writesSinceCompact >= this.#compactAfterWrites && state.compaction === undefined) {
      // Not awaited: the pass queues its slices behind this group and runs on its own.
      void this.compact(g.db).catch((err: unknown) => this.#log.error({ db: g.db, err }, 'automatic compaction failed'));
    }
  }

  /** Read what a group's edits need and apply them, in memory; nothing is written yet. */
  async #buildGroup(state: DbState, jobs: readonly (readonly (Edit | EditResult)[])[], logged: LoggedWrite | undefined): Promise<{ g: Group; results: EditResult[][] }> {
    const db = state.record.name;
    // Taken now: groups that settle while this one reads stay its base (their data is the same).
    const ahead = [...state.inFlight];
    const base = ahead.at(-1)?.record ?? state.record;
    const docIds = [...new Set(jobs.flatMap((edits) => edits.flatMap((e) => ('kind' in e ? [e.docId] : []))))];
    const records = new Map<string, DocRecord | undefined>();
    // Newest first: a group in flight, then the cache (the writer is the only one changing
    // records, so its entries are current), then the store.
    const unread: string[] = [];
    for (const id of docIds) {
      const inFlight = ahead.findLast((f) => f.g.changed.has(id));
      if (inFlight !== undefined) records.set(id, inFlight.g.records.get(id));
      else {
        const cached = state.cache.get(id);
        if (cached !== undefined) records.set(id, cached);
        else unread.push(id);
      }
    }
    const raw = await this.#store.getMany('docs', unread.map((id) => keys.doc(db, id)));
    unread.forEach((id, i) => records.set(id, raw[i] === undefined ? undefined : decodeDocRecord(raw[i]!)));
    // The bodies edits read (a parent's, the old winner's for the indexes), read in one go so
    // the edits below run without awaiting anything. Anything else (a conflict that becomes
    // the winner) is read when needed.
    const wanted = new Map<string, { id: string; rev: string }>();
    const want = (id: string, rev: string) => wanted.set(bodyKey(id, rev), { id, rev });
    for (const [id, rec] of records) if (rec !== undefined) want(id, rec.winner);
    for (const edits of jobs) for (const e of edits) if ('kind' in e && e.kind !== 'replicate' && e.rev !== undefined && records.get(e.docId) !== undefined) want(e.docId, e.rev);
    const wantedRevs = [...wanted.values()];
    const leafRaw = await this.#store.getMany('revs', wantedRevs.map(({ id, rev }) => keys.body(db, id, rev)));
    const leafBodies = new Map(wantedRevs.map(({ id, rev }, i) => [bodyKey(id, rev), leafRaw[i]]));
    const bodies = new Map<string, BodyRecord | null>();
    const g: Group = {
      db,
      base,
      changed: new Set<string>(),
      records,
      bodies,
      ahead,
      readBody: this.#bodyReader(db, bodies, ahead, leafBodies),
      ops: [],
      docCount: base.docCount,
      delCount: base.delCount,
      dataBytes: base.dataBytes,
      updateSeq: base.updateSeq,
      compactable: 0,
      nextSeq: logged === undefined ? () => this.#hlc.now() : loggedSeqs(base.updateSeq, logged.at),
    };
    const results: EditResult[][] = [];
    for (const edits of jobs) {
      const out: EditResult[] = [];
      for (const edit of edits) {
        if (!('kind' in edit)) {
          out.push(edit); // an entry rejected before queueing keeps its place in the results
          continue;
        }
        try {
          out.push(applyEdit(g, edit, this.#indexers));
        } catch (err) {
          out.push(errorResult(edit.docId, err));
        }
      }
      results.push(out);
    }
    return { g, results };
  }

  /**
   * A group's body reader: the newest overlay that knows the body first (this group's, then the
   * groups in flight; null: that group removed it), then the bodies read ahead, then the store.
   */
  #bodyReader(db: string, bodies: Map<string, BodyRecord | null>, ahead: readonly InFlightGroup[], leafBodies: Map<string, Buffer | undefined>): WriteGroup['readBody'] {
    return (docId, rev) => {
      const key = bodyKey(docId, rev);
      const overlay = bodies.has(key) ? bodies : ahead.findLast((f) => f.g.bodies.has(key))?.g.bodies;
      if (overlay !== undefined) return overlay.get(key) ?? undefined;
      // Not read ahead (rare: a conflict becoming the winner): read here, on this thread.
      const buf = leafBodies.has(key) ? leafBodies.get(key) : this.#store.getManySync('revs', [keys.body(db, docId, rev)])[0];
      return buf === undefined ? undefined : decodeBody(buf);
    };
  }

  async putDoc(db: string, docId: string, doc: ParsedDoc, rev: string | undefined): Promise<EditResult & { ok: true }> {
    checkDocId(docId);
    const [result] = await this.#submit(db, [{ kind: 'update', docId, body: doc.body, attachments: doc.attachments, deleted: doc.deleted, rev }]);
    return this.#unwrap(result!);
  }

  async deleteDoc(db: string, docId: string, rev: string): Promise<EditResult & { ok: true }> {
    checkDocId(docId);
    const [result] = await this.#submit(db, [{ kind: 'update', docId, body: {}, attachments: undefined, deleted: true, rev }]);
    return this.#unwrap(result!);
  }

  async putAttachment(db: string, docId: string, name: string, rev: string | undefined, blob: Blob | undefined): Promise<EditResult & { ok: true }> {
    checkDocId(docId);
    checkAttachmentName(name);
    const [result] = await this.#submit(db, [{ kind: 'attach', docId, name, rev, blob }]);
    return this.#unwrap(result!);
  }

  #unwrap(result: EditResult): EditResult & { ok: true } {
    if (result.ok) return result;
    throw new FirkinError(result.error as FirkinError['code'], result.message);
  }

  /**
   * `_bulk_docs`: one result per entry, in order. With `newEdits: false` each entry is a
   * foreign revision (`_rev`, optional `_revisions` history) merged into the tree: the path
   * the replicator uses. A bad entry fails alone; all good ones commit in one batch.
   */
  async bulkDocs(db: string, docs: readonly unknown[], newEdits: boolean, generateId: () => string): Promise<EditResult[]> {
    this.#state(db);
    const edits = bulkEdits(docs, newEdits, generateId);
    return this.#submit(db, edits);
  }

  /** The replication write of one document: merge `path` (newest first) with its leaf body. */
  async putRevision(db: string, docId: string, doc: ParsedDoc, path: RevPath): Promise<EditResult> {
    checkDocId(docId);
    if (!isValidPath(path)) throw new FirkinError('bad_request', 'invalid revision history');
    const [result] = await this.#submit(db, [{ kind: 'replicate', docId, body: doc.body, attachments: doc.attachments, path }]);
    return result!;
  }

  /**
   * Remove documents as if they had never been written: record, leaf bodies, attachment
   * content, changes entry and index postings, in one batch. VDB rebalancing moves documents
   * between shard databases with this (a tombstone left behind would shadow a document that
   * later moves back). Returns how many documents were purged.
   */
  async purge(db: string, docIds: readonly string[], owner?: string): Promise<number> {
    const state = this.#state(db);
    // A replica's database is purged only by its group (a split's cleanup entry).
    if (state.record.owner !== undefined && state.record.owner !== owner) throw replicaOnly(db, state.record.owner);
    let purged = 0;
    await this.#exclusive(state, async () => {
      const raw = await this.#store.getMany('docs', docIds.map((id) => keys.doc(db, id)));
      const ops: BatchOp[] = [];
      let { docCount, delCount, dataBytes } = state.record;
      for (let i = 0; i < docIds.length; i++) {
        const buf = raw[i];
        if (buf === undefined) continue;
        const docId = docIds[i]!;
        const rec = decodeDocRecord(buf);
        const winnerBody = !rec.deleted && this.#indexers.length > 0 ? (await this.#body(db, docId, rec.winner))?.body : undefined;
        const digests = digestsOfAll(rec.leaves, rec.kept);
        for (const [rev, info] of [...Object.entries(rec.leaves), ...Object.entries(rec.kept ?? {})]) {
          ops.push({ type: 'del', cf: 'revs', key: keys.body(db, docId, rev) });
          dataBytes -= info.b;
        }
        for (const [digest, length] of Object.entries(digests)) {
          dataBytes -= length;
          for (let c = 0; c < chunkCount(length); c++) ops.push({ type: 'del', cf: 'att', key: keys.att(db, docId, digest, c) });
        }
        ops.push({ type: 'del', cf: 'seq', key: keys.seq(db, rec.seq) });
        ops.push({ type: 'del', cf: 'docs', key: keys.doc(db, docId) });
        if (rec.deleted) delCount--;
        else docCount--;
        if (winnerBody !== undefined) {
          const change: WinnerChange = { db, docId, before: winnerBody, after: undefined, seq: this.#hlc.now() };
          for (const indexer of this.#indexers) indexer(change, ops);
        }
        purged++;
      }
      if (ops.length === 0) return;
      const record: DbRecord = { ...state.record, docCount, delCount, dataBytes };
      ops.push({ type: 'put', cf: 'system', key: keys.dbRecord(db), value: encodeDbRecord(record) });
      await this.#store.batch(ops, { sync: true });
      for (const hook of this.#commitHooks) hook(db, ops);
      state.record = record;
      // Purged records must leave the record cache, and reads racing this batch must not refill it.
      for (const docId of docIds) state.cache.delete(docId);
      state.version++;
      for (const listener of state.listeners) listener();
    });
    return purged;
  }

  // ---- compaction ------------------------------------------------------------------------

  /**
   * Drop every kept non-leaf body (CouchDB's compaction; stemming to revs_limit already
   * happens at write time) and the attachment content only those bodies referred to. Runs
   * in slices of COMPACT_SLICE_DOCS documents, each one exclusive job of the write queue and
   * one synced batch, so writes wait at most one slice and a crash leaves every document
   * either compacted or not. Resolves when the pass is done; a call during a pass joins it.
   */
  compact(db: string): Promise<void> {
    const state = this.#state(db);
    if (state.record.owner !== undefined) throw replicaOnly(db, state.record.owner);
    return this.#compact(state);
  }

  /** A shard replica's compaction, applied from its log at the same index on every replica. */
  compactLogged(db: string): Promise<void> {
    return this.#compact(this.#state(db));
  }

  #compact(state: DbState): Promise<void> {
    const db = state.record.name;
    if (state.compaction !== undefined) return state.compaction;
    state.writesSinceCompact = 0;
    const startedMs = this.#clock.nowMs();
    const progress: CompactionProgress = { database: db, startedMs, updatedMs: startedMs, docsDone: 0, docsTotal: state.record.docCount + state.record.delCount };
    state.compactionProgress = progress;
    const run = (async () => {
      this.#log.info({ db }, 'compaction started');
      let after: Buffer | undefined;
      let docsCompacted = 0;
      let bytesFreed = 0;
      for (;;) {
        if (state.dropped || this.#closed) break;
        let slice: { next: Buffer | undefined; docs: number; bytes: number; walked: number } = { next: undefined, docs: 0, bytes: 0, walked: 0 };
        await this.#exclusive(state, async () => {
          slice = await this.#compactSlice(state, after);
        });
        docsCompacted += slice.docs;
        bytesFreed += slice.bytes;
        progress.docsDone += slice.walked;
        progress.updatedMs = this.#clock.nowMs();
        if (slice.next === undefined) break;
        after = slice.next;
      }
      this.#log.info({ db, docsCompacted, bytesFreed, tookMs: this.#clock.nowMs() - startedMs }, 'compaction finished');
    })().finally(() => {
      state.compaction = undefined;
      state.compactionProgress = undefined;
    });
    state.compaction = run;
    return run;
  }

  /** One slice: the next COMPACT_SLICE_DOCS document records after `after`, rewritten without kept bodies. */
  async #compactSlice(state: DbState, after: Buffer | undefined): Promise<{ next: Buffer | undefined; docs: number; bytes: number; walked: number }> {
    const db = state.record.name;
    if (state.dropped) return { next: undefined, docs: 0, bytes: 0, walked: 0 };
    const prefix = keys.docs(db);
    const range = after === undefined ? { gte: prefix.gte, lt: prefix.lt } : { gt: after, lt: prefix.lt };
    const ops: BatchOp[] = [];
    const rewritten = new Map<string, DocRecord>();
    let scanned = 0;
    let last: Buffer | undefined;
    let freed = 0;
    for await (const [key, value] of this.#store.entries('docs', range)) {
      last = key;
      scanned++;
      const rec = decodeDocRecord(value);
      if (rec.kept === undefined) {
        if (scanned >= COMPACT_SLICE_DOCS) break;
        continue;
      }
      const docId = decodeKey(key)[1] as string;
      const beforeDigests = digestsOfAll(rec.leaves, rec.kept);
      const afterDigests = digestsOfAll(rec.leaves);
      for (const [rev, info] of Object.entries(rec.kept)) {
        ops.push({ type: 'del', cf: 'revs', key: keys.body(db, docId, rev) });
        freed += info.b;
      }
      for (const [digest, length] of Object.entries(beforeDigests)) {
        if (afterDigests[digest] !== undefined) continue;
        freed += length;
        for (let c = 0; c < chunkCount(length); c++) ops.push({ type: 'del', cf: 'att', key: keys.att(db, docId, digest, c) });
      }
      // The seq stays: compaction changes no revision, so it is not a change.
      const compacted: DocRecord = { tree: rec.tree, winner: rec.winner, deleted: rec.deleted, seq: rec.seq, leaves: rec.leaves };
      ops.push({ type: 'put', cf: 'docs', key, value: encodeDocRecord(compacted) });
      rewritten.set(docId, compacted);
      if (scanned >= COMPACT_SLICE_DOCS) break;
    }
    const next = scanned >= COMPACT_SLICE_DOCS ? last : undefined;
    if (ops.length === 0) return { next, docs: 0, bytes: 0, walked: scanned };
    const record: DbRecord = { ...state.record, dataBytes: state.record.dataBytes - freed };
    ops.push({ type: 'put', cf: 'system', key: keys.dbRecord(db), value: encodeDbRecord(record) });
    await this.#store.batch(ops, { sync: true });
    state.record = record;
    state.version++;
    for (const [docId, rec] of rewritten) if (state.cache.has(docId)) state.cache.set(docId, rec);
    return { next, docs: rewritten.size, bytes: freed, walked: scanned };
  }

  // ---- reads -----------------------------------------------------------------------------

  async getRecord(db: string, docId: string): Promise<DocRecord | undefined> {
    const state = this.#state(db);
    const cached = state.cache.get(docId);
    if (cached !== undefined) return cached;
    const version = state.version;
    const buf = await this.#store.get('docs', keys.doc(db, docId));
    const rec = buf === undefined ? undefined : decodeDocRecord(buf);
    // Only when no commit happened meanwhile: a read that raced a write may hold the old record.
    if (rec !== undefined && state.version === version && !state.dropped) state.cache.set(docId, rec);
    return rec;
  }

  /** A leaf's body through the node's body cache (the caller checked `rev` is a leaf). */
  async #leafBody(state: DbState, db: string, docId: string, rev: string): Promise<BodyRecord | undefined> {
    const key = bodyKey(docId, rev);
    const hit = state.bodies.get(key);
    if (hit !== undefined) return hit;
    const buf = await this.#store.get('revs', keys.body(db, docId, rev));
    if (buf === undefined) return undefined;
    const body = decodeBody(buf);
    if (buf.length <= BODY_CACHE_ENTRY_BYTES_MAX && !state.bodies.has(key)) {
      // Served documents share nested values with the cache: freeze so a caller that
      // mutates one fails loudly instead of corrupting later reads.
      deepFreeze(body);
      state.bodies.set(key, body, Math.max(1, buf.length));
    }
    return body;
  }

  async #body(db: string, docId: string, rev: string): Promise<BodyRecord | undefined> {
    const buf = await this.#store.get('revs', keys.body(db, docId, rev));
    return buf === undefined ? undefined : decodeBody(buf);
  }

  /** The stored body of any revision: a leaf's through the cache, a kept non-leaf's from disk. */
  async #revBody(db: string, docId: string, rec: DocRecord, rev: string): Promise<BodyRecord | undefined> {
    if (isLeaf(rec.tree, rev)) return this.#leafBody(this.#state(db), db, docId, rev);
    // Only while the record lists it: compaction deletes the body and the entry in one batch.
    return rec.kept?.[rev] === undefined ? undefined : this.#body(db, docId, rev);
  }

  /** The document as served: body + `_id`, `id`, `_rev` (+ `_deleted`, `_attachments` stubs, options). */
  async getDoc(db: string, docId: string, options: GetDocOptions = {}): Promise<Record<string, unknown>> {
    const state = this.#state(db);
    const rec = state.cache.get(docId) ?? (await this.getRecord(db, docId));
    if (rec === undefined) throw notFoundDoc(docId);
    const { rev, deleted } = revToRead(docId, rec, options);
    const stored = (isLeaf(rec.tree, rev) ? state.bodies.get(bodyKey(docId, rev)) : undefined) ?? (await this.#revBody(db, docId, rec, rev));
    if (stored === undefined) throw new FirkinError('not_found', `revision ${rev} of ${JSON.stringify(docId)} is not kept (its body was compacted away or never arrived)`);
    return this.#answerGet(docId, rec, rev, deleted, stored, options);
  }

  /**
   * `getDoc` answered from the record and body caches alone, or undefined when it would have to
   * read. A GET of a cached document then makes no promise at all (each one an allocation and a
   * microtask turn, on the most common request there is).
   */
  getDocNow(db: string, docId: string, options: GetDocOptions = {}): Record<string, unknown> | undefined {
    const state = this.#state(db);
    const rec = state.cache.get(docId);
    if (rec === undefined) return undefined;
    const { rev, deleted } = revToRead(docId, rec, options);
    const stored = isLeaf(rec.tree, rev) ? state.bodies.get(bodyKey(docId, rev)) : undefined;
    return stored === undefined ? undefined : this.#answerGet(docId, rec, rev, deleted, stored, options);
  }

  /** A read revision with what `options` add to it. */
  #answerGet(docId: string, rec: DocRecord, rev: string, deleted: boolean, stored: BodyRecord, options: GetDocOptions): Record<string, unknown> {
    const out = this.#render(docId, rev, deleted, stored);
    if (options.revs) out._revisions = revisions(rec.tree, rev);
    if (options.revsInfo) out._revs_info = revsInfo(rec.tree, rev, (r) => isLeaf(rec.tree, r) || rec.kept?.[r] !== undefined);
    if (options.conflicts) {
      const c = conflicts(rec.tree);
      if (c.length > 0) out._conflicts = c;
    }
    if (options.deletedConflicts) {
      const c = deletedConflicts(rec.tree);
      if (c.length > 0) out._deleted_conflicts = c;
    }
    return out;
  }

  /**
   * Many revisions, each as `getDoc(db, id, { rev, revs: true })` serves it less its `id` alias (undefined where
   * the document, the revision or its stored body is not here), in two reads for all of them:
   * the records, then the bodies. Replication's `_bulk_get` asks for hundreds at a time.
   * Bodies read here do not enter the body cache (a replication would sweep it out).
   */
  async getRevisions(db: string, wanted: readonly { id: string; rev: string }[]): Promise<(Record<string, unknown> | undefined)[]> {
    const recs = await this.getRecords(db, wanted.map((w) => w.id));
    // A non-leaf's body only while the record lists it (compaction deletes both in one batch).
    const kept = wanted.map(({ rev }, i) => recs[i] !== undefined && findRev(recs[i]!.tree, rev) !== undefined && (isLeaf(recs[i]!.tree, rev) || recs[i]!.kept?.[rev] !== undefined));
    const readable = wanted.filter((_, i) => kept[i]);
    const found = await this.#storedBodies(this.#state(db), db, readable);
    let next = 0;
    return wanted.map(({ id, rev }, i) => {
      const rec = recs[i];
      const body = kept[i] ? found[next++] : undefined;
      if (rec === undefined || body === undefined) return undefined;
      // Replication's shape: `_id` alone (the single-document GET's `id` alias is not sent on).
      const out = this.#render(id, rev, findRev(rec.tree, rev)!.deleted, body, false);
      out._revisions = revisions(rec.tree, rev);
      return out;
    });
  }

  #render(docId: string, rev: string, deleted: boolean, stored: BodyRecord, withIdAlias = true): Record<string, unknown> {
    const out: Record<string, unknown> = withIdAlias ? { _id: docId, id: docId, _rev: rev, ...stored.body } : { _id: docId, _rev: rev, ...stored.body };
    if (deleted) out._deleted = true;
    if (stored.attachments !== undefined) {
      out._attachments = Object.fromEntries(Object.entries(stored.attachments).map(([name, m]) => [name, { ...m, stub: true }]));
    }
    return out;
  }

  /** Attachment metadata of a revision (default the winner) and a chunk reader. */
  async getAttachment(db: string, docId: string, name: string, rev: string | undefined): Promise<{ meta: AttachmentMeta; rev: string; chunks: () => AsyncGenerator<Buffer> }> {
    const rec = await this.getRecord(db, docId);
    if (rec === undefined || (rev === undefined && rec.deleted)) throw notFoundDoc(docId);
    const at = rev ?? rec.winner;
    const stored = findRev(rec.tree, at) === undefined ? undefined : await this.#body(db, docId, at);
    if (stored === undefined) throw new FirkinError('not_found', `revision ${at} of ${JSON.stringify(docId)} not found`);
    const meta = ownValue(stored.attachments, name);
    if (meta === undefined) throw new FirkinError('not_found', `attachment ${JSON.stringify(name)} of ${JSON.stringify(docId)} not found`);
    const store = this.#store;
    return {
      meta,
      rev: at,
      async *chunks() {
        for await (const [, value] of store.entries('att', keys.attBlob(db, docId, meta.digest))) yield value;
      },
    };
  }

  /** `_revs_diff`: per document, the revisions this database lacks. */
  async revsDiff(db: string, request: Readonly<Record<string, readonly string[]>>): Promise<Record<string, { missing: string[]; possible_ancestors?: string[] }>> {
    this.#state(db);
    const ids = Object.keys(request);
    const raw = await this.#store.getMany('docs', ids.map((id) => keys.doc(db, id)));
    const out: Record<string, { missing: string[]; possible_ancestors?: string[] }> = {};
    ids.forEach((id, i) => {
      const revs = request[id]!.filter(isRev);
      const tree = raw[i] === undefined ? [] : decodeDocRecord(raw[i]!).tree;
      const diff = revsDiff(tree, revs);
      if (diff.missing.length === 0) return;
      out[id] = diff.possibleAncestors.length > 0 ? { missing: diff.missing, possible_ancestors: diff.possibleAncestors } : { missing: diff.missing };
    });
    return out;
  }

  /** Leaf revisions with their history, for replication (`open_revs=all`, `revs=true`). */
  async openRevs(db: string, docId: string): Promise<Record<string, unknown>[]> {
    const rec = await this.getRecord(db, docId);
    if (rec === undefined) return [];
    const out: Record<string, unknown>[] = [];
    for (const leaf of leaves(rec.tree)) {
      const stored = await this.#body(db, docId, leaf.rev);
      if (stored === undefined) continue;
      out.push({ ...this.#render(docId, leaf.rev, leaf.deleted, stored), _revisions: revisions(rec.tree, leaf.rev) });
    }
    return out;
  }

  async #docsFor(db: string, entries: readonly { id: string; rev: string; deleted: boolean }[]): Promise<(Record<string, unknown> | null)[]> {
    const bufs = await this.#store.getMany('revs', entries.map((e) => keys.body(db, e.id, e.rev)));
    return entries.map((e, i) => (bufs[i] === undefined ? null : this.#render(e.id, e.rev, e.deleted, decodeBody(bufs[i]!))));
  }

  /** One page of the changes feed. `last_seq` is the last position examined, so resuming from it neither skips nor repeats. */
  async changes(db: string, options: ChangesOptions): Promise<{ results: ChangeEntry[]; last_seq: string; lastSeq: Hlc }> {
    this.#state(db);
    const prefix = keys.seqs(db);
    const range = options.since === undefined ? { gte: prefix.gte, lt: prefix.lt } : { gt: keys.seq(db, options.since), lt: prefix.lt };
    const results: ChangeEntry[] = [];
    let last: Hlc | undefined;
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (limit > 0 && options.filter === undefined) {
      // Native batches read in a loop (not an entry at a time through an async generator):
      // a replication reads its changes a page of hundreds at a time.
      const cursor = this.#store.cursor('seq', { ...range, reverse: options.descending });
      try {
        scan: for (;;) {
          const batch = await cursor.next(options.docIds === undefined ? Math.min(CHANGES_BATCH, limit - results.length) : CHANGES_BATCH);
          if (batch.length === 0) break;
          for (const [key, value] of batch) {
            const seq = seqFromKey(decodeKey(key));
            const [id, rev, deleted] = decodeSeq(value);
            last = seq;
            if (options.docIds !== undefined && !options.docIds.has(id)) continue;
            const text = hlcToText(seq);
            results.push({ seq: text, hlc: text, id, rev, changes: [{ rev }], deleted });
            if (results.length >= limit) break scan;
          }
        }
      } finally {
        await cursor.close();
      }
    } else if (limit > 0) {
      // Filtered by content: bodies are fetched a chunk at a time; an entry counts as examined
      // (and moves `last`) only when it was checked, so a page cut by `limit` resumes exactly.
      const filter = options.filter!;
      let chunk: { seq: Hlc; id: string; rev: string; deleted: boolean; skip?: true }[] = [];
      const drain = async (): Promise<boolean> => {
        const bodies = await this.#store.getMany('revs', chunk.map((e) => keys.body(db, e.id, e.rev)));
        for (let i = 0; i < chunk.length; i++) {
          const e = chunk[i]!;
          last = e.seq;
          if (e.skip) continue;
          const buf = bodies[i];
          const body = e.deleted || buf === undefined ? undefined : decodeBody(buf).body;
          if (!filter.test(e.id, body)) continue;
          const text = hlcToText(e.seq);
          results.push({ seq: text, hlc: text, id: e.id, rev: e.rev, changes: [{ rev: e.rev }], deleted: e.deleted });
          if (results.length >= limit) return true;
        }
        chunk = [];
        return false;
      };
      let full = false;
      for await (const [key, value] of this.#store.entries('seq', { ...range, reverse: options.descending })) {
        const seq = seqFromKey(decodeKey(key));
        const [id, rev, deleted] = decodeSeq(value);
        if (options.docIds !== undefined && !options.docIds.has(id)) {
          if (chunk.length === 0) last = seq; // nothing pending: skipping it is examining it
          else chunk.push({ seq, id, rev, deleted: true, skip: true }); // keeps `last` in order
          continue;
        }
        chunk.push({ seq, id, rev, deleted });
        if (chunk.length >= FILTER_CHUNK && (full = await drain())) break;
      }
      if (!full && chunk.length > 0) await drain();
    }
    if (options.includeDocs && results.length > 0) {
      const docs = await this.#docsFor(db, results);
      results.forEach((r, i) => (r.doc = docs[i]));
    }
    const lastSeq = last ?? options.since ?? HLC_ZERO;
    return { results, last_seq: hlcToText(lastSeq), lastSeq };
  }

  /** Resolves on the next committed write to `db`, after `timeoutMs`, on abort, drop or close. */
  waitForChange(db: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const state = this.#state(db);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        state.listeners.delete(done);
        unsubscribeClose();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      state.listeners.add(done);
      const unsubscribeClose = this.onClose(done);
      signal?.addEventListener('abort', done, { once: true });
      if (signal?.aborted || this.#stopping) done();
    });
  }

  /** The compactions running now, with how far each got (CouchDB's `_active_tasks`). */
  compactions(): CompactionProgress[] {
    return [...this.#dbs.values()].flatMap((state) => (state.compactionProgress === undefined ? [] : [{ ...state.compactionProgress }]));
  }

  /** Long polls and streams waiting on the database right now (for /health). */
  openFeeds(db: string): number {
    return this.#dbs.get(db)?.listeners.size ?? 0;
  }

  /** Rows of `_all_docs` by id range (deleted documents are not listed). */
  async *allDocs(db: string, options: AllDocsOptions): AsyncGenerator<AllDocsRow> {
    this.#state(db);
    const prefix = keys.docs(db);
    const range: { gte?: Buffer; gt?: Buffer; lte?: Buffer; lt?: Buffer; reverse: boolean } = { reverse: options.descending };
    const low = options.descending ? options.endkey : options.startkey;
    const high = options.descending ? options.startkey : options.endkey;
    const lowInclusive = options.descending ? options.inclusiveEnd : true;
    const highInclusive = options.descending ? true : options.inclusiveEnd;
    if (low === undefined) range.gte = prefix.gte;
    else if (lowInclusive) range.gte = keys.doc(db, low);
    else range.gt = keys.doc(db, low);
    if (high === undefined) range.lt = prefix.lt;
    else if (highInclusive) range.lte = keys.doc(db, high);
    else range.lt = keys.doc(db, high);
    let skip = options.skip;
    let left = options.limit ?? Number.POSITIVE_INFINITY;
    if (left <= 0) return;
    let page: AllDocsRow[] = [];
    const flush = async () => {
      if (options.includeDocs && page.length > 0) {
        const docs = await this.#docsFor(db, page.map((r) => ({ id: r.id!, rev: r.value!.rev, deleted: false })));
        page.forEach((r, i) => (r.doc = docs[i]));
      }
      const out = page;
      page = [];
      return out;
    };
    for await (const [key, value] of this.#store.entries('docs', range)) {
      const rec = decodeDocRecord(value);
      if (rec.deleted) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      const id = decodeKey(key)[1] as string;
      page.push({ id, key: id, value: { rev: rec.winner } });
      left--;
      if (page.length >= 256) yield* await flush();
      if (left <= 0) break;
    }
    yield* await flush();
  }

  /** `_all_docs` with `keys`: one row per key, in the order given. */
  async allDocsByKeys(db: string, ids: readonly string[], includeDocs: boolean): Promise<AllDocsRow[]> {
    this.#state(db);
    const raw = await this.#store.getMany('docs', ids.map((id) => keys.doc(db, id)));
    const rows: AllDocsRow[] = ids.map((id, i) => {
      if (raw[i] === undefined) return { key: id, error: 'not_found' };
      const rec = decodeDocRecord(raw[i]!);
      return rec.deleted ? { id, key: id, value: { rev: rec.winner, deleted: true }, ...(includeDocs ? { doc: null } : {}) } : { id, key: id, value: { rev: rec.winner } };
    });
    if (includeDocs) {
      const live = rows.filter((r) => r.value !== undefined && r.value.deleted !== true);
      const docs = await this.#docsFor(db, live.map((r) => ({ id: r.id!, rev: r.value!.rev, deleted: false })));
      live.forEach((r, i) => (r.doc = docs[i]));
    }
    return rows;
  }

  // ---- the readers' door ------------------------------------------------------------------
  // Query, replication, VDBs and tiers read documents here, never from the column families:
  // the engine's caches stay the one view of a database, and the key layout stays inside it.

  /** Records of many documents at once (undefined where there is none), through the cache. */
  async getRecords(db: string, docIds: readonly string[]): Promise<(DocRecord | undefined)[]> {
    const state = this.#state(db);
    const out: (DocRecord | undefined)[] = docIds.map((id) => state.cache.get(id));
    const missing = docIds.flatMap((id, i) => (out[i] === undefined ? [i] : []));
    if (missing.length === 0) return out;
    const version = state.version;
    const raw = await this.#store.getMany('docs', missing.map((i) => keys.doc(db, docIds[i]!)));
    const fresh = state.version === version && !state.dropped;
    missing.forEach((i, j) => {
      const buf = raw[j];
      if (buf === undefined) return;
      const rec = decodeDocRecord(buf);
      out[i] = rec;
      if (fresh) state.cache.set(docIds[i]!, rec);
    });
    return out;
  }

  /** Stored bodies of these revisions (undefined where none is kept), cached ones first. */
  async getBodies(db: string, revs: readonly { id: string; rev: string }[]): Promise<(Body | undefined)[]> {
    return (await this.#storedBodies(this.#state(db), db, revs)).map((b) => b?.body);
  }

  /** Stored bodies of these revisions (undefined where none is), cached ones first, the rest in one multi-get. */
  async #storedBodies(state: DbState, db: string, revs: readonly { id: string; rev: string }[]): Promise<(BodyRecord | undefined)[]> {
    const out: (BodyRecord | undefined)[] = revs.map((r) => state.bodies.get(bodyKey(r.id, r.rev)));
    const missing = revs.flatMap((_, i) => (out[i] === undefined ? [i] : []));
    if (missing.length === 0) return out;
    const raw = await this.#store.getMany('revs', missing.map((i) => keys.body(db, revs[i]!.id, revs[i]!.rev)));
    missing.forEach((i, j) => {
      const buf = raw[j];
      if (buf !== undefined) out[i] = decodeBody(buf);
    });
    return out;
  }

  /** Every document record of a database (deleted ones too) in id order, in batches; from after `afterId` when given. */
  async *scanRecords(db: string, batchSize = 256, afterId?: string, beforeId?: string, descending = false): AsyncGenerator<{ id: string; record: DocRecord }[]> {
    this.#state(db);
    const all = keys.docs(db);
    const lt = beforeId === undefined ? all.lt : keys.doc(db, beforeId);
    const range = { ...(afterId === undefined ? { gte: all.gte, lt } : { gt: keys.doc(db, afterId), lt }), reverse: descending };
    let batch: { id: string; record: DocRecord }[] = [];
    for await (const [key, value] of this.#store.entries('docs', range)) {
      batch.push({ id: decodeKey(key)[1] as string, record: decodeDocRecord(value) });
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /** First shutdown step: end long polls and streams (they would hold the listener open). */
  stopStreams(): void {
    this.#stopping = true;
    for (const listener of [...this.#closeListeners]) listener();
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  /** Last shutdown step before storage closes: refuse new writes, let queued ones finish. */
  async close(): Promise<void> {
    this.stopStreams();
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#dbs.values()].map(async (state) => {
      await state.writes.idle();
      await settled(state);
    }));
  }
}
