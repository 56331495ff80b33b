// A replicated VDB shard as the state machine of its Raft group: one ordinary database of the
// document engine (`<vdb>_s<i>`, marked as the group's replica so nothing else writes it),
// changed only by committed entries (`shard-commands.ts`).
//
// - The applied index and the request ids are written in the same synced batch as the
//   documents they belong to, so a restart re-applies exactly the entries after it.
// - A request id seen before answers what it answered then: a proposal the router retried
//   after a timeout applies once. The last REQUEST_WINDOW ids are kept (dropped oldest first,
//   by log order, so every replica keeps the same ones).
// - Snapshots are streamed, as for vector shards: the Raft snapshot is a descriptor (the index
//   it was taken at). A replica behind it drops its database and loads a copy from a replica
//   that has it (`DocStateSource`: the database's keys as they are there, read from iterators
//   opened between two commits, at an applied index at or past the snapshot's), then its log
//   continues from there. A transfer that fails is retried with backoff.
import { FirkinError, isFirkinError } from '../../core/errors.js';
import { localDelete, localWrite, renderLocal } from '../replication/local-docs.js';
import { localRouteId } from './service.js';
import { jitteredDelayMs } from '../../core/backoff.js';
import type { Rand } from '../../core/rand.js';
import { decodeCbor, encodeCbor } from '../../core/codec.js';
import { decodeKey, encodeKey, prefixRange } from '../../core/keys.js';
import type { StateMachine } from '../../raft/group.js';
import type { Entry } from '../../raft/types.js';
import type { BatchOp, ColumnFamily, Store } from '../../storage/db.js';
import type { DocEngine } from '../engine.js';
import { type HashFunction, hashId } from '../../core/shard-hash.js';
import { type DocShardOutcome, type LocalOutcome, type OwnedRanges, checkOwned, decodeDocShardCommand, isLocalOutcome } from './shard-commands.js';

/** Request ids remembered per shard. */
export const REQUEST_WINDOW = 10_000;

const appliedKey = (group: string) => encodeKey(['dshard', group, 'applied']);
const requestKey = (group: string, rid: string) => encodeKey(['dshard', group, 'req', rid]);
const requestRange = (group: string) => prefixRange(['dshard', group, 'req']);
const ownedKey = (group: string) => encodeKey(['dshard', group, 'owned']);
/** `_local/<id>` documents: beside the bookkeeping, so a transfer streams them with the documents. */
const localKey = (group: string, id: string) => encodeKey(['dshard.local', group, id]);
/** Documents purged per batch by a split's cleanup entry. */
const PURGE_BATCH = 500;

/** Whether `id` hashes into one of `owned`'s ranges. */
export function ownsId(owned: OwnedRanges, id: string): boolean {
  const h = hashId(id, owned.hash);
  return owned.ranges.some(([start, end]) => h >= start && h <= end);
}

/** Every key of the shard's own bookkeeping (dropped with the replica). */
export const docShardKeys = (group: string) => prefixRange(['dshard', group]);

/** The shard's `_local` documents (dropped with the replica). */
export const docShardLocalKeys = (group: string) => prefixRange(['dshard.local', group]);

/** Shape check of a request record from a transfer (input from another node). */
export function isRequestRecord(v: unknown): v is RequestRecord {
  const r = v as Partial<RequestRecord> | null;
  const o = r?.outcome as { kind?: unknown; results?: unknown } | undefined;
  return typeof r === 'object' && r !== null && typeof r.rid === 'string' && Number.isSafeInteger(r.index) && typeof o === 'object' && o !== null && (o.kind === 'compact' || o.kind === 'own' || o.kind === 'purge' || o.kind === 'fenced' || o.kind === 'local' || o.kind === 'locals' || (o.kind === 'edits' && Array.isArray(o.results)));
}

export interface RequestRecord {
  readonly rid: string;
  readonly index: number;
  readonly outcome: DocShardOutcome;
}

/** A replica's state as a transfer carries it: the database record, its bookkeeping, then its keys in chunks. */
export interface DocShardState {
  readonly record: Buffer;
  readonly applied: number;
  readonly requests: readonly RequestRecord[];
  /** What the replica owned (absent: every id). */
  readonly owned?: OwnedRanges;
  readonly chunks: AsyncIterable<{ cf: ColumnFamily; entries: readonly [Buffer, Buffer][] }>;
  /** Release what the chunks hold (an abandoned transfer). */
  close(): Promise<void>;
}

