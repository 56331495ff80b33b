// Virtual databases across the cluster: each VDB shard is a Raft group (`ds<n>`) of
// `replica_factor` replicas placed like vector shards (zone-aware, balanced, deterministic),
// hosted through the same framework (`shard-host.ts`). Its state machine is an ordinary local
// database written only by its log (`docdb/vdb/shard-fsm.ts`).
//
// - Writes: the node that takes the request decides what a replica could decide differently
//   (ids, the clock `at`, a request id), routes each edit by the hash of its id, and proposes
//   one entry per shard to its leader; `_bulk_docs` proposes its shards in parallel and
//   answers in request order. Acknowledged = committed on a majority and applied.
// - Reads (document, `_find`, `_changes`, info): on the shard's leader after a ReadIndex
//   barrier, so a read sees every acknowledged write; `stale` reads (find) take any replica.
// - `_changes` merges the shards by sequence. Its `since`/`last_seq` is a cursor per shard
//   (`sinceToken`): each shard's sequences are decided by its log, the same on every
//   replica, so a cursor stays valid across a failover.
// - Plain databases (`/db/:db`) stay node-local; see docs/vdb.md.
import { createHash, randomBytes } from 'node:crypto';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { FirkinError, isFirkinError } from '../core/errors.js';
import { type Clock, type Hlc, type HybridClock, compareHlc, parseHlc } from '../core/hlc.js';
import { type HashRange, hashId, initialRanges, shardFor } from '../core/shard-hash.js';
import type { Blob, ParsedDoc } from '../docdb/doc-input.js';
import type { AttachmentMeta } from '../docdb/records.js';
import { type DocEdit, type DocEngine, type EditResult, bulkEdits } from '../docdb/engine.js';
import type { ValueCounts } from '../docdb/query/counts.js';
import { executeFind } from '../docdb/query/execute.js';
import { mergeFind } from '../docdb/vdb/merge.js';
import { parseFind } from '../docdb/query/parse.js';
import type { FindQuery } from '../docdb/query/ast.js';
import { checkVdbName, shardDb } from '../docdb/vdb/catalog.js';
import { type DocShardState, DocShardFsm, type RequestRecord, docShardKeys, isRequestRecord } from '../docdb/vdb/shard-fsm.js';
import type { ColumnFamily } from '../storage/db.js';
import { type DocShardCommand, type DocShardOutcome, encodeDocShardCommand } from '../docdb/vdb/shard-commands.js';
import type { CreateVdb, ImportSpec, VdbAttachment, VdbChangesOptions, VdbService } from '../docdb/vdb/service.js';
import { runImport } from '../docdb/vdb/import.js';
import type { MetaState, ShardPlacement, VdbPlacement } from './meta-state.js';
import { placeShards, placementCandidates } from './placement.js';
import { type HostedReplica, ShardHost, type ShardHostOptions, type WantedReplica } from './shard-host.js';

export interface DocShardsOptions extends ShardHostOptions {
  docs: DocEngine;
  counts?: ValueCounts;
  hlc: HybridClock;
  clock: Clock;
  newId: () => string;
  /** A shard leader proposes a compaction after this many written documents (0: never). */
  compactAfterWrites: number;
  /**
   * The chaos suite's deliberately broken build (FIRKIN_UNSAFE_FIXTURE=stale-reads): document
   * reads (GET) are served like stale ones, by any replica without a ReadIndex round. Its
   * checker must catch it. Never set outside that test.
   */
  unsafeStaleReads?: boolean;
}

interface DocReplica extends HostedReplica {
  readonly fsm: DocShardFsm;
}

type ReadRequest =
  | { op: 'get'; id: string; rev?: string; revs?: boolean; conflicts?: boolean }
  | { op: 'att'; id: string; name: string; rev?: string }
  | { op: 'find'; q: unknown; limit: number | null; owns?: undefined }
  | { op: 'changes'; since: [number, number] | null; limit: number; docs: boolean; w?: number }
  | { op: 'info' }
  | { op: 'digest' };

/** A snapshot transfer whose reader stopped asking for this long is closed. */
const EXPORT_IDLE_MS = 60_000;
/** Each call of a snapshot transfer waits at most this long for its chunk. */
const EXPORT_CALL_MS = 30_000;
/** A transfer chunk carries about this many bytes of keys and values. */
const EXPORT_CHUNK_BYTES = 1 << 20;

