// Virtual databases: N ordinary databases `<vdb>_s<i>` behind one name, documents routed by
// the hash of their id. Scatter-gather `_find` and `_changes`, import, and online split and
// merge that copy documents with their full revision history.
//
// Rebalance protocol (split and merge alike):
//   1. record the job (phase `copy`), mark shards splitting/merging (the new one migrating);
//   2. copy every moving document (all leaf revisions with history, attachments inline) while
//      writes go on;
//   3. close the write gate, copy what changed since step 2 began and the moving range's
//      `_local` documents (verbatim), switch the ranges and set phase `cleanup` in ONE synced
//      write, open the gate;
//   4. remove the source copies (tombstones and `_local` documents on split, the whole
//      database on merge).
// Reads never miss a document: until the switch the old owner serves it, after it the new
// one; every shard read filters ids by the current ranges, so a copy waiting for removal is
// invisible. A crash in `copy` rolls back; a crash in `cleanup` finishes the job.
import type { Logger } from 'pino';
import type { Catalog } from '../../core/catalog.js';
import { FirkinError } from '../../core/errors.js';
import { type Clock, HLC_ZERO, type Hlc, type HybridClock, compareHlc, hlcToText, parseHlc } from '../../core/hlc.js';
import type { Store } from '../../storage/db.js';
import type { ChangeEntry, ChangeFilter, DocEngine, EditResult } from '../engine.js';
import { changeFilterFrom } from '../query/change-filter.js';
import { withExtras } from '../change-extras.js';
import { byRoute, mergedListing, primed, rowsByRoute, shardAllDocs, shardAllDocsByKeys } from '../all-docs.js';
import { type BulkGetRequest, type BulkGetResult, bulkGet, diffByRoute, leafRevs } from '../replication/bulk-get.js';
import type { RevsDiff } from '../replication/endpoints.js';
import { LocalDocs, collectLocals } from '../replication/local-docs.js';
import { type FindQuery, pageEnd } from '../query/ast.js';
import type { ValueCounts } from '../query/counts.js';
import { type FindContext, describePlan, executeFind, planFind, sourceQuery } from '../query/execute.js';
import { type HashRange, areAdjacent, hashId, initialRanges, mergeRanges, splitRanges } from '../../core/shard-hash.js';
import { type RebalanceJob, type ShardAssignment, type VdbRecord, checkVdbName, openVdbCatalog, routeId, shardDb } from './catalog.js';
import { WriteGate } from './gate.js';
import { copyDocs } from '../move.js';
import type { Blob, ParsedDoc } from '../doc-input.js';
import { parseFind } from '../query/parse.js';
import { mergeFind } from './merge.js';
import { type CreateVdb, type ImportSpec, type LocalWriteResult, type VdbAllDocs, type VdbAllDocsQuery, type VdbAttachment, type VdbChangesOptions, type VdbChangesPage, type VdbGetOptions, type VdbService, localRouteId, notFoundVdb, vdbExplain } from './service.js';
import { runImport } from './import.js';

export const VDB_LIMITS = { shardCountMax: 256, replicaFactorMax: 9, batchSizeMax: 10_000, zonesMax: 64 } as const;

export interface VdbEngineOptions {
  store: Store;
  /** Exact per-value counts for `_find` totals (optional: without, totals walk the index). */
  counts?: ValueCounts;
  docs: DocEngine;
  hlc: HybridClock;
  log: Logger;
  nodeName: string;
  clock: Clock;
  newId: () => string;
}

export type { CreateVdb } from './service.js';

interface VdbState {
  record: VdbRecord;
  gate: WriteGate;
  /** One rebalance at a time per VDB. */
  busy: boolean;
}


export class VdbEngine implements VdbService {
  readonly #o: VdbEngineOptions;
  /** The durable records; #vdbs adds each one's in-memory write gate. */
  readonly #records: Catalog<VdbRecord>;
  readonly #vdbs = new Map<string, VdbState>();
  /** `_local` documents, kept as a database's by the shard database their id routes to. */
  readonly #locals: LocalDocs;

  private constructor(options: VdbEngineOptions, records: Catalog<VdbRecord>) {
    this.#o = options;
    this.#records = records;
    this.#locals = new LocalDocs(options.store);
  }