/** Streams a replica's state at or past `index` (throws if the source cannot). */
export type DocStateSource = (index: number) => Promise<DocShardState>;

export interface DocShardFsmOptions {
  source?: DocStateSource;
  rand?: Rand;
  /** A failed transfer, before its retry. */
  onRetry?(err: unknown, attempt: number, delayMs: number): void;
}

const RETRY = { baseMs: 100, capMs: 5_000 };

export class DocShardFsm implements StateMachine {
  readonly #docs: DocEngine;
  readonly #store: Store;
  readonly group: string;
  readonly db: string;
  #applied = 0;
  /** Index of the last entry applied (any kind): what a snapshot taken now covers. */
  #lastIndex = 0;
  #stopped = false;
  readonly #o: DocShardFsmOptions;
  /** Copies loaded from another replica since this process started. */
  snapshotsLoaded = 0;
  /** The ids this replica takes writes for and answers reads of (undefined: every id), set by `own` entries. */
  #owned: OwnedRanges | undefined;
  /** Request ids by log order (oldest first), and what each answered. */
  readonly #requests = new Map<string, { index: number; outcome: DocShardOutcome }>();

  private constructor(docs: DocEngine, store: Store, group: string, db: string, options: DocShardFsmOptions) {
    this.#o = options;
    this.#docs = docs;
    this.#store = store;
    this.group = group;
    this.db = db;
  }

  /** Open the replica: its database (created on first open) and its bookkeeping. */
  static async open(docs: DocEngine, store: Store, group: string, db: string, createdMs: number, options: DocShardFsmOptions = {}): Promise<DocShardFsm> {
    if (docs.has(db)) {
      const owner = docs.ownerOf(db);
      if (owner !== group) {
        throw new FirkinError('conflict', `database ${JSON.stringify(db)} exists on this node ${owner === undefined ? 'as a plain database' : `as a replica of ${owner}`}; it cannot hold shard ${group}`);
      }
    } else {
      await docs.createDb(db, { owner: group, createdMs });
    }
    const fsm = new DocShardFsm(docs, store, group, db, options);
    const applied = await store.get('system', appliedKey(group));
    fsm.#applied = applied === undefined ? 0 : (decodeCbor(applied) as number);
    fsm.#lastIndex = fsm.#applied;
    const owned = await store.get('system', ownedKey(group));
    fsm.#owned = owned === undefined ? undefined : checkOwned(decodeCbor(owned));
    const loaded: [string, { index: number; outcome: DocShardOutcome }][] = [];
    for await (const [key, value] of store.entries('system', requestRange(group))) {
      const rid = decodeKey(key).at(-1) as string;
      const r = decodeCbor(value) as { i: number; o: DocShardOutcome };
      loaded.push([rid, { index: r.i, outcome: r.o }]);
    }
    loaded.sort((a, b) => a[1].index - b[1].index);
    for (const [rid, r] of loaded) fsm.#requests.set(rid, r);
    return fsm;
  }