interface ExportSession {
  readonly group: string;
  readonly state: DocShardState;
  readonly chunks: AsyncIterator<{ cf: ColumnFamily; entries: readonly [Buffer, Buffer][] }>;
  lastUsedMs: number;
}

const notFoundVdb = (name: string) => new FirkinError('not_found', `virtual database ${JSON.stringify(name)} does not exist`);

/** The hash ranges of a clustered VDB, in the shape the routing functions take. */
function rangesOf(v: VdbPlacement): HashRange[] {
  return v.shards.map((s, i) => ({ shardId: i, start: s.range[0], end: s.range[1] }));
}

/** A `_changes` cursor: one sequence per shard (null: from the start). */
export function encodeSinceToken(seqs: readonly (Hlc | null)[]): string {
  return `c1-${Buffer.from(encodeCbor(seqs.map((h) => (h === null ? null : [h.wallMs, h.logical])))).toString('base64url')}`;
}

/** `since` of a clustered VDB feed: first/0 (nothing), a cursor, or one plain sequence for every shard. */
export function decodeSince(raw: string | undefined, shardCount: number): (Hlc | null)[] {
  if (raw === undefined || raw === '' || raw === '0' || raw === 'first') return new Array<Hlc | null>(shardCount).fill(null);
  if (raw.startsWith('c1-')) {
    let seqs: unknown;
    try {
      seqs = decodeCbor(Buffer.from(raw.slice(3), 'base64url'));
    } catch {
      seqs = undefined;
    }
    const ok = Array.isArray(seqs) && seqs.length === shardCount && seqs.every((s) => s === null || (Array.isArray(s) && s.length === 2 && s.every((x) => Number.isSafeInteger(x) && x >= 0)));
    if (!ok) throw new FirkinError('bad_request', `since ${JSON.stringify(raw)} is not a cursor of this virtual database (it has ${shardCount} shards)`);
    return (seqs as ([number, number] | null)[]).map((s) => (s === null ? null : { wallMs: s[0], logical: s[1] }));
  }
  const h = parseHlc(raw);
  if (h === undefined) throw new FirkinError('bad_request', `since must be first, 0, now, a last_seq of this feed or a sequence like {timestamp,W,L}, got ${JSON.stringify(raw)}`);
  return new Array<Hlc | null>(shardCount).fill(h);
}