  static async open(options: VdbEngineOptions): Promise<VdbEngine> {
    const engine = new VdbEngine(options, await openVdbCatalog(options.store));
    for (const record of engine.#records.values()) engine.#vdbs.set(record.name, { record, gate: new WriteGate(), busy: false });
    // Finish or roll back a rebalance a crash interrupted.
    for (const state of engine.#vdbs.values()) if (state.record.job !== undefined) await engine.#recover(state);
    return engine;
  }

  #state(name: string): VdbState {
    const state = this.#vdbs.get(name);
    if (state === undefined) throw notFoundVdb(name);
    return state;
  }

  list(): string[] {
    return [...this.#vdbs.keys()].sort();
  }

  has(name: string): boolean {
    return this.#vdbs.has(name);
  }

  record(name: string): VdbRecord {
    return this.#state(name).record;
  }

  async create(spec: CreateVdb): Promise<VdbRecord> {
    checkVdbName(spec.name);
    if (this.#vdbs.has(spec.name)) throw new FirkinError('conflict', `virtual database ${JSON.stringify(spec.name)} already exists`);
    for (let i = 0; i < spec.shardCount; i++) {
      if (this.#o.docs.has(shardDb(spec.name, i))) {
        throw new FirkinError('conflict', `database ${JSON.stringify(shardDb(spec.name, i))} already exists and would become a shard`);
      }
    }
    const record: VdbRecord = {
      name: spec.name,
      hashFunction: spec.hashFunction,
      replicaFactor: spec.replicaFactor,
      zones: spec.zones,
      createdMs: this.#o.clock.nowMs(),
      ranges: initialRanges(spec.shardCount),
      shards: Array.from({ length: spec.shardCount }, (_, i) => this.#assignment(i, 'active')),
      job: undefined,
    };
    const state: VdbState = { record, gate: new WriteGate(), busy: true };
    this.#vdbs.set(spec.name, state);
    try {
      for (let i = 0; i < spec.shardCount; i++) await this.#o.docs.createDb(shardDb(spec.name, i));
      await this.#records.put(record);
    } catch (err) {
      this.#vdbs.delete(spec.name);
      for (let i = 0; i < spec.shardCount; i++) if (this.#o.docs.has(shardDb(spec.name, i))) await this.#o.docs.deleteDb(shardDb(spec.name, i));
      throw err;
    } finally {
      state.busy = false;
    }
    this.#o.log.info({ vdb: spec.name, shards: spec.shardCount }, 'virtual database created');
    return record;
  }

  #assignment(shardId: number, status: ShardAssignment['status']): ShardAssignment {
    // One node: every shard is local; placement across nodes comes with the cluster.
    return { shardId, primary: this.#o.nodeName, replicas: [], status };
  }

  async delete(name: string): Promise<void> {
    const state = this.#state(name);
    if (state.busy) throw new FirkinError('conflict', `virtual database ${JSON.stringify(name)} is being rebalanced`);
    state.busy = true;
    await state.gate.close();
    this.#vdbs.delete(name);
    await this.#records.delete(name);
    for (const shard of state.record.shards) {
      const db = shardDb(name, shard.shardId);
      if (this.#o.docs.has(db)) await this.#o.docs.deleteDb(db);
    }
    state.gate.open();
  }

  info(name: string) {
    const record = this.record(name);
    const shards = record.ranges
      .map((r) => r.shardId)
      .sort((a, b) => a - b)
      .map((id) => {
        const info = this.#o.docs.dbInfo(shardDb(name, id));
        return { shard_id: id, db: shardDb(name, id), doc_count: info.doc_count, disk_size: info.disk_size };
      });
    return {
      name,
      shard_count: shards.length,
      hash_function: record.hashFunction,
      placement: { replica_factor: record.replicaFactor, zones: record.zones },
      created_at: record.createdMs,
      total_docs: shards.reduce((n, s) => n + s.doc_count, 0),
      total_disk_size: shards.reduce((n, s) => n + s.disk_size, 0),
      shards: shards.map(({ db, doc_count, disk_size }) => ({ db, doc_count, disk_size })),
      ...(record.job === undefined ? {} : { rebalance: { kind: record.job.kind, phase: record.job.phase, source: record.job.source, target: record.job.target } }),
      // CouchDB's database info fields, for its clients (PouchDB's replication progress reads `update_seq`).
      db_name: name,
      doc_count: shards.reduce((n, s) => n + s.doc_count, 0),
      update_seq: hlcToText(this.nowSeq(name)),
    };
  }

  shards(name: string) {
    const record = this.record(name);
    return {
      shards: [...record.shards].sort((a, b) => a.shardId - b.shardId).map((s) => ({ shard_id: s.shardId, primary: s.primary, replicas: s.replicas, status: s.status })),
      ranges: [...record.ranges].sort((a, b) => a.start - b.start).map((r) => ({ shard_id: r.shardId, start_hash: r.start, end_hash: r.end })),
    };
  }

  replication(name: string) {
    const record = this.record(name);
    return {
      vdb_name: name,
      replica_factor: record.replicaFactor,
      shard_count: record.ranges.length,
      // One node, replica_factor 1: no replication tasks until the cluster places replicas.
      shards: record.ranges.map((r) => ({ shard_id: r.shardId, replication_tasks: [] as { source: string; target: string; status: string }[] })).sort((a, b) => a.shard_id - b.shard_id),
    };
  }

  /** The database that owns `id` now. */
  dbFor(name: string, id: string): string {
    const record = this.record(name);
    return shardDb(name, routeId(record, id));
  }

  /** Run a write with the gate held, routed by the ranges current when it enters. */
  async write<T>(name: string, id: string, run: (db: string) => Promise<T>): Promise<T> {
    const state = this.#state(name);
    const leave = await state.gate.enter();
    try {
      const shardId = routeId(state.record, id);
      const readonly = this.#readonlyError(state.record, shardId);
      if (readonly !== undefined) throw readonly;
      return await run(shardDb(name, shardId));
    } finally {
      leave();
    }
  }

  async bulkDocs(name: string, docs: readonly unknown[], newEdits = true): Promise<EditResult[]> {
    const state = this.#state(name);
    const leave = await state.gate.enter();
    try {
      // Ids are needed to route: generate missing ones first.
      const withIds = docs.map((d) => {
        if (d === null || typeof d !== 'object' || Array.isArray(d)) return { doc: d, id: undefined as string | undefined };
        const o = d as Record<string, unknown>;
        const given = typeof o._id === 'string' ? o._id : typeof o.id === 'string' ? o.id : undefined;
        // A foreign revision without an id is refused by the engine, not given one.
        const id = given ?? (newEdits ? this.#o.newId() : undefined);
        return { doc: given === undefined && id !== undefined ? { ...o, _id: id } : o, id };
      });
      const groups = new Map<string, number[]>();
      const results: EditResult[] = new Array(docs.length);
      withIds.forEach((d, i) => {
        const shardId = d.id === undefined ? state.record.ranges[0]!.shardId : routeId(state.record, d.id);
        const readonly = this.#readonlyError(state.record, shardId);
        if (readonly !== undefined) {
          results[i] = { ok: false, id: d.id ?? null, error: readonly.code, message: readonly.message };
          return;
        }
        const db = shardDb(name, shardId);
        groups.set(db, [...(groups.get(db) ?? []), i]);
      });
      await Promise.all(
        [...groups].map(async ([db, idx]) => {
          const out = await this.#o.docs.bulkDocs(db, idx.map((i) => withIds[i]!.doc), newEdits, this.#o.newId);
          out.forEach((r, j) => (results[idx[j]!] = r));
        }),
      );
      return results;
    } finally {
      leave();
    }
  }

  #owns(record: VdbRecord, shardId: number): (id: string) => boolean {
    return (id) => routeId(record, id) === shardId;
  }

  #liveShards(record: VdbRecord): number[] {
    return record.ranges.map((r) => r.shardId).sort((a, b) => a - b);
  }

  /** `_find` on every shard in parallel, merged in the query's order; `total` counts every match. */
  async find(name: string, raw: unknown) {
    const q = parseFind(raw);
    const record = this.record(name);
    const answer = await this.#find(name, record, q, record.job !== undefined);
    // A rebalance that started meanwhile may have copied documents into a live shard: ask
    // again with the ownership filter, so no document is counted twice.
    return this.record(name) === record || record.job !== undefined ? answer : this.#find(name, this.record(name), q, true);
  }

  /** What the query engine needs to run a `_find` on one shard database. */
  #findContext(): FindContext {
    return { docs: this.#o.docs, store: this.#o.store, counts: this.#o.counts };
  }

  async explain(name: string, raw: unknown): Promise<Record<string, unknown>> {
    const q = parseFind(raw);
    const record = this.record(name);
    const shardQuery = sourceQuery(q, pageEnd(q));
    const plans = await Promise.all(this.#liveShards(record).map(async (shardId) => ({ shardId, plan: describePlan(await planFind(this.#findContext(), shardDb(name, shardId), shardQuery)) })));
    return vdbExplain(q, plans);
  }

  /**
   * Outside a rebalance every shard database holds only the ids its range owns, so the
   * shards answer unfiltered, and an equality `total` comes from the per-value counts
   * without reading postings. During one, a shard may hold copies it does not own yet (or
   * any more): each shard then keeps only its own ids.
   */
  async #find(name: string, record: VdbRecord, q: FindQuery, filterOwned: boolean) {
    const shardQuery = sourceQuery(q, pageEnd(q));
    const results = await Promise.all(
      this.#liveShards(record).map(async (id) => {
        try {
          return await executeFind(this.#findContext(), shardDb(name, id), shardQuery, filterOwned ? this.#owns(record, id) : undefined);
        } catch (err) {
          if (err instanceof FirkinError && err.code === 'bad_request') throw err;
          throw new FirkinError('unavailable', `shard ${id} of ${JSON.stringify(name)} failed: ${(err as Error).message}`, { cause: err });
        }
      }),
    );
    return mergeFind(q, results.map((r) => ({ docs: r.docs, total: r.meta.total, stats: r.stats })));
  }

  /** `_all_docs`: each shard's first rows merged by id; with keys, each id read where it is routed. */
  async allDocs(name: string, q: VdbAllDocsQuery): Promise<VdbAllDocs> {
    const total = (this.info(name) as { total_docs: number }).total_docs;
    const extras = { includeDocs: q.includeDocs, conflicts: q.conflicts };
    if (q.keys !== undefined) {
      const rows = await rowsByRoute(q.keys, (id) => this.dbFor(name, id), (db, ids) => shardAllDocsByKeys(this.#o.docs, db, ids, extras));
      return { total_rows: total, offset: 0, rows };
    }
    const range = { startkey: q.startkey, endkey: q.endkey, inclusiveEnd: q.inclusiveEnd, descending: q.descending, ...extras };
    // Each page keeps only the ids its shard owns in the record of the moment: a split's or
    // merge's copies are never listed twice, and a switch restarts the cursors on the new record.
    const shardsNow = () => {
      const record = this.record(name);
      return {
        version: record,
        readers: this.#liveShards(record).map((id) => (after: string | undefined, limit: number) => shardAllDocs(this.#o.docs, shardDb(name, id), { ...range, ...(after === undefined ? {} : { after }), limit }, this.#owns(record, id))),
      };
    };
    return { total_rows: total, offset: q.skip, rows: await primed(mergedListing(shardsNow, q)) };
  }

  async getDoc(name: string, id: string, options: VdbGetOptions): Promise<Record<string, unknown>> {
    return this.#o.docs.getDoc(this.dbFor(name, id), id, options);
  }

  putDoc(name: string, id: string, doc: ParsedDoc, rev: string | undefined) {
    return this.write(name, id, (db) => this.#o.docs.putDoc(db, id, doc, rev));
  }

  deleteDoc(name: string, id: string, rev: string) {
    return this.write(name, id, (db) => this.#o.docs.deleteDoc(db, id, rev));
  }

  putAttachment(name: string, id: string, attName: string, rev: string | undefined, blob: Blob | undefined) {
    return this.write(name, id, (db) => this.#o.docs.putAttachment(db, id, attName, rev, blob));
  }

  getAttachment(name: string, id: string, attName: string, rev: string | undefined): Promise<VdbAttachment> {
    return this.#o.docs.getAttachment(this.dbFor(name, id), id, attName, rev);
  }

  async compact(name: string): Promise<void> {
    const record = this.record(name);
    await Promise.all(this.#liveShards(record).map((id) => this.#o.docs.compact(shardDb(name, id))));
  }

  /** `since` of a VDB feed: `now` is the newest sequence of any shard. */
  nowSeq(name: string): Hlc {
    const record = this.record(name);
    return this.#liveShards(record)
      .map((id) => this.#o.docs.lastSeq(shardDb(name, id)))
      .reduce((a, b) => (compareHlc(a, b) >= 0 ? a : b));
  }

  /**
   * k-way merge of the shard feeds by sequence. Every shard shares the node's clock, so one
   * sequence is a cursor for all. A shard that filled its page examined only up to its last
   * sequence: entries are returned only up to the smallest such bound, so resuming from
   * `last_seq` never skips or repeats.
   */
  async changes(name: string, options: VdbChangesOptions) {
    this.record(name);
    const raw = options.since;
    let since: Hlc | undefined;
    if (raw === 'now') since = this.nowSeq(name);
    else if (raw !== undefined && raw !== '' && raw !== '0' && raw !== 'first') {
      since = parseHlc(raw);
      if (since === undefined) throw new FirkinError('bad_request', `since must be first, 0, now or a sequence like {timestamp,W,L}, got ${JSON.stringify(raw)}`);
    }
    const docIds = options.docIds === undefined ? undefined : new Set(options.docIds);
    const filter = options.selector === undefined ? undefined : changeFilterFrom(undefined, undefined, options.selector);
    const read = () => this.#changes(name, { since, limit: options.limit, includeDocs: options.includeDocs, conflicts: options.conflicts === true, allLeaves: options.allLeaves === true, docIds, filter });
    const wait = options.longpoll;
    if (wait === undefined) return read();
    const deadline = Date.now() + wait.timeoutMs;
    for (;;) {
      // Subscribe before reading, so a write between the read and the wait still wakes us.
      const waiter = new AbortController();
      const stop = () => waiter.abort();
      wait.signal?.addEventListener('abort', stop, { once: true });
      const record = this.record(name);
      const woken = Promise.race(this.#liveShards(record).map((id) => this.#o.docs.waitForChange(shardDb(name, id), Math.max(0, deadline - Date.now()), waiter.signal)));
      try {
        const page = await read();
        if (page.changes.length > 0 || Date.now() >= deadline || wait.signal?.aborted === true || this.#o.docs.stopping) return page;
        await woken;
      } finally {
        waiter.abort();
        wait.signal?.removeEventListener('abort', stop);
      }
    }
  }

  async #changes(
    name: string,
    options: { since: Hlc | undefined; limit: number | undefined; includeDocs: boolean; conflicts: boolean; allLeaves: boolean; docIds: ReadonlySet<string> | undefined; filter: ChangeFilter | undefined },
  ): Promise<VdbChangesPage> {
    const record = this.record(name);
    const limit = options.limit ?? 1_000;
    const pages = await Promise.all(
      this.#liveShards(record).map(async (id) => {
        const db = shardDb(name, id);
        const page = await withExtras(this.#o.docs, db, { conflicts: options.conflicts }, await this.#o.docs.changes(db, { since: options.since, limit, descending: false, docIds: options.docIds, includeDocs: options.includeDocs, filter: options.filter }));
        return { page, owns: this.#owns(record, id), full: page.results.length >= limit };
      }),
    );
    let bound: Hlc | undefined;
    for (const p of pages) if (p.full && (bound === undefined || compareHlc(p.page.lastSeq, bound) < 0)) bound = p.page.lastSeq;
    const seqOf = (e: ChangeEntry) => parseHlc(e.seq)!;
    const entries = pages
      .flatMap((p) => p.page.results.filter((e) => p.owns(e.id)))
      .filter((e) => bound === undefined || compareHlc(seqOf(e), bound) <= 0)
      .sort((a, b) => compareHlc(seqOf(a), seqOf(b)))
      .slice(0, limit);
    // Nothing returned: every entry up to `bound` was examined and not ours (or filtered out), so
    // resume there; with no shard full, every feed was read to its end, and a later write gets a
    // later sequence from the node's clock than any of them.
    let examined = options.since ?? HLC_ZERO;
    for (const p of pages) if (compareHlc(p.page.lastSeq, examined) > 0) examined = p.page.lastSeq;
    const last = entries.length > 0 ? entries[entries.length - 1]!.seq : hlcToText(bound ?? examined);
    const leaves = options.allLeaves ? await byRoute(entries, (e) => this.dbFor(name, e.id), (db, es) => leafRevs(this.#o.docs, db, es)) : undefined;
    return {
      changes: entries.map((e, i) => ({ id: e.id, seq: e.seq, rev: e.rev, deleted: e.deleted, ...(options.includeDocs ? { doc: e.doc ?? null } : {}), ...(leaves === undefined ? {} : { revs: leaves[i]! }) })),
      last_seq: last,
    };
  }

  // ---- CouchDB's replication protocol, each id on the shard database that owns it

  async revsDiff(name: string, request: Readonly<Record<string, readonly string[]>>): Promise<RevsDiff> {
    this.record(name);
    return diffByRoute(request, (id) => this.dbFor(name, id), (db, part) => this.#o.docs.revsDiff(db, part));
  }

  async bulkGet(name: string, entries: readonly BulkGetRequest[], options: { revs: boolean; attachments: boolean }): Promise<BulkGetResult[]> {
    this.record(name);
    return byRoute(entries, (e) => this.dbFor(name, e.id), (db, some) => bulkGet(this.#o.docs, db, some, options));
  }

  getLocal(name: string, id: string): Promise<Record<string, unknown> | undefined> {
    return this.#locals.get(this.dbFor(name, localRouteId(id)), id);
  }

  putLocal(name: string, id: string, body: unknown, rev: string | undefined): Promise<LocalWriteResult> {
    return this.#localWrite(name, id, (db) => this.#locals.put(db, id, body, { rev }));
  }

  deleteLocal(name: string, id: string, rev: string | undefined): Promise<LocalWriteResult> {
    return this.#localWrite(name, id, (db) => this.#locals.delete(db, id, rev));
  }

  async localDocs(name: string): Promise<[string, Uint8Array][]> {
    const record = this.record(name);
    const out: [string, Uint8Array][] = [];
    for (const { shardId } of record.ranges) {
      const db = shardDb(name, shardId);
      // A split's source holds what it gave away until its cleanup: each id from its owner only.
      const owned = async function* (source: AsyncIterable<[string, Buffer]>) {
        for await (const entry of source) if (routeId(record, localRouteId(entry[0])) === shardId) yield entry;
      };
      await collectLocals(owned(this.#locals.stored(db)), out);
    }
    return out;
  }

  /** A `_local` write passes the write gate like a document's: a split or merge carries what it wrote. */
  async #localWrite<T>(name: string, id: string, run: (db: string) => Promise<T>): Promise<T> {
    const state = this.#state(name);
    const leave = await state.gate.enter();
    try {
      return await run(shardDb(name, routeId(state.record, localRouteId(id))));
    } finally {
      leave();
    }
  }

  /** Import every live document of a database (optionally filtered) into the VDB, in batches. */
  async import(name: string, spec: ImportSpec) {
    this.#state(name);
    return runImport({ docs: this.#o.docs, log: this.#o.log, clock: this.#o.clock, vdb: name, spec }, (docs, counts) => this.#importBatch(name, docs, spec.onConflict, counts));
  }

  async #importBatch(name: string, docs: Record<string, unknown>[], onConflict: 'skip' | 'overwrite' | 'merge', counts: { docs_written: number; docs_skipped: number; errors: number }): Promise<void> {
    const state = this.#state(name);
    const leave = await state.gate.enter();
    try {
      const byDb = new Map<string, Record<string, unknown>[]>();
      for (const doc of docs) {
        const shardId = routeId(state.record, doc._id as string);
        if (this.#readonlyError(state.record, shardId) !== undefined) {
          counts.errors++; // a read-only shard takes no imported documents
          continue;
        }
        const db = shardDb(name, shardId);
        byDb.set(db, [...(byDb.get(db) ?? []), doc]);
      }
      await Promise.all(
        [...byDb].map(async ([db, group]) => {
          const writes: Record<string, unknown>[] = [];
          for (const doc of group) {
            const { _rev, _revisions, _attachments, _conflicts, id: _plainId, ...body } = doc;
            const rec = await this.#o.docs.getRecord(db, doc._id as string);
            const live = rec !== undefined && !rec.deleted;
            if (live && onConflict === 'skip') {
              counts.docs_skipped++;
              continue;
            }
            if (live && onConflict === 'merge') {
              const target = await this.#o.docs.getDoc(db, doc._id as string);
              const { _rev: _r, _id: _i, id: _d, _attachments: _a, ...current } = target;
              writes.push({ ...current, ...body, _rev: rec.winner });
            } else {
              writes.push(live ? { ...body, _rev: rec.winner } : body);
            }
          }
          if (writes.length === 0) return;
          const results = await this.#o.docs.bulkDocs(db, writes, true, this.#o.newId);
          for (const r of results) {
            if (r.ok) counts.docs_written++;
            else counts.errors++;
          }
        }),
      );
    } finally {
      leave();
    }
  }

  // ---- shard status ---------------------------------------------------------------------

  /**
   * `readonly` <-> `active`. Writes routed to a read-only shard are refused (403); reads,
   * `_find` and changes go on. Set with the write gate closed, so no write that entered
   * before is still running when the status changes. A shard being split or merged (or a
   * read-only one asked to split or merge) is a 409.
   */
  async setShardStatus(name: string, shardId: number, status: 'readonly' | 'active'): Promise<{ shard_id: number; status: string }> {
    const state = this.#begin(name);
    try {
      const shard = state.record.shards.find((s) => s.shardId === shardId);
      if (shard === undefined || !state.record.ranges.some((r) => r.shardId === shardId)) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
      if (shard.status !== 'active' && shard.status !== 'readonly') throw new FirkinError('conflict', `shard ${shardId} is ${shard.status}`);
      if (shard.status !== status) {
        await state.gate.close();
        try {
          await this.#save(state, { ...state.record, shards: state.record.shards.map((s) => (s.shardId === shardId ? { ...s, status } : s)) });
        } finally {
          state.gate.open();
        }
        this.#o.log.info({ vdb: name, shard: shardId, status }, 'shard status changed');
      }
      return { shard_id: shardId, status };
    } finally {
      state.busy = false;
    }
  }

  /** The error for a write routed to `shardId` when that shard is read-only. */
  #readonlyError(record: VdbRecord, shardId: number): FirkinError | undefined {
    const shard = record.shards.find((s) => s.shardId === shardId);
    if (shard?.status !== 'readonly') return undefined;
    return new FirkinError('forbidden', `shard ${shardId} of virtual database ${JSON.stringify(record.name)} is read-only`);
  }

  // ---- rebalance --------------------------------------------------------------------------

  /** A standalone split or merge runs inside its request, start to end: there is no job to cancel. */
  async cancelRebalance(name: string): Promise<Record<string, unknown>> {
    this.#state(name);
    throw new FirkinError('not_found', `virtual database ${JSON.stringify(name)} has no split or merge job: on a standalone node they run inside their request`);
  }

  async split(name: string, shardId: number, batchSize: number) {
    const state = this.#begin(name);
    try {
      const record = state.record;
      const shard = record.shards.find((s) => s.shardId === shardId);
      if (shard === undefined || !record.ranges.some((r) => r.shardId === shardId)) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
      if (shard.status !== 'active') throw new FirkinError('conflict', `shard ${shardId} is ${shard.status}, not active`);
      const range = record.ranges.find((r) => r.shardId === shardId)!;
      if (range.start === range.end) throw new FirkinError('conflict', `shard ${shardId} holds a single hash and cannot split`);
      const target = Math.max(...record.shards.map((s) => s.shardId)) + 1;
      const targetDb = shardDb(name, target);
      if (this.#o.docs.has(targetDb)) throw new FirkinError('conflict', `database ${JSON.stringify(targetDb)} already exists`);
      await this.#o.docs.createDb(targetDb);
      const job: RebalanceJob = { kind: 'split', phase: 'copy', source: shardId, target, batchSize };
      await this.#save(state, {
        ...record,
        job,
        shards: [...record.shards.map((s) => (s.shardId === shardId ? { ...s, status: 'splitting' as const } : s)), this.#assignment(target, 'migrating')],
      });
      const after = splitRanges(record.ranges, shardId, target);
      const moving = after.find((r) => r.shardId === target)!;
      const moved = await this.#move(state, shardDb(name, shardId), targetDb, (id) => inRange(hashId(id, record.hashFunction), moving), batchSize, () => ({
        ...state.record,
        ranges: after,
        shards: state.record.shards.map((s) => (s.shardId === shardId || s.shardId === target ? { ...s, status: 'active' as const } : s)),
        job: { ...job, phase: 'cleanup' },
      }));
      await this.#cleanup(state);
      this.#o.log.info({ vdb: name, shard: shardId, newShard: target, moved }, 'shard split');
      return { ok: true, shard_id: shardId, new_shard_id: target, docs_moved: moved, message: `shard ${shardId} split: shard ${target} took the upper half of its range` };
    } finally {
      state.busy = false;
    }
  }

  async merge(name: string, shardId: number, targetShard: number, batchSize: number) {
    const state = this.#begin(name);
    try {
      const record = state.record;
      if (shardId === targetShard) throw new FirkinError('bad_request', 'a shard cannot merge into itself');
      const a = record.ranges.find((r) => r.shardId === shardId);
      const b = record.ranges.find((r) => r.shardId === targetShard);
      if (a === undefined) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
      if (b === undefined) throw new FirkinError('not_found', `target shard ${targetShard} does not exist`);
      for (const id of [shardId, targetShard]) {
        const s = record.shards.find((x) => x.shardId === id)!;
        if (s.status !== 'active') throw new FirkinError('conflict', `shard ${id} is ${s.status}, not active`);
      }
      if (!areAdjacent(a, b)) {
        throw new FirkinError('conflict', `shards ${shardId} [${a.start}, ${a.end}] and ${targetShard} [${b.start}, ${b.end}] are not adjacent in hash space`);
      }
      const job: RebalanceJob = { kind: 'merge', phase: 'copy', source: shardId, target: targetShard, batchSize };
      await this.#save(state, { ...record, job, shards: record.shards.map((s) => (s.shardId === shardId || s.shardId === targetShard ? { ...s, status: 'merging' as const } : s)) });
      const after = mergeRanges(record.ranges, shardId, targetShard);
      const moved = await this.#move(state, shardDb(name, shardId), shardDb(name, targetShard), () => true, batchSize, () => ({
        ...state.record,
        ranges: after,
        shards: state.record.shards.filter((s) => s.shardId !== shardId).map((s) => (s.shardId === targetShard ? { ...s, status: 'active' as const } : s)),
        job: { ...job, phase: 'cleanup' },
      }));
      await this.#cleanup(state);
      this.#o.log.info({ vdb: name, shard: shardId, into: targetShard, moved }, 'shards merged');
      return { ok: true, shard_id: shardId, target_shard: targetShard, docs_moved: moved, message: `shard ${shardId} merged into shard ${targetShard}` };
    } finally {
      state.busy = false;
    }
  }

  #begin(name: string): VdbState {
    const state = this.#state(name);
    if (state.busy || state.record.job !== undefined) throw new FirkinError('conflict', `virtual database ${JSON.stringify(name)} is already being rebalanced`);
    state.busy = true;
    return state;
  }

  async #save(state: VdbState, record: VdbRecord): Promise<void> {
    await this.#records.put(record);
    state.record = record;
  }

  /** Steps 2 and 3 of the protocol; returns how many documents were copied. */
  async #move(state: VdbState, from: string, to: string, moves: (id: string) => boolean, batchSize: number, switched: () => VdbRecord): Promise<number> {
    const start = this.#o.docs.lastSeq(from);
    let copied = 0;
    let ids: string[] = [];
    const flush = async () => {
      copied += await this.#copyDocs(from, to, ids);
      ids = [];
      this.#o.log.info({ from, to, copied }, 'rebalance progress');
    };
    // Tombstones move too: a deletion must not be lost with the shard it happened in.
    for await (const id of this.#allIds(from)) {
      if (!moves(id)) continue;
      ids.push(id);
      if (ids.length >= batchSize) await flush();
    }
    if (ids.length > 0) await flush();
    await state.gate.close();
    try {
      // Writes that landed during the bulk copy (deletions included) follow under the closed gate.
      let since: Hlc | undefined = start;
      for (;;) {
        const page = await this.#o.docs.changes(from, { since, limit: batchSize, descending: false, docIds: undefined, includeDocs: false });
        const late = page.results.map((e) => e.id).filter(moves);
        if (late.length > 0) copied += await this.#copyDocs(from, to, late);
        if (page.results.length < batchSize) break;
        since = page.lastSeq;
      }
      // The `_local` documents (replication checkpoints) of the moving range, as they are: a
      // replication through the VDB carries on from its checkpoint after the move.
      const locals: [string, Buffer][] = [];
      for await (const [id, value] of this.#locals.stored(from)) if (moves(localRouteId(id))) locals.push([id, value]);
      await this.#locals.writeStored(to, locals);
      if (locals.length > 0) this.#o.log.info({ from, to, locals: locals.length }, 'rebalance carried local documents');
      await this.#save(state, switched());
    } finally {
      state.gate.open();
    }
    return copied;
  }

  async #copyDocs(from: string, to: string, ids: readonly string[]): Promise<number> {
    return copyDocs(this.#o.docs, from, to, ids, this.#o.newId);
  }

  /** Step 4: remove the source copies, then forget the job. */
  async #cleanup(state: VdbState): Promise<void> {
    const job = state.record.job!;
    const name = state.record.name;
    const from = shardDb(name, job.source);
    if (job.kind === 'merge') {
      if (this.#o.docs.has(from)) await this.#o.docs.deleteDb(from);
      await this.#locals.dropDb(from);
    } else {
      await this.#removeForeign(from, (id) => routeId(state.record, id) !== job.source);
    }
    await this.#save(state, { ...state.record, job: undefined });
  }

  /** Every document id of a shard database, deleted ones included, in id order. */
  async *#allIds(db: string): AsyncGenerator<string> {
    for await (const batch of this.#o.docs.scanRecords(db)) for (const d of batch) yield d.id;
  }

  /** Purge the documents and `_local` documents in `db` that `foreign` says do not belong there (in batches). */
  async #removeForeign(db: string, foreign: (id: string) => boolean): Promise<void> {
    const ids: string[] = [];
    for await (const id of this.#allIds(db)) if (foreign(id)) ids.push(id);
    for (let i = 0; i < ids.length; i += 500) await this.#o.docs.purge(db, ids.slice(i, i + 500));
    const locals: string[] = [];
    for await (const [id] of this.#locals.stored(db)) if (foreign(localRouteId(id))) locals.push(id);
    await this.#locals.writeStored(db, [], locals);
  }

  async #recover(state: VdbState): Promise<void> {
    const job = state.record.job!;
    const name = state.record.name;
    this.#o.log.warn({ vdb: name, job }, 'resuming an interrupted rebalance');
    if (job.phase === 'cleanup') return this.#cleanup(state);
    // Interrupted while copying: ranges never changed, so undo the copies.
    const target = shardDb(name, job.target);
    if (job.kind === 'split') {
      if (this.#o.docs.has(target)) await this.#o.docs.deleteDb(target);
      await this.#locals.dropDb(target);
      await this.#save(state, {
        ...state.record,
        job: undefined,
        shards: state.record.shards.filter((s) => s.shardId !== job.target).map((s) => (s.shardId === job.source ? { ...s, status: 'active' as const } : s)),
      });
    } else {
      await this.#removeForeign(target, (id) => routeId(state.record, id) !== job.target);
      await this.#save(state, {
        ...state.record,
        job: undefined,
        shards: state.record.shards.map((s) => (s.shardId === job.source || s.shardId === job.target ? { ...s, status: 'active' as const } : s)),
      });
    }
  }
}

function inRange(hash: number, r: HashRange): boolean {
  return hash >= r.start && hash <= r.end;
}