  /** The most recent `_local` write outcomes by request id (at most `max`), oldest first: what a split or merge carries. */
  localRequests(max: number): [string, LocalOutcome][] {
    const out: [string, LocalOutcome][] = [];
    for (const [rid, r] of this.#requests) if (isLocalOutcome(r.outcome)) out.push([rid, r.outcome]);
    return out.slice(-max);
  }

  /** What the replica owns now (undefined: every id). */
  get owned(): OwnedRanges | undefined {
    return this.#owned;
  }

  /** Whether this replica takes writes for and answers reads of `id`. */
  owns(id: string): boolean {
    return this.#owned === undefined || ownsId(this.#owned, id);
  }

  /** Whether every hash of `range` (by `hash`) is this replica's. */
  ownsRange(hash: string, range: readonly [number, number]): boolean {
    if (this.#owned === undefined) return true;
    if (hash !== this.#owned.hash) return false;
    return this.#owned.ranges.some(([start, end]) => range[0] >= start && range[1] <= end);
  }

  /** `_local/<id>` as this replica holds it (a read on the leader sees every acknowledged write). */
  async local(id: string): Promise<Record<string, unknown> | undefined> {
    const raw = await this.#store.get('system', localKey(this.group, id));
    return raw === undefined ? undefined : renderLocal(id, raw);
  }

  /**
   * The `_local` documents whose id routes into `range` (by `hash`), as stored, in id order
   * after `after`, about `maxBytes` of values at most (one at least): a split's or merge's carry.
   */
  async localsPage(hash: HashFunction, range: readonly [number, number], after: string | undefined, maxBytes: number): Promise<{ entries: [string, Buffer][]; more: boolean }> {
    const all = docShardLocalKeys(this.group);
    const gt = after === undefined ? undefined : localKey(this.group, after);
    const moving: OwnedRanges = { hash, ranges: [range] };
    const entries: [string, Buffer][] = [];
    let bytes = 0;
    for await (const [k, v] of this.#store.entries('system', gt === undefined ? all : { gt, lt: all.lt })) {
      const id = decodeKey(k)[2] as string;
      if (!ownsId(moving, localRouteId(id))) continue;
      if (entries.length > 0 && bytes + v.length > maxBytes) return { entries, more: true };
      entries.push([id, v]);
      bytes += v.length;
    }
    return { entries, more: false };
  }

  /** The last entry whose effects are durable. */
  get appliedIndex(): number {
    return this.#applied;
  }

  /** The applied index as stored (with the documents): what a digest taken between two commits is at. */
  async storedAppliedIndex(): Promise<number> {
    const raw = await this.#store.get('system', appliedKey(this.group));
    return raw === undefined ? 0 : (decodeCbor(raw) as number);
  }

  /** A transfer under way gives up (the replica is being closed or dropped). */
  stop(): void {
    this.#stopped = true;
  }

  async apply(entry: Entry): Promise<unknown> {
    this.#lastIndex = Math.max(this.#lastIndex, entry.index);
    if (entry.index <= this.#applied) return undefined; // applied before a restart
    if (entry.kind !== 'normal' || entry.data.length === 0) {
      // No data (a leader's empty entry, a membership change): the applied index moves past it
      // all the same, stored with no sync (a crash replays it). A snapshot taken after it is
      // at its index, and a replica loading one needs a source applied that far: a group whose
      // last entries carried no data, with no write to come (a reshard's new shard waiting on
      // its copy), could never add a replica (chaos seed 150).
      await this.#store.batch([{ type: 'put', cf: 'system', key: appliedKey(this.group), value: encodeCbor(entry.index) }], { sync: false });
      this.#applied = entry.index;
      return undefined;
    }
    const cmd = decodeDocShardCommand(entry.data);
    const ops: BatchOp[] = [{ type: 'put', cf: 'system', key: appliedKey(this.group), value: encodeCbor(entry.index) }];
    const seen = this.#requests.get(cmd.rid);
    if (seen !== undefined) {
      await this.#store.batch(ops, { sync: true });
      this.#applied = entry.index;
      return seen.outcome;
    }
    let outcome: DocShardOutcome;
    const owned = this.#owned;
    const fenced = owned !== undefined && ((cmd.kind === 'edits' && cmd.copy !== true && cmd.edits.some((e) => !ownsId(owned, e.docId))) || (cmd.kind === 'local' && !ownsId(owned, localRouteId(cmd.id))));
    if (fenced) {
      // A router with an older map: refused whole, with no effect (it routes again on the new
      // map). Not remembered: a switch rolled back gives the range back, and the router sends
      // the same request again here (a `_local` write keeps its request id), to apply now.
      outcome = { kind: 'fenced' };
      await this.#store.batch(ops, { sync: true });
    } else if (cmd.kind === 'edits') {
      const results = await this.#docs.applyLogged(this.db, cmd.edits, { at: cmd.at, ops: (r) => this.#remember(cmd.rid, entry.index, { kind: 'edits', results: r }, ops) });
      outcome = { kind: 'edits', results };
    } else if (cmd.kind === 'local') {
      const key = localKey(this.group, cmd.id);
      const current = await this.#store.get('system', key);
      let write: BatchOp[] = [];
      try {
        if (cmd.body === null) {
          localDelete(cmd.id, current, cmd.rev);
          write = [{ type: 'del', cf: 'system', key }];
          outcome = { kind: 'local', rev: '0-0' };
        } else {
          const w = localWrite(cmd.id, current, cmd.body, { rev: cmd.rev });
          write = [{ type: 'put', cf: 'system', key, value: w.value }];
          outcome = { kind: 'local', rev: w.rev };
        }
      } catch (err) {
        // A refusal is decided by the replicated state alone: every replica refuses alike.
        if (!isFirkinError(err)) throw err;
        outcome = { kind: 'local', refused: { code: err.code, message: err.message } };
      }
      await this.#store.batch([...this.#remember(cmd.rid, entry.index, outcome, ops), ...write], { sync: true });
    } else if (cmd.kind === 'locals') {
      outcome = { kind: 'locals' };
      const write: BatchOp[] = [
        ...cmd.put.map(([id, value]): BatchOp => ({ type: 'put', cf: 'system', key: localKey(this.group, id), value: Buffer.from(value) })),
        ...cmd.drop.map((id): BatchOp => ({ type: 'del', cf: 'system', key: localKey(this.group, id) })),
      ];
      let batch = this.#remember(cmd.rid, entry.index, outcome, ops);
      for (const [rid, carried] of cmd.reqs ?? []) {
        if (rid === cmd.rid || this.#requests.has(rid)) continue;
        batch = this.#remember(rid, entry.index, carried, batch);
        this.#requests.set(rid, { index: entry.index, outcome: carried });
      }
      await this.#store.batch([...batch, ...write], { sync: true });
    } else if (cmd.kind === 'own' && cmd.owned.n !== undefined && this.#owned?.n !== undefined && cmd.owned.n < this.#owned.n) {
      // A rolled-back switch's fence, committed after its range was given back: no effect.
      outcome = { kind: 'own', stale: true };
      await this.#store.batch(this.#remember(cmd.rid, entry.index, outcome, ops), { sync: true });
    } else if (cmd.kind === 'own') {
      outcome = { kind: 'own' };
      await this.#store.batch([...this.#remember(cmd.rid, entry.index, outcome, ops), { type: 'put', cf: 'system', key: ownedKey(this.group), value: encodeCbor(cmd.owned) }], { sync: true });
      this.#owned = cmd.owned;
    } else if (cmd.kind === 'purge') {
      // Every replica holds the same documents here, so purges the same ones. A crash half way
      // re-applies the entry after the restart and purges the rest.
      const moving = { hash: cmd.hash, ranges: [cmd.range] };
      const ids: string[] = [];
      for await (const batch of this.#docs.scanRecords(this.db)) for (const d of batch) if (ownsId(moving, d.id)) ids.push(d.id);
      let purged = 0;
      for (let i = 0; i < ids.length; i += PURGE_BATCH) purged += await this.#docs.purge(this.db, ids.slice(i, i + PURGE_BATCH), this.group);
      outcome = { kind: 'purge', purged };
      await this.#store.batch(this.#remember(cmd.rid, entry.index, outcome, ops), { sync: true });
    } else {
      await this.#docs.compactLogged(this.db);
      outcome = { kind: 'compact' };
      await this.#store.batch(this.#remember(cmd.rid, entry.index, outcome, ops), { sync: true });
    }
    if (!fenced) {
      this.#requests.set(cmd.rid, { index: entry.index, outcome });
      while (this.#requests.size > REQUEST_WINDOW) this.#requests.delete(this.#requests.keys().next().value!);
    }
    this.#applied = entry.index;
    return outcome;
  }

  /** `ops` plus the record of request `rid` and the removal of the ids that fall out of the window. */
  #remember(rid: string, index: number, outcome: DocShardOutcome, ops: readonly BatchOp[]): BatchOp[] {
    const out: BatchOp[] = [...ops];
    const overflow = this.#requests.size + 1 - REQUEST_WINDOW;
    let i = 0;
    for (const old of this.#requests.keys()) {
      if (i++ >= overflow) break;
      out.push({ type: 'del', cf: 'system', key: requestKey(this.group, old) });
    }
    out.push({ type: 'put', cf: 'system', key: requestKey(this.group, rid), value: encodeCbor({ i: index, o: outcome }) });
    return out;
  }

  snapshot(): Uint8Array {
    return encodeCbor({ index: this.#lastIndex, v: 2 });
  }

  async restore(data: Uint8Array): Promise<void> {
    const snap = decodeCbor(data) as { index?: unknown };
    if (typeof snap.index !== 'number') throw new FirkinError('error', 'VDB shard snapshot does not decode');
    const index = snap.index;
    this.#lastIndex = Math.max(this.#lastIndex, index);
    if (index <= this.#applied) return; // this replica already holds it
    const source = this.#o.source;
    if (source === undefined) throw new FirkinError('error', `VDB shard ${this.group}: no replica to load the snapshot at ${index} from`);
    for (let attempt = 1; ; attempt++) {
      if (this.#stopped) throw new FirkinError('unavailable', 'the replica stopped while loading a snapshot');
      try {
        await this.#load(source, index);
        return;
      } catch (err) {
        if (this.#stopped) throw err;
        const delayMs = this.#o.rand === undefined ? RETRY.baseMs * attempt : jitteredDelayMs(attempt, RETRY, this.#o.rand);
        this.#o.onRetry?.(err, attempt, delayMs);
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  }

  /** Drop this replica's database and bookkeeping, then install a copy of another replica's at or past `index`. */
  async #load(source: DocStateSource, index: number): Promise<void> {
    if (this.#docs.has(this.db)) await this.#docs.deleteDb(this.db, this.group);
    await this.#store.clearRange('system', docShardKeys(this.group));
    await this.#store.clearRange('system', docShardLocalKeys(this.group));
    this.#requests.clear();
    this.#applied = 0;
    const state = await source(index);
    if (state.applied < index) throw new FirkinError('unavailable', `the source had applied only ${state.applied}, the snapshot is at ${index}`);
    const requests = [...state.requests].sort((a, b) => a.index - b.index).slice(-REQUEST_WINDOW);
    const ops: BatchOp[] = [
      { type: 'put', cf: 'system', key: appliedKey(this.group), value: encodeCbor(state.applied) },
      ...(state.owned === undefined ? [] : [{ type: 'put', cf: 'system', key: ownedKey(this.group), value: encodeCbor(state.owned) } as BatchOp]),
      ...requests.map((r): BatchOp => ({ type: 'put', cf: 'system', key: requestKey(this.group, r.rid), value: encodeCbor({ i: r.index, o: r.outcome }) })),
    ];
    // The `_local` documents come as system entries among the documents' chunks: written
    // here (the import's final synced batch makes them durable with the rest).
    const locals = docShardLocalKeys(this.group);
    const store = this.#store;
    async function* documents(): AsyncGenerator<{ cf: ColumnFamily; entries: readonly [Buffer, Buffer][] }> {
      for await (const chunk of state.chunks) {
        if (chunk.cf !== 'system') {
          yield chunk;
          continue;
        }
        if (chunk.entries.some(([k]) => Buffer.compare(k, locals.gte) < 0 || Buffer.compare(k, locals.lt) >= 0)) throw new FirkinError('bad_request', 'a shard copy holds a system key outside its local documents');
        await store.batch(chunk.entries.map(([key, value]): BatchOp => ({ type: 'put', cf: 'system', key, value })), { sync: false });
      }
    }
    await this.#docs.importDb(this.db, state.record, documents(), ops);
    for (const r of requests) this.#requests.set(r.rid, { index: r.index, outcome: r.outcome });
    this.#applied = state.applied;
    this.#owned = state.owned;
    this.snapshotsLoaded++;
  }

  /**
   * This replica's state for a transfer or a digest: iterators opened between two commits,
   * with the applied index and request ids of that same moment.
   */
  async exportState(): Promise<DocShardState> {
    // The local documents stream among the chunks (a shard may hold many); the bookkeeping last.
    const view = await this.#docs.exportDb(this.db, [docShardLocalKeys(this.group), docShardKeys(this.group)]);
    const own = view.ranges.at(-1)!;
    let applied = 0;
    let owned: OwnedRanges | undefined;
    const requests: RequestRecord[] = [];
    for (let batch = await own.cursor.next(); batch.length > 0; batch = await own.cursor.next()) {
      for (const [key, value] of batch) {
        const parts = decodeKey(key);
        if (parts[2] === 'applied') applied = decodeCbor(value) as number;
        else if (parts[2] === 'owned') owned = checkOwned(decodeCbor(value));
        else if (parts[2] === 'req') {
          const r = decodeCbor(value) as { i: number; o: DocShardOutcome };
          requests.push({ rid: parts[3] as string, index: r.i, outcome: r.o });
        }
      }
    }
    await own.cursor.close();
    const ranges = view.ranges.slice(0, -1);
    const close = async () => {
      for (const r of ranges) await r.cursor.close();
    };
    async function* chunks(): AsyncGenerator<{ cf: ColumnFamily; entries: [Buffer, Buffer][] }> {
      try {
        for (const range of ranges) {
          for (let batch = await range.cursor.next(); batch.length > 0; batch = await range.cursor.next()) yield { cf: range.cf, entries: batch };
          await range.cursor.close();
        }
      } finally {
        await close();
      }
    }
    return { record: view.record, applied, requests, ...(owned === undefined ? {} : { owned }), chunks: chunks(), close };
  }
}