export class DocShards extends ShardHost<DocReplica, VdbPlacement> implements VdbService {
  readonly prefix = 'dshard';
  readonly #o: DocShardsOptions;
  /** Documents written through this leader per group since its last compaction entry. */
  readonly #writesSinceCompact = new Map<string, number>();
  readonly #exports = new Map<string, ExportSession>();
  /** A long-poll waits on a shard leader at most this long per call (well inside one routing attempt). */
  get #longpollSliceMs(): number {
    return Math.max(50, Math.min(1_000, Math.floor(this.o.member.timings.proposalTimeoutMs / 6)));
  }
  /** Snapshot transfers tried per group: each retry asks the next replica. */
  readonly #pullAttempts = new Map<string, number>();

  private constructor(o: DocShardsOptions) {
    super(o);
    this.#o = o;
  }

  static async start(o: DocShardsOptions): Promise<DocShards> {
    const host = new DocShards(o);
    await host.begin();
    return host;
  }

  protected placements(state: MetaState): WantedReplica<VdbPlacement>[] {
    return Object.values(state.vdbs).flatMap((v) => v.shards.map((shard) => ({ owner: v, shard })));
  }

  protected concerns(type: string): boolean {
    return type.startsWith('vdb.') || type.startsWith('shard.');
  }

  protected async open(vdb: VdbPlacement, placement: ShardPlacement): Promise<DocReplica> {
    const index = vdb.shards.findIndex((s) => s.group === placement.group);
    const log = this.#o.log;
    const fsm = await DocShardFsm.open(this.#o.docs, this.#o.store, placement.group, shardDb(vdb.name, index), vdb.config.createdMs, {
      source: (at) => this.#pull(placement.group, at),
      rand: this.#o.rand,
      onRetry: (err, attempt, delayMs) => log.warn({ group: placement.group, attempt, delayMs, err: (err as Error).message }, `loading VDB shard replica ${placement.group} from a snapshot failed; retrying`),
    });
    const group = await this.raftGroup(placement, fsm, () => fsm.appliedIndex);
    return { placement, fsm, group };
  }

  protected async dropData(group: string, replica: DocReplica): Promise<void> {
    if (this.#o.docs.has(replica.fsm.db)) await this.#o.docs.deleteDb(replica.fsm.db, group);
    await this.#o.store.clearRange('system', docShardKeys(group));
  }

  protected stopReplica(replica: DocReplica): void {
    replica.fsm.stop();
  }

  protected override housekeeping(): void {
    const now = Date.now();
    for (const [id, s] of this.#exports) {
      if (now - s.lastUsedMs < EXPORT_IDLE_MS) continue;
      this.#exports.delete(id);
      void s.state.close();
    }
  }

  override async close(): Promise<void> {
    for (const s of this.#exports.values()) await s.state.close();
    this.#exports.clear();
    await super.close();
  }

  protected async closeReplica(): Promise<void> {}

  // ---- answering (on a replica) --------------------------------------------------------------

  protected async answerOwn(_from: string, method: string, req: Record<string, unknown> & { g: string }): Promise<Uint8Array> {
    switch (method) {
      case 'dshard.propose': {
        if (!(req.c instanceof Uint8Array)) throw new FirkinError('bad_request', 'shard proposal without a command');
        const r = this.leading(req.g);
        this.checkDeadline(req);
        const outcome = ((await r.group.propose(req.c)) ?? null) as DocShardOutcome | null;
        if (outcome?.kind === 'edits') this.#countWrites(r, outcome.results.length);
        return encodeCbor({ o: outcome });
      }
      case 'dshard.read': {
        const stale = req.s === true;
        const r = stale ? this.hostedReplica(req.g) : this.leading(req.g);
        if (!stale) await r.group.readBarrier();
        return encodeCbor(await this.#read(r.fsm, req as unknown as ReadRequest));
      }
      case 'dshard.export':
        return this.#export(req.g, req.s);
      default:
        throw new FirkinError('not_found', `unknown shard call ${method}`);
    }
  }

  /**
   * One call of a snapshot transfer: the first opens a consistent view of the replica's state
   * and answers its header (record, applied index, request ids); later ones answer the keys
   * in chunks of about a megabyte, then `done`.
   */
  async #export(group: string, session: unknown): Promise<Uint8Array> {
    if (session === undefined) {
      const state = await this.hostedReplica(group).fsm.exportState();
      const id = randomBytes(9).toString('base64url');
      this.#exports.set(id, { group, state, chunks: state.chunks[Symbol.asyncIterator](), lastUsedMs: Date.now() });
      return encodeCbor({ s: id, record: state.record, applied: state.applied, requests: state.requests });
    }
    const id = String(session);
    const s = this.#exports.get(id);
    if (s === undefined || s.group !== group) throw new FirkinError('not_found', `no snapshot transfer ${id} of ${group} (it expired or the node restarted)`);
    s.lastUsedMs = Date.now();
    const out: { cf: ColumnFamily; e: readonly [Buffer, Buffer][] }[] = [];
    let bytes = 0;
    while (bytes < EXPORT_CHUNK_BYTES) {
      const next = await s.chunks.next();
      if (next.done === true) break;
      out.push({ cf: next.value.cf, e: next.value.entries });
      for (const [k, v] of next.value.entries) bytes += k.length + v.length;
    }
    if (out.length === 0) {
      this.#exports.delete(id);
      await s.state.close();
      return encodeCbor({ s: id, done: true });
    }
    return encodeCbor({ s: id, c: out });
  }

  /**
   * The state of `group` at or past `index`, from a replica: the leader first, then (on each
   * retry) the next replica of the placement.
   */
  async #pull(group: string, index: number): Promise<DocShardState> {
    const replica = this.replicas.get(group);
    const leader = replica?.group.core.leader ?? null;
    const others = (replica?.placement.replicas ?? []).filter((n) => n !== this.me && n !== leader);
    const candidates = [...(leader === null || leader === this.me ? [] : [leader]), ...others];
    const attempt = this.#pullAttempts.get(group) ?? 0;
    this.#pullAttempts.set(group, attempt + 1);
    const source = candidates[attempt % Math.max(1, candidates.length)];
    if (source === undefined) throw new FirkinError('unavailable', `no replica of ${group} to stream a snapshot from`);
    this.#o.log.info({ group, source, index }, `loading VDB shard replica ${group} from ${source} (snapshot at ${index})`);
    const call = async (s?: string) => decodeCbor(await this.#o.member.callPeer(source, 'dshard.export', encodeCbor({ g: group, ...(s === undefined ? {} : { s }) }), EXPORT_CALL_MS)) as Record<string, unknown>;
    const head = await call();
    const requests = head.requests as unknown;
    if (typeof head.s !== 'string' || !(head.record instanceof Uint8Array) || typeof head.applied !== 'number' || !Array.isArray(requests) || !requests.every(isRequestRecord)) {
      throw new FirkinError('error', 'snapshot transfer: bad header');
    }
    const session = head.s;
    const log = this.#o.log;
    const attempts = this.#pullAttempts;
    async function* chunks(): AsyncGenerator<{ cf: ColumnFamily; entries: [Buffer, Buffer][] }> {
      let keys = 0;
      for (;;) {
        const reply = await call(session);
        if (reply.done === true) break;
        if (!Array.isArray(reply.c)) throw new FirkinError('error', 'snapshot transfer: bad chunk');
        for (const c of reply.c as { cf: ColumnFamily; e: [Uint8Array, Uint8Array][] }[]) {
          const entries = c.e.map(([k, v]) => [Buffer.from(k), Buffer.from(v)] as [Buffer, Buffer]);
          keys += entries.length;
          yield { cf: c.cf, entries };
        }
      }
      log.info({ group, source, keys, applied: head.applied }, `loaded VDB shard replica ${group}: ${keys} keys at applied index ${String(head.applied)}`);
      attempts.delete(group);
    }
    return { record: Buffer.from(head.record), applied: head.applied, requests: requests as RequestRecord[], chunks: chunks(), close: async () => undefined };
  }

  /**
   * Compaction is a log entry: the leader proposes one after enough writes, and every replica
   * compacts at that index (a local timer would make the replicas' bodies differ).
   */
  #countWrites(r: DocReplica, n: number): void {
    const every = this.#o.compactAfterWrites;
    if (every <= 0) return;
    const count = (this.#writesSinceCompact.get(r.placement.group) ?? 0) + n;
    if (count < every) {
      this.#writesSinceCompact.set(r.placement.group, count);
      return;
    }
    this.#writesSinceCompact.set(r.placement.group, 0);
    const compact = encodeDocShardCommand({ kind: 'compact', rid: randomBytes(12).toString('base64url') });
    void r.group.propose(compact).catch((err: unknown) => this.#o.log.warn({ group: r.placement.group, err: (err as Error).message }, 'proposing a compaction failed; the next writes try again'));
  }

  async #read(fsm: DocShardFsm, q: ReadRequest): Promise<Record<string, unknown>> {
    const { docs, store, counts } = this.#o;
    switch (q.op) {
      case 'get':
        return { d: await docs.getDoc(fsm.db, q.id, { rev: q.rev, revs: q.revs, conflicts: q.conflicts }) };
      case 'att': {
        // The bytes travel whole in the reply (bounded by SERVICE_ATTACHMENT_MAX_BYTES, as in a log entry).
        const att = await docs.getAttachment(fsm.db, q.id, q.name, q.rev);
        const parts: Buffer[] = [];
        for await (const chunk of att.chunks()) parts.push(chunk);
        return { meta: att.meta, rev: att.rev, data: Buffer.concat(parts) };
      }
      case 'find': {
        const parsed = parseFind(q.q);
        const result = await executeFind({ docs, store, counts }, fsm.db, { ...parsed, offset: 0, limit: q.limit ?? undefined, includeDocs: true });
        return { docs: result.docs, total: result.meta.total };
      }
      case 'changes': {
        const options = { since: q.since === null ? undefined : { wallMs: q.since[0], logical: q.since[1] }, limit: q.limit, descending: false, docIds: undefined, includeDocs: q.docs };
        // Long-poll slice: with nothing new, wait (bounded by the caller) for the next commit.
        const waitMs = typeof q.w === 'number' ? Math.min(Math.max(0, q.w), this.#longpollSliceMs) : 0;
        const woken = waitMs > 0 ? docs.waitForChange(fsm.db, waitMs) : undefined;
        let page = await docs.changes(fsm.db, options);
        if (page.results.length === 0 && woken !== undefined) {
          await woken;
          page = await docs.changes(fsm.db, options);
        }
        return { results: page.results.map((e) => ({ id: e.id, seq: e.seq, rev: e.rev, deleted: e.deleted, ...(q.docs ? { doc: e.doc ?? null } : {}) })), last: page.lastSeq === undefined ? null : [page.lastSeq.wallMs, page.lastSeq.logical] };
      }
      case 'info': {
        const info = docs.dbInfo(fsm.db);
        const last = docs.lastSeq(fsm.db);
        return { doc_count: info.doc_count, disk_size: info.disk_size, last: [last.wallMs, last.logical], applied: fsm.appliedIndex };
      }
      case 'digest':
        return this.#digest(fsm);
      default:
        throw new FirkinError('bad_request', 'unknown shard read');
    }
  }

  /**
   * A digest of a replica's database (every key and value of its document column families)
   * and the applied index it is at: one consistent view, taken between two commits.
   */
  async #digest(fsm: DocShardFsm): Promise<Record<string, unknown>> {
    const state = await fsm.exportState();
    const hash = createHash('sha256');
    let entries = 0;
    for await (const chunk of state.chunks) {
      hash.update(chunk.cf);
      for (const [k, v] of chunk.entries) {
        hash.update(k).update(v);
        entries++;
      }
    }
    return { sha256: hash.digest('hex'), entries, applied: state.applied, docs: this.#o.docs.dbInfo(fsm.db).doc_count };
  }

  /** Digests of the VDB shard replicas hosted here (tests and the admin view compare them). */
  async digests(): Promise<{ group: string; db: string; applied: number; sha256: string; docs: number }[]> {
    const out: { group: string; db: string; applied: number; sha256: string; docs: number }[] = [];
    for (const [group, r] of this.replicas) {
      if (!this.#o.docs.has(r.fsm.db)) continue; // loading a copy just now
      const d = await this.#digest(r.fsm);
      out.push({ group, db: r.fsm.db, applied: d.applied as number, sha256: d.sha256 as string, docs: d.docs as number });
    }
    return out;
  }

  replicaStatus(): { group: string; db: string; role: string; leader: string | null; term: number; applied: number; snapshots_loaded: number }[] {
    return [...this.replicas].map(([group, r]) => {
      const s = r.group.status();
      return { group, db: r.fsm.db, role: s.role, leader: s.leader, term: s.term, applied: r.fsm.appliedIndex, snapshots_loaded: r.fsm.snapshotsLoaded };
    });
  }

  // ---- the VDB service (any node) ------------------------------------------------------------

  #vdb(name: string): VdbPlacement {
    const v = this.#o.member.state.vdbs[name];
    if (v === undefined) throw notFoundVdb(name);
    return v;
  }

  #route(v: VdbPlacement, id: string): number {
    return shardFor(rangesOf(v), hashId(id, v.config.hashFunction));
  }

  async #readShard(shard: ShardPlacement, q: ReadRequest, stale = false): Promise<Record<string, unknown>> {
    const s = stale || (q.op === 'get' && this.#o.unsafeStaleReads === true);
    return this.leaderCall(shard, 'dshard.read', { ...q, ...(s ? { s: true } : {}) });
  }

  async #propose(shard: ShardPlacement, command: DocShardCommand): Promise<DocShardOutcome> {
    const reply = await this.leaderCall(shard, 'dshard.propose', { c: encodeDocShardCommand(command) });
    const o = reply.o as DocShardOutcome | null;
    if (o === null) throw new FirkinError('error', `shard ${shard.group} applied a write without an outcome`);
    return o;
  }

  #readonlyError(v: VdbPlacement, shardId: number): FirkinError | undefined {
    if (v.shards[shardId]?.readonly !== true) return undefined;
    return new FirkinError('forbidden', `shard ${shardId} of virtual database ${JSON.stringify(v.name)} is read-only`);
  }

  /** Propose edits grouped by shard, in parallel; results in the order of `edits`. */
  async #write(v: VdbPlacement, edits: readonly (DocEdit | EditResult)[]): Promise<EditResult[]> {
    const results: EditResult[] = new Array(edits.length);
    const groups = new Map<number, number[]>();
    edits.forEach((e, i) => {
      if (!('kind' in e)) {
        results[i] = e;
        return;
      }
      const shardId = this.#route(v, e.docId);
      const refused = this.#readonlyError(v, shardId);
      if (refused !== undefined) {
        results[i] = { ok: false, id: e.docId, error: refused.code, message: refused.message };
        return;
      }
      groups.set(shardId, [...(groups.get(shardId) ?? []), i]);
    });
    const at = this.#o.hlc.now();
    await Promise.all(
      [...groups].map(async ([shardId, idx]) => {
        const rid = randomBytes(12).toString('base64url');
        const outcome = await this.#propose(v.shards[shardId]!, { kind: 'edits', rid, at, edits: idx.map((i) => edits[i] as DocEdit) });
        if (outcome.kind !== 'edits' || outcome.results.length !== idx.length) throw new FirkinError('error', `shard ${shardId} answered a write with the wrong outcome`);
        outcome.results.forEach((r, j) => (results[idx[j]!] = r));
      }),
    );
    return results;
  }

  async #writeOne(name: string, edit: DocEdit): Promise<EditResult & { ok: true }> {
    const [result] = await this.#write(this.#vdb(name), [edit]);
    if (result!.ok) return result!;
    throw new FirkinError(result!.error as FirkinError['code'], result!.message);
  }

  async create(spec: CreateVdb): Promise<Record<string, unknown>> {
    checkVdbName(spec.name);
    const state = this.#o.member.state;
    if (state.vdbs[spec.name] !== undefined) throw new FirkinError('conflict', `virtual database ${JSON.stringify(spec.name)} already exists`);
    const nodes = placementCandidates(state, spec.zones);
    if (nodes.length < spec.replicaFactor) {
      const where = spec.zones.length === 0 ? '' : ` in zones ${spec.zones.join(', ')}`;
      throw new FirkinError('bad_request', `replica_factor ${spec.replicaFactor} needs ${spec.replicaFactor} healthy nodes${where}; ${nodes.length} are up (${nodes.map((n) => n.name).join(', ') || 'none'})`);
    }
    const replicas = placeShards(spec.shardCount, spec.replicaFactor, nodes);
    const ranges = initialRanges(spec.shardCount);
    await this.#o.member.propose({
      type: 'vdb.create',
      name: spec.name,
      config: { hashFunction: spec.hashFunction, replicaFactor: spec.replicaFactor, zones: spec.zones, createdMs: this.#o.clock.nowMs() },
      shards: replicas.map((r, i) => ({ range: [ranges[i]!.start, ranges[i]!.end] as const, replicas: r })),
    });
    this.#o.log.info({ vdb: spec.name, shards: replicas }, `virtual database ${spec.name} placed: ${replicas.map((r, i) => `shard ${i} on ${r.join('+')}`).join(', ')}`);
    // Usable when it answers: every shard has a leader that can confirm a read.
    const v = this.#vdb(spec.name);
    await Promise.all(v.shards.map((s) => this.#readShard(s, { op: 'info' })));
    return this.info(spec.name);
  }

  async delete(name: string): Promise<void> {
    this.#vdb(name);
    await this.#o.member.propose({ type: 'vdb.delete', name });
  }

  list(): string[] {
    return Object.keys(this.#o.member.state.vdbs).sort();
  }

  async info(name: string): Promise<Record<string, unknown>> {
    const v = this.#vdb(name);
    const shards = await Promise.all(v.shards.map(async (s, i) => ({ db: shardDb(name, i), ...((await this.#readShard(s, { op: 'info' })) as { doc_count: number; disk_size: number }) })));
    return {
      name,
      shard_count: v.shards.length,
      hash_function: v.config.hashFunction,
      placement: { replica_factor: v.config.replicaFactor, zones: v.config.zones },
      created_at: v.config.createdMs,
      total_docs: shards.reduce((n, s) => n + s.doc_count, 0),
      total_disk_size: shards.reduce((n, s) => n + s.disk_size, 0),
      shards: shards.map((s) => ({ db: s.db, doc_count: s.doc_count, disk_size: s.disk_size })),
    };
  }

  /** Assignments: `primary` is the shard's Raft leader now (null while it has none). */
  async shards(name: string): Promise<Record<string, unknown>> {
    const v = this.#vdb(name);
    const statuses = await this.shardStatuses(v.shards);
    return {
      shards: v.shards.map((s, i) => {
        const st = statuses[i]!;
        const leader = typeof st.leader === 'string' ? st.leader : null;
        return { shard_id: i, primary: leader, replicas: s.replicas, status: s.readonly === true ? 'readonly' : leader === null ? 'unavailable' : 'active', group: s.group, ...(st.lag === undefined ? {} : { lag: st.lag, voters: st.voters, learners: st.learners }) };
      }),
      ranges: v.shards.map((s, i) => ({ shard_id: i, start_hash: s.range[0], end_hash: s.range[1] })),
    };
  }

  /** Replication is Raft's: each replica's lag behind its leader stands in for a task. */
  async replication(name: string): Promise<Record<string, unknown>> {
    const v = this.#vdb(name);
    const statuses = await this.shardStatuses(v.shards);
    return {
      vdb_name: name,
      replica_factor: v.config.replicaFactor,
      shard_count: v.shards.length,
      shards: v.shards.map((s, i) => {
        const st = statuses[i]!;
        const leader = typeof st.leader === 'string' ? st.leader : null;
        const lag = (st.lag ?? {}) as Record<string, number | null>;
        return {
          shard_id: i,
          replication_tasks: s.replicas
            .filter((r) => r !== leader)
            .map((r) => ({ source: leader ?? 'none', target: r, status: leader === null ? 'no_leader' : lag[r] === 0 ? 'in_sync' : lag[r] === null || lag[r] === undefined ? 'unknown' : 'catching_up', lag: lag[r] ?? null })),
        };
      }),
    };
  }

  async bulkDocs(name: string, docs: readonly unknown[], newEdits = true): Promise<EditResult[]> {
    return this.#write(this.#vdb(name), bulkEdits(docs, newEdits, this.#o.newId));
  }

  async getDoc(name: string, id: string, options: { rev?: string; revs?: boolean; conflicts?: boolean }): Promise<Record<string, unknown>> {
    const v = this.#vdb(name);
    const reply = await this.#readShard(v.shards[this.#route(v, id)]!, { op: 'get', id, ...options });
    return reply.d as Record<string, unknown>;
  }

  putDoc(name: string, id: string, doc: ParsedDoc, rev: string | undefined): Promise<EditResult & { ok: true }> {
    return this.#writeOne(name, { kind: 'update', docId: id, body: doc.body, attachments: doc.attachments, deleted: doc.deleted, rev });
  }

  deleteDoc(name: string, id: string, rev: string): Promise<EditResult & { ok: true }> {
    return this.#writeOne(name, { kind: 'update', docId: id, body: {}, attachments: undefined, deleted: true, rev });
  }

  putAttachment(name: string, id: string, attName: string, rev: string | undefined, blob: Blob | undefined): Promise<EditResult & { ok: true }> {
    return this.#writeOne(name, { kind: 'attach', docId: id, name: attName, rev, blob });
  }

  /** Read on the shard's leader after its ReadIndex barrier, like a document GET. */
  async getAttachment(name: string, id: string, attName: string, rev: string | undefined): Promise<VdbAttachment> {
    const v = this.#vdb(name);
    const reply = await this.#readShard(v.shards[this.#route(v, id)]!, { op: 'att', id, name: attName, ...(rev === undefined ? {} : { rev }) });
    const raw = reply.data as Uint8Array;
    const data = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    return {
      meta: reply.meta as AttachmentMeta,
      rev: reply.rev as string,
      async *chunks() {
        yield data;
      },
    };
  }

  /** Every shard's `_find` in parallel, merged in the query's order; `total` counts every match. */
  async find(name: string, raw: unknown, options: { stale?: boolean } = {}): Promise<Record<string, unknown>> {
    const v = this.#vdb(name);
    const q = parseFind(raw);
    const perShard = q.limit === undefined ? null : q.offset + q.limit;
    const results = await Promise.all(v.shards.map((s) => this.#readShard(s, { op: 'find', q: raw, limit: perShard }, options.stale === true)));
    return mergeFind(q, results.map((r) => ({ docs: r.docs as Record<string, unknown>[], total: r.total as number })));
  }

  /**
   * The merged feed: each shard's page from its own cursor, merged by sequence, cut at
   * `limit`; each shard's cursor moves to the last of its entries that made the cut.
   */
  async changes(name: string, options: VdbChangesOptions): Promise<Record<string, unknown>> {
    const v = this.#vdb(name);
    const limit = options.limit ?? 1_000;
    const since = options.since === 'now' ? await this.#nowCursor(v) : decodeSince(options.since, v.shards.length);
    type Entry = { id: string; seq: string; rev: string; deleted: boolean; doc?: unknown; shard: number; hlc: Hlc };
    const round = (waitMs: number) =>
      v.shards.map(async (s, i): Promise<Entry[]> => {
        const from = since[i] ?? null;
        const reply = await this.#readShard(s, { op: 'changes', since: from === null ? null : [from.wallMs, from.logical], limit, docs: options.includeDocs, ...(waitMs > 0 ? { w: waitMs } : {}) });
        return (reply.results as Omit<Entry, 'shard' | 'hlc'>[]).map((e) => ({ ...e, shard: i, hlc: parseHlc(e.seq)! }));
      });
    let pages = await Promise.all(round(0));
    const wait = options.longpoll;
    if (wait !== undefined && pages.every((p) => p.length === 0)) {
      // Long-poll: each shard's leader waits a slice for its next commit; the first shard
      // with news ends the wait, and one more plain round collects every shard's page.
      const deadline = Date.now() + wait.timeoutMs;
      while (Date.now() < deadline && wait.signal?.aborted !== true && !this.closed) {
        const calls = round(Math.min(this.#longpollSliceMs, deadline - Date.now()));
        const news = await Promise.race([Promise.all(calls).then((ps) => ps.some((p) => p.length > 0)), ...calls.map((c) => c.then((p) => (p.length > 0 ? true : new Promise<boolean>(() => undefined))))]);
        for (const c of calls) c.catch(() => undefined);
        if (news) {
          pages = await Promise.all(round(0));
          break;
        }
      }
    }
    const merged = pages
      .flat()
      .sort((a, b) => compareHlc(a.hlc, b.hlc) || a.shard - b.shard)
      .slice(0, limit);
    const cursor = [...since];
    for (const e of merged) cursor[e.shard] = e.hlc;
    return {
      changes: merged.map((e) => ({ id: e.id, seq: e.seq, rev: e.rev, deleted: e.deleted, ...(options.includeDocs ? { doc: e.doc ?? null } : {}) })),
      last_seq: encodeSinceToken(cursor),
    };
  }

  async #nowCursor(v: VdbPlacement): Promise<(Hlc | null)[]> {
    const infos = await Promise.all(v.shards.map((s) => this.#readShard(s, { op: 'info' })));
    return infos.map((i) => {
      const [w, l] = i.last as [number, number];
      return w === 0 && l === 0 ? null : { wallMs: w, logical: l };
    });
  }

  /** Import every live document of a local database (optionally filtered) in batches. */
  async import(name: string, spec: ImportSpec) {
    const v = this.#vdb(name);
    return runImport({ docs: this.#o.docs, log: this.#o.log, clock: this.#o.clock, vdb: name, spec }, async (batch, counts) => {
      const writes: Record<string, unknown>[] = [];
      for (const doc of batch) {
        const { _rev, _revisions, _attachments, _conflicts, id: _plainId, ...body } = doc;
        if (spec.onConflict === 'skip') {
          writes.push(body);
          continue;
        }
        let current: Record<string, unknown> | undefined;
        try {
          current = await this.getDoc(name, body._id as string, {});
        } catch (err) {
          if (!(isFirkinError(err) && err.code === 'not_found')) throw err;
        }
        if (current === undefined) writes.push(body);
        else if (spec.onConflict === 'overwrite') writes.push({ ...body, _rev: current._rev });
        else {
          const { _rev: rev, _attachments: _a, ...kept } = current;
          writes.push({ ...kept, ...body, _rev: rev });
        }
      }
      // Without a rev, a document that exists is a conflict: `skip` counts it as skipped.
      const results = await this.#write(v, bulkEdits(writes, true, this.#o.newId));
      for (const r of results) {
        if (r.ok) counts.docs_written++;
        else if (spec.onConflict === 'skip' && r.error === 'conflict') counts.docs_skipped++;
        else counts.errors++;
      }
    });
  }

  async setShardStatus(name: string, shardId: number, status: 'readonly' | 'active'): Promise<{ shard_id: number; status: string }> {
    const v = this.#vdb(name);
    if (v.shards[shardId] === undefined) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
    await this.#o.member.propose({ type: 'vdb.status', name, shard: shardId, readonly: status === 'readonly' });
    this.#o.log.info({ vdb: name, shard: shardId, status }, 'shard status changed');
    return { shard_id: shardId, status };
  }

  async compact(name: string): Promise<void> {
    const v = this.#vdb(name);
    await Promise.all(v.shards.map((s) => this.#propose(s, { kind: 'compact', rid: randomBytes(12).toString('base64url') })));
  }

  async split(name: string): Promise<never> {
    this.#vdb(name);
    throw new FirkinError('conflict', 'split of a clustered virtual database is not available yet: it will run as a job of the metadata group (see docs/vdb.md)');
  }

  async merge(name: string): Promise<never> {
    this.#vdb(name);
    throw new FirkinError('conflict', 'merge of a clustered virtual database is not available yet: it will run as a job of the metadata group (see docs/vdb.md)');
  }

  /** The shard that owns `id` and its group (tests and the admin view). */
  placementOf(name: string, id: string): { shardId: number; group: string; leader: string | undefined } {
    const v = this.#vdb(name);
    const shardId = this.#route(v, id);
    const group = v.shards[shardId]!.group;
    return { shardId, group, leader: this.knownLeader(group) };
  }
}
