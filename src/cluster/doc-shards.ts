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
import { type HashFunction, type HashRange, areAdjacent, hashId, initialRanges, shardFor, splitRanges } from '../core/shard-hash.js';
import type { Blob, ParsedDoc } from '../docdb/doc-input.js';
import type { AttachmentMeta } from '../docdb/records.js';
import { type AllDocsRow, type ChangeEntry, type DocEdit, type DocEngine, type EditResult, bulkEdits, leftOlderBody } from '../docdb/engine.js';
import type { ValueCounts } from '../docdb/query/counts.js';
import { describePlan, executeFind, planFind, sourceQuery } from '../docdb/query/execute.js';
import { type MergedFind, mergeFind } from '../docdb/vdb/merge.js';
import { type ListingShards, type ShardAllDocsRange, byRoute, mergedListing, primed, rowsByRoute, shardAllDocs, shardAllDocsByKeys } from '../docdb/all-docs.js';
import { type BulkGetRequest, type BulkGetResult, bulkGet, diffByRoute, leafRevs } from '../docdb/replication/bulk-get.js';
import type { RevsDiff } from '../docdb/replication/endpoints.js';
import { checkLocalId, collectLocals, localWrite, parseLocalRev } from '../docdb/replication/local-docs.js';
import { statsOf } from '../docdb/query/stats.js';
import { withInlineAttachments } from '../docdb/inline-attachments.js';
import { withExtras } from '../docdb/change-extras.js';
import { parseFind } from '../docdb/query/parse.js';
import { type FindQuery, pageEnd } from '../docdb/query/ast.js';
import { checkVdbName, shardDb, shardOfDbName } from '../docdb/vdb/catalog.js';
import { changeFilterFrom } from '../docdb/query/change-filter.js';
import { type DocShardState, DocShardFsm, type RequestRecord, docShardKeys, docShardLocalKeys, isRequestRecord, ownsId } from '../docdb/vdb/shard-fsm.js';
import { VdbRebalanceCoordinator, rebalanceView } from './vdb-rebalance.js';
import type { ColumnFamily } from '../storage/db.js';
import { type DocShardCommand, type DocShardOutcome, checkOwned, encodeDocShardCommand } from '../docdb/vdb/shard-commands.js';
import { type CreateVdb, type ImportSpec, type LocalWriteResult, type VdbAllDocs, type VdbAllDocsQuery, type VdbAttachment, type VdbChangesOptions, type VdbChangesPage, type VdbGetOptions, type VdbRead, type VdbService, localRouteId, notFoundVdb, vdbExplain } from '../docdb/vdb/service.js';
import { runImport } from '../docdb/vdb/import.js';
import { type Job, type MetaState, type ShardPlacement, type VdbPlacement, isReshardEnded } from './meta-state.js';
import { liftedRollbacks } from './switch-bound.js';
import { routeEdits } from './routed-edits.js';
import { REBALANCE_PLAN_PROTOCOL, protocolShortfall, requireProtocol } from './versions.js';
import { placeShards, placementCandidates } from './placement.js';
import { type HostedReplica, ShardHost, awaitNewShardLeaders, type ReplicaDiagnostics, type ShardHostOptions, type WantedReplica } from './shard-host.js';

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
  /**
   * The chaos suite's broken build FIRKIN_UNSAFE_FIXTURE=lost-checkpoints: a split or merge
   * leaves the moving range's `_local` documents behind. Never set outside that test.
   */
  unsafeNoLocalCarry?: boolean;
  /**
   * The chaos suite's broken build FIRKIN_UNSAFE_FIXTURE=feed-skips: a `_changes` page leaves out
   * its last change, its `last_seq` still past it (a cursor skipping a change). Never set
   * outside that test.
   */
  unsafeFeedSkips?: boolean;
  /** Documents a split or merge copies per log entry (default 100). */
  rebalanceBatchSize?: number;
  /** A split or merge copies at most this many documents a second (default 20,000). */
  rebalanceDocsPerSecond?: number;
  /** A split's or merge's switch is rolled back when not done this long after its fence (default 10 s). */
  switchTimeoutMs?: number;
  /** Tests only: see `RebalanceOptions.switchStalls`. */
  switchStalls?: number;
}

interface DocReplica extends HostedReplica {
  readonly fsm: DocShardFsm;
}

type ReadRequest =
  | ({ op: 'get'; id: string } & VdbGetOptions)
  | { op: 'att'; id: string; name: string; rev?: string }
  | { op: 'find'; q: unknown; limit: number | null; m?: [number, number]; h?: HashFunction }
  /** The plan `find` would run (cluster protocol 6). */
  | { op: 'explain'; q: unknown; limit: number | null }
  /** A page of `_all_docs` by id range (after `o.after`, at most `o.limit` rows), only ids of `m`. */
  | { op: 'all'; o: ShardAllDocsRange; m?: [number, number]; h?: HashFunction }
  /** `_all_docs` rows of these ids, all routed to this shard; `d`: include_docs, `c`: conflicts. */
  | { op: 'keys'; ids: string[]; d: boolean; c: boolean }
  /**
   * `m`/`h`: only ids hashing into `m` (the router's range for the shard; the coordinator's
   * moving range); `x`: the rebalance coordinator's read, whatever the shard owns.
   */
  | { op: 'changes'; since: [number, number] | null; limit: number; docs: boolean; w?: number; m?: [number, number]; h?: HashFunction; x?: boolean; a?: boolean; ids?: string[]; sel?: unknown; c?: boolean }
  /** CouchDB's replication protocol (cluster protocol 3): `_revs_diff` and `_bulk_get` of ids routed here, a `_local` document. */
  | { op: 'rdiff'; r: Record<string, string[]> }
  | { op: 'bget'; e: BulkGetRequest[]; revs: boolean; atts: boolean }
  | { op: 'lget'; id: string }
  /** The `_local` documents routed into `m` as stored, after id `after` (cluster protocol 4: a split's or merge's carry). */
  | { op: 'locals'; m: [number, number]; h: HashFunction; after?: string; o?: boolean; r?: boolean }
  /** Every leaf revision of each id with its history and attachment bytes (a rebalance's copy). */
  | { op: 'revs'; ids: string[] }
  | { op: 'info' }
  | { op: 'digest' };

/** A snapshot transfer whose reader stopped asking for this long is closed. */
const EXPORT_IDLE_MS = 60_000;
/** Each call of a snapshot transfer waits at most this long for its chunk. */
const EXPORT_CALL_MS = 30_000;
/** A page of `_local` documents a split or merge carries holds about this many bytes (one document at least). */
const LOCALS_PAGE_BYTES = 1 << 20;
/** A transfer chunk carries about this many bytes of keys and values. */
const EXPORT_CHUNK_BYTES = 1 << 20;

interface ExportSession {
  readonly group: string;
  readonly state: DocShardState;
  readonly chunks: AsyncIterator<{ cf: ColumnFamily; entries: readonly [Buffer, Buffer][] }>;
  lastUsedMs: number;
}


/** The hash ranges of a clustered VDB, in the shape the routing functions take (retired shards own none). */
function rangesOf(v: VdbPlacement): HashRange[] {
  return live(v).map(({ id, shard }) => ({ shardId: id, start: shard.range[0], end: shard.range[1] }));
}

/** The shards of a VDB that are routed to, with their ids (positions: a merged shard keeps its place, retired). */
function live(v: VdbPlacement): { id: number; shard: ShardPlacement }[] {
  return v.shards.flatMap((shard, id) => (shard.retired === true ? [] : [{ id, shard }]));
}

/** Merged shards, with where they went. */
function retired(v: VdbPlacement): { id: number; shard: ShardPlacement }[] {
  return v.shards.flatMap((shard, id) => (shard.retired === true ? [{ id, shard }] : []));
}

/** A cursor's position for a retired shard once the cursor is past its merge. */
const MERGED: Hlc = { wallMs: 0, logical: 0 };

/**
 * A cursor from before a merge (its position for the retired shard is not MERGED) reads the
 * target from where the target was when the copy began, so the copied documents (later
 * sequences there) are not skipped: duplicates, never losses. Along a chain of merges the
 * earliest such position applies to the shard at its end (sequences are hybrid clock values,
 * so an earlier position only repeats more).
 */
function afterMerges(v: VdbPlacement, since: (Hlc | null)[]): (Hlc | null)[] {
  const out = [...since];
  const pos = (x: readonly [number, number]): Hlc | null => (x[0] === 0 && x[1] === 0 ? null : { wallMs: x[0], logical: x[1] });
  const earlier = (a: Hlc | null, b: Hlc | null) => (a === null || b === null ? null : compareHlc(a, b) < 0 ? a : b);
  for (const { id, shard } of retired(v)) {
    const at = since[id];
    if (at !== null && at !== undefined && at.wallMs === MERGED.wallMs && at.logical === MERGED.logical) continue;
    let into = shard.mergedInto;
    let from: Hlc | null | undefined;
    for (let hops = 0; into !== undefined && hops < v.shards.length; hops++) {
      from = from === undefined ? pos(into.from) : earlier(from, pos(into.from));
      const next = v.shards[into.shard];
      if (next?.retired !== true) {
        out[into.shard] = earlier(out[into.shard] ?? null, from);
        break;
      }
      into = next.mergedInto;
    }
  }
  for (const { id } of retired(v)) out[id] = MERGED;
  return out;
}

/** A split or merge may take this long before its HTTP request answers (the job goes on regardless). */
const REBALANCE_WAIT_MS = 30 * 60_000;
/** `_local` write outcomes a split or merge carries to the target (the most recent). */
const LOCAL_REQUESTS_CARRIED = 2_000;
/** A router waits at most this long for a newer map after a fenced shard refused it (each time). */
const STALE_RETRIES_MAX = 20;

/** A `_changes` cursor: one sequence per shard (null: from the start). */
/** The cursor at each live shard's last sequence (`[0, 0]`: none yet); a retired shard's position is MERGED. */
function cursorAt(v: VdbPlacement, last: ReadonlyMap<number, readonly [number, number]>): (Hlc | null)[] {
  const cursor = new Array<Hlc | null>(v.shards.length).fill(null);
  for (const { id } of retired(v)) cursor[id] = MERGED;
  for (const [id, [w, l]] of last) cursor[id] = w === 0 && l === 0 ? null : { wallMs: w, logical: l };
  return cursor;
}

export function encodeSinceToken(seqs: readonly (Hlc | null)[]): string {
  return `c1-${Buffer.from(encodeCbor(seqs.map((h) => (h === null ? null : [h.wallMs, h.logical])))).toString('base64url')}`;
}

/**
 * A replica's replication as `_replication` names it: `down` while the cluster counts its node
 * down (its lag is then the leader's last word on it), else by its lag behind the leader.
 */
export function taskStatus(leader: string | null, down: boolean, lag: number | null | undefined): 'no_leader' | 'down' | 'in_sync' | 'catching_up' | 'unknown' {
  if (leader === null) return 'no_leader';
  if (down) return 'down';
  if (lag === null || lag === undefined) return 'unknown';
  return lag === 0 ? 'in_sync' : 'catching_up';
}

/** A `c1-` cursor's positions as decoded, unchecked (undefined: it does not decode). */
function cursorSeqs(raw: string): unknown {
  try {
    return decodeCbor(Buffer.from(raw.slice(3), 'base64url'));
  } catch {
    return undefined;
  }
}

/** How many shard positions a `since` cursor holds (0: not a cursor, or not one that decodes). */
export function cursorPositions(raw: string | undefined): number {
  if (raw?.startsWith('c1-') !== true) return 0;
  const seqs = cursorSeqs(raw);
  return Array.isArray(seqs) ? seqs.length : 0;
}

/** `since` of a clustered VDB feed: first/0 (nothing), a cursor, or one plain sequence for every shard. */
export function decodeSince(raw: string | undefined, shardCount: number): (Hlc | null)[] {
  if (raw === undefined || raw === '' || raw === '0' || raw === 'first') return new Array<Hlc | null>(shardCount).fill(null);
  if (raw.startsWith('c1-')) {
    const seqs = cursorSeqs(raw);
    // A cursor from before a split is shorter: the new shard's feed starts from its beginning.
    const ok = Array.isArray(seqs) && seqs.length <= shardCount && seqs.every((s) => s === null || (Array.isArray(s) && s.length === 2 && s.every((x) => Number.isSafeInteger(x) && x >= 0)));
    if (!ok) throw new FirkinError('bad_request', `since ${JSON.stringify(raw)} is not a cursor of this virtual database (it has ${shardCount} shards)`);
    const out = (seqs as ([number, number] | null)[]).map((s): Hlc | null => (s === null ? null : { wallMs: s[0], logical: s[1] }));
    while (out.length < shardCount) out.push(null);
    return out;
  }
  const h = parseHlc(raw);
  if (h === undefined) throw new FirkinError('bad_request', `since must be first, 0, now, a last_seq of this feed or a sequence like {timestamp,W,L}, got ${JSON.stringify(raw)}`);
  return new Array<Hlc | null>(shardCount).fill(h);
}

/** How long a new VDB's creator waits for each member's plain databases named like its shards. */
const NAME_CHECK_TIMEOUT_MS = 2_000;

/** Why a plain database may not be named `db` while the cluster holds `state` (undefined: it may). */
export function reservedShardName(db: string, state: MetaState): string | undefined {
  const shard = shardOfDbName(db);
  if (shard === undefined || state.vdbs[shard.vdb] === undefined) return undefined;
  return `database name ${JSON.stringify(db)} is reserved: the cluster's virtual database ${JSON.stringify(shard.vdb)} keeps its shards' replicas under the names ${shard.vdb}_s<n> on its nodes; choose another name`;
}

/** This node's plain databases (no shard's replicas) named like a shard of a VDB named `vdb`. */
function plainShardDbs(docs: DocEngine, vdb: string): string[] {
  return docs.listDbs().filter((db) => shardOfDbName(db)?.vdb === vdb && docs.has(db) && docs.ownerOf(db) === undefined);
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

  readonly #rebalance: VdbRebalanceCoordinator;

  private constructor(o: DocShardsOptions) {
    super(o);
    this.#o = o;
    // A plain database named like a VDB's shard keeps that shard's replica from opening on this
    // node (DocShardFsm.open): refused while the VDB exists, and looked for on every member
    // when one is created (`vdbnames.plain`). A name like a shard of a VDB this node does not
    // know is asked after catching up: the VDB may have been made through another node.
    o.docs.reserveNames(
      (db) => reservedShardName(db, o.member.state),
      (db) => {
        const shard = shardOfDbName(db);
        return shard !== undefined && o.member.state.vdbs[shard.vdb] === undefined ? o.member.catchUp() : undefined;
      },
    );
    o.member.handleCalls('vdbnames', (_from, method, body) => this.#answerNames(method, body));
    this.#rebalance = new VdbRebalanceCoordinator({
      member: o.member,
      hlc: o.hlc,
      newId: o.newId,
      log: o.log,
      batchSize: o.rebalanceBatchSize ?? 100,
      docsPerSecond: o.rebalanceDocsPerSecond ?? 20_000,
      switchTimeoutMs: o.switchTimeoutMs ?? 10_000,
      ...(o.switchStalls === undefined ? {} : { switchStalls: o.switchStalls }),
      ...(o.unsafeNoLocalCarry === true ? { unsafeNoLocalCarry: true } : {}),
      shards: { read: (shard, q) => this.leaderCall(shard, 'dshard.read', q), propose: (shard, c) => this.#propose(shard, c) },
    });
  }

  static async start(o: DocShardsOptions): Promise<DocShards> {
    const host = new DocShards(o);
    await host.begin();
    return host;
  }

  protected placements(state: MetaState): WantedReplica<VdbPlacement>[] {
    // A merged (retired) shard stays hosted, fenced, until its job ends: a write routed on the
    // map before the switch is refused there and routed again, rather than lost in the dark.
    return Object.values(state.vdbs).flatMap((v) => [...v.shards.filter((s) => s.replicas.length > 0), ...(v.pending === undefined ? [] : [v.pending])].map((shard) => ({ owner: v, shard })));
  }

  protected concerns(type: string): boolean {
    return type.startsWith('vdb.') || type.startsWith('shard.');
  }

  protected async open(vdb: VdbPlacement, placement: ShardPlacement): Promise<DocReplica> {
    // A split's pending shard takes the next position at its switch.
    const at = vdb.shards.findIndex((s) => s.group === placement.group);
    const index = at === -1 ? vdb.shards.length : at;
    const fsm = await DocShardFsm.open(this.#o.docs, this.#o.store, placement.group, shardDb(vdb.name, index), vdb.config.createdMs, {
      source: (at) => this.#pull(placement, at),
      rand: this.#o.rand,
      onRetry: (err, attempt, delayMs) => this.snapshotLoadFailed(placement.group, err, attempt, delayMs),
    });
    const group = await this.raftGroup(placement, fsm, () => fsm.appliedIndex);
    return { placement, fsm, group };
  }

  protected async dropData(group: string, replica: DocReplica): Promise<void> {
    if (this.#o.docs.has(replica.fsm.db)) await this.#o.docs.deleteDb(replica.fsm.db, group);
    await this.#o.store.clearRange('system', docShardKeys(group));
    await this.#o.store.clearRange('system', docShardLocalKeys(group));
  }

  protected stopReplica(replica: DocReplica): void {
    replica.fsm.stop();
  }

  protected override housekeeping(): void {
    this.#rebalance.tick();
    const now = Date.now();
    for (const [id, s] of this.#exports) {
      if (now - s.lastUsedMs < EXPORT_IDLE_MS) continue;
      this.#exports.delete(id);
      void s.state.close();
    }
  }

  override async close(): Promise<void> {
    this.#rebalance.close();
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
        // New documents leave nothing to compact (the standalone engine's rule too).
        if (outcome?.kind === 'edits') this.#countWrites(r, outcome.results.filter(leftOlderBody).length);
        return encodeCbor({ o: outcome });
      }
      case 'dshard.read': {
        const stale = req.s === true;
        const r = stale ? this.staleReplica(req.g) : this.leading(req.g);
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
      return encodeCbor({ s: id, record: state.record, applied: state.applied, requests: state.requests, ...(state.owned === undefined ? {} : { owned: state.owned }) });
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
  async #pull(placement: ShardPlacement, index: number): Promise<DocShardState> {
    const group = placement.group;
    const source = this.snapshotSource(placement);
    this.#o.log.info({ group, source, index }, `loading VDB shard replica ${group} from ${source} (snapshot at ${index})`);
    const call = async (s?: string) => decodeCbor(await this.#o.member.callPeer(source, 'dshard.export', encodeCbor({ g: group, ...(s === undefined ? {} : { s }) }), EXPORT_CALL_MS)) as Record<string, unknown>;
    const head = await call();
    const requests = head.requests as unknown;
    if (typeof head.s !== 'string' || !(head.record instanceof Uint8Array) || typeof head.applied !== 'number' || !Array.isArray(requests) || !requests.every(isRequestRecord)) {
      throw new FirkinError('error', 'snapshot transfer: bad header');
    }
    const session = head.s;
    const log = this.#o.log;
    const loaded = () => this.snapshotLoaded(group);
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
      loaded();
    }
    const owned = head.owned === undefined ? undefined : checkOwned(head.owned);
    return { record: Buffer.from(head.record), applied: head.applied, requests: requests as RequestRecord[], ...(owned === undefined ? {} : { owned }), chunks: chunks(), close: async () => undefined };
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
    const ctx = { docs, store, counts };
    // A fenced range is being switched away from: the router waits for the new map.
    const fenced = () => new FirkinError('stale_epoch', `shard ${fsm.group} no longer owns what was asked (a split or merge switched it): route again on the new map`);
    switch (q.op) {
      case 'get':
        if (!fsm.owns(q.id)) throw fenced();
        // An older router sends only rev, revs and conflicts; the rest are then undefined.
        return { d: await docs.getDoc(fsm.db, q.id, { rev: q.rev, revs: q.revs, conflicts: q.conflicts, deletedConflicts: q.deletedConflicts, revsInfo: q.revsInfo, latest: q.latest, deleted: q.deleted }) };
      case 'revs': {
        const out: Record<string, unknown>[] = [];
        for (const id of q.ids) for (const leaf of await docs.openRevs(fsm.db, id)) out.push(await withInlineAttachments(docs, fsm.db, id, leaf));
        return { docs: out };
      }
      case 'att': {
        if (!fsm.owns(q.id)) throw fenced();
        // The bytes travel whole in the reply (bounded by SERVICE_ATTACHMENT_MAX_BYTES, as in a log entry).
        const att = await docs.getAttachment(fsm.db, q.id, q.name, q.rev);
        const parts: Buffer[] = [];
        for await (const chunk of att.chunks()) parts.push(chunk);
        return { meta: att.meta, rev: att.rev, data: Buffer.concat(parts) };
      }
      case 'find': {
        const parsed = parseFind(q.q);
        const m = q.m;
        if (m !== undefined && q.h !== undefined && !fsm.ownsRange(q.h, m)) throw fenced();
        // Only the ids of the router's range: a rebalance's copies are never counted twice.
        const owns = m === undefined || q.h === undefined ? undefined : (id: string) => ownsId({ hash: q.h!, ranges: [m] }, id);
        const result = await executeFind(ctx, fsm.db, sourceQuery(parsed, q.limit ?? undefined), owns);
        return { docs: result.docs, total: result.meta.total, stats: result.stats };
      }
      case 'explain':
        return describePlan(await planFind(ctx, fsm.db, sourceQuery(parseFind(q.q), q.limit ?? undefined)));
      case 'all': {
        const m = q.m;
        if (m !== undefined && q.h !== undefined && !fsm.ownsRange(q.h, m)) throw fenced();
        const owns = m === undefined || q.h === undefined ? undefined : (id: string) => ownsId({ hash: q.h!, ranges: [m] }, id);
        return { rows: await shardAllDocs(docs, fsm.db, q.o, owns) };
      }
      case 'keys':
        if (!q.ids.every((id) => fsm.owns(id))) throw fenced();
        return { rows: await shardAllDocsByKeys(docs, fsm.db, q.ids, { includeDocs: q.d, conflicts: q.c }) };
      case 'changes':
        return this.#changesPage(fsm, q, fenced);
      case 'rdiff':
        if (!Object.keys(q.r).every((id) => fsm.owns(id))) throw fenced();
        return { d: await docs.revsDiff(fsm.db, q.r) };
      case 'bget':
        if (!q.e.every((e) => fsm.owns(e.id))) throw fenced();
        return { r: await bulkGet(docs, fsm.db, q.e, { revs: q.revs, attachments: q.atts }) };
      case 'lget':
        if (!fsm.owns(localRouteId(q.id))) throw fenced();
        return { d: (await fsm.local(q.id)) ?? null };
      case 'locals': {
        // `o`: a listing's read, of the router's range, which the shard must own; without it,
        // the coordinator's read of the moving range after its fence, whatever the shard owns.
        if (q.o === true && !fsm.ownsRange(q.h, q.m)) throw fenced();
        const page = await fsm.localsPage(q.h, q.m, q.after, LOCALS_PAGE_BYTES);
        // `r` (protocol 7): the recent `_local` write outcomes by request id, for the carry.
        return { l: page.entries, more: page.more, ...(q.r === true ? { reqs: fsm.localRequests(LOCAL_REQUESTS_CARRIED) } : {}) };
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
   * A page of a shard's feed. With a range (`m`), only its ids, and pages are read until
   * `limit` of them are found or the feed ends, so what is returned has no gap: `scanned` is
   * where the next page starts, `more` whether the feed goes on.
   */
  async #changesPage(fsm: DocShardFsm, q: Extract<ReadRequest, { op: 'changes' }>, fenced: () => FirkinError): Promise<Record<string, unknown>> {
    const docs = this.#o.docs;
    const m = q.m;
    if (q.x !== true && m !== undefined && q.h !== undefined && !fsm.ownsRange(q.h, m)) throw fenced();
    const keep = m === undefined || q.h === undefined ? () => true : (id: string) => ownsId({ hash: q.h!, ranges: [m] }, id);
    let since: Hlc | undefined = q.since === null ? undefined : { wallMs: q.since[0], logical: q.since[1] };
    // CouchDB's filters (cluster protocol 3): `ids` (`_doc_ids`), `sel` (a `_selector`).
    const docIds = q.ids === undefined ? undefined : new Set(q.ids);
    const filter = q.sel === undefined ? undefined : changeFilterFrom(undefined, undefined, q.sel);
    const read = () => docs.changes(fsm.db, { since, limit: q.limit, descending: false, docIds, includeDocs: q.docs, filter });
    // Long-poll slice: with nothing new, wait (bounded by the caller) for the next commit.
    const waitMs = typeof q.w === 'number' ? Math.min(Math.max(0, q.w), this.#longpollSliceMs) : 0;
    const woken = waitMs > 0 ? docs.waitForChange(fsm.db, waitMs) : undefined;
    let page = await read();
    if (page.results.length === 0 && woken !== undefined) {
      await woken;
      page = await read();
    }
    const results: ChangeEntry[] = [];
    let scanned: Hlc | undefined = since;
    let more = false;
    for (;;) {
      for (const e of page.results) {
        if (results.length >= q.limit) {
          more = true;
          break;
        }
        scanned = parseHlc(e.seq);
        if (keep(e.id)) results.push(e);
      }
      if (more || page.results.length < q.limit) break;
      since = page.lastSeq;
      page = await read();
      if (page.results.length === 0) break;
    }
    const leaves = q.a === true ? await leafRevs(docs, fsm.db, results) : undefined;
    // `c`: each document's `_conflicts` (an older replica ignores it and answers without them).
    if (q.c === true && q.docs) await withExtras(docs, fsm.db, { conflicts: true }, { results });
    return {
      results: results.map((e, i) => ({ id: e.id, seq: e.seq, rev: e.rev, deleted: e.deleted, ...(q.docs ? { doc: e.doc ?? null } : {}), ...(leaves === undefined ? {} : { revs: leaves[i] }) })),
      last: page.lastSeq === undefined ? null : [page.lastSeq.wallMs, page.lastSeq.logical],
      scanned: scanned === undefined ? null : [scanned.wallMs, scanned.logical],
      more,
    };
  }

  /**
   * A digest of a replica's database (every key and value of its document column families)
   * and the applied index it is at: one consistent view, taken between two commits.
   */
  async #digest(fsm: DocShardFsm): Promise<Record<string, unknown>> {
    const state = await fsm.exportState();
    const hash = createHash('sha256');
    const localKeys = docShardLocalKeys(fsm.group);
    let entries = 0;
    let locals = 0;
    for await (const chunk of state.chunks) {
      hash.update(chunk.cf);
      for (const [k, v] of chunk.entries) {
        hash.update(k).update(v);
        entries++;
        if (chunk.cf === 'system' && k.compare(localKeys.gte) >= 0 && k.compare(localKeys.lt) < 0) locals++;
      }
    }
    return { sha256: hash.digest('hex'), entries, applied: state.applied, docs: this.#o.docs.dbInfo(fsm.db).doc_count, locals };
  }

  /** Digests of the VDB shard replicas hosted here (tests and the admin view compare them), with their documents and `_local` documents. */
  async digests(): Promise<{ group: string; db: string; applied: number; sha256: string; docs: number; locals: number }[]> {
    const out: { group: string; db: string; applied: number; sha256: string; docs: number; locals: number }[] = [];
    for (const [group, r] of this.replicas) {
      if (!this.#o.docs.has(r.fsm.db)) continue; // loading a copy just now
      const d = await this.#digest(r.fsm);
      out.push({ group, db: r.fsm.db, applied: d.applied as number, sha256: d.sha256 as string, docs: d.docs as number, locals: d.locals as number });
    }
    return out;
  }

  replicaStatus(): ({ group: string; db: string; role: string; leader: string | null; term: number; applied: number; catching_up: boolean; voters: readonly string[]; learners: readonly string[]; snapshots_loaded: number } & ReplicaDiagnostics)[] {
    return [...this.replicas].map(([group, r]) => {
      const s = r.group.status();
      const conf = r.group.core.confState();
      return { group, db: r.fsm.db, role: s.role, leader: s.leader, term: s.term, applied: r.fsm.appliedIndex, catching_up: s.catching_up, voters: conf.voters, learners: conf.learners, snapshots_loaded: r.fsm.snapshotsLoaded, ...this.replicaDiagnostics(r) };
    });
  }

  // ---- the VDB service (any node) ------------------------------------------------------------

  #vdb(name: string): VdbPlacement {
    const v = this.#o.member.state.vdbs[name];
    if (v === undefined) throw notFoundVdb(name);
    return v;
  }

  /**
   * The VDB as the metadata has it after everything committed before the call: a split or
   * merge is planned on its ranges (the log refuses a plan made on ranges that changed since
   * anyway, `planned`, but a node that lags would otherwise plan on an old map every time).
   */
  async #vdbPlanned(name: string): Promise<VdbPlacement> {
    await this.#o.member.catchUp();
    return this.#vdb(name);
  }

  /** The ranges a split or merge was planned on, for the log to check (while every member reads them). */
  #planned(source: ShardPlacement, target?: ShardPlacement): { planned?: { source: [number, number]; target?: [number, number] } } {
    if (protocolShortfall(this.#o.member.liveNodes(), REBALANCE_PLAN_PROTOCOL, 'a checked split or merge plan') !== undefined) return {};
    return { planned: { source: [source.range[0], source.range[1]], ...(target === undefined ? {} : { target: [target.range[0], target.range[1]] }) } };
  }

  /**
   * The VDB's placement. Absent from this node's copy of the metadata, it is 404 only once that
   * copy is brought up to date: a node that just joined, or lags, may not have applied the
   * create yet, and a 404 there would tell a client its documents do not exist.
   */
  async #vdbNow(name: string): Promise<VdbPlacement> {
    if (this.#o.member.state.vdbs[name] === undefined) await this.#o.member.catchUp();
    return this.#vdb(name);
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

  /**
   * Propose edits grouped by shard, in parallel; results in the order of `edits`. A shard a
   * split or merge fenced refuses its part with no effect: that part waits for the new map and
   * is routed again (clients see a short delay, never an error), under the request id it was
   * first proposed with (`routed-edits.ts`), so a write that did apply is answered, not applied
   * twice.
   */
  async #write(name: string, edits: readonly (DocEdit | EditResult)[]): Promise<EditResult[]> {
    return routeEdits<VdbPlacement, DocEdit, EditResult>(
      edits.map((e) => ('kind' in e ? e : { result: e })),
      {
        map: () => this.#vdbNow(name),
        route: (v, e) => {
          const shard = this.#route(v, e.docId);
          const refused = this.#readonlyError(v, shard);
          return refused === undefined ? { shard } : { refused: { ok: false, id: e.docId, error: refused.code, message: refused.message } };
        },
        propose: async (v, shard, rid, part) => {
          const outcome = await this.#propose(v.shards[shard]!, { kind: 'edits', rid, at: this.#o.hlc.now(), edits: part });
          if (outcome.kind === 'fenced' || outcome.kind === 'edits') return outcome;
          throw new FirkinError('error', `shard ${shard} answered a write with a ${outcome.kind} outcome`);
        },
        moved: (v) => this.#mapMoved(name, v.epoch),
        awaitNewer: (v) => this.#awaitNewer(name, v.epoch),
        newRid: () => randomBytes(12).toString('base64url'),
        resultOf: (e, r) => r.id === e.docId,
        retriesMax: STALE_RETRIES_MAX,
        tooManyRetries: () => new FirkinError('unavailable', `virtual database ${JSON.stringify(name)} is switching shards and the new map did not arrive; retry`),
      },
    );
  }

  /** Wait (bounded) until this node applied a newer map of the VDB than `epoch`. */
  async #awaitNewer(name: string, epoch: number): Promise<void> {
    const until = Date.now() + this.#o.member.timings.proposalTimeoutMs;
    // A switch rolled back (its fences lifted) since the wait began: the old map serves again.
    const lifted = () => liftedRollbacks(this.#o.member.state.jobs, 'vdb-rebalance', name);
    const liftedBefore = lifted();
    while (Date.now() < until && !this.closed) {
      const v = this.#o.member.state.vdbs[name];
      if (v === undefined || v.epoch > epoch || lifted() > liftedBefore) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** This node applied a newer map of the VDB than `epoch` (a split or merge switched meanwhile). */
  #mapMoved(name: string, epoch: number): boolean {
    const now = this.#o.member.state.vdbs[name];
    return now !== undefined && now.epoch > epoch;
  }

  /** A read that a split or merge answered `stale_epoch`: run again on the newer map. */
  async #onMap<T>(name: string, run: (v: VdbPlacement) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const v = await this.#vdbNow(name);
      try {
        return await run(v);
      } catch (err) {
        const stale = isFirkinError(err) && (err.code === 'stale_epoch' || this.#mapMoved(name, v.epoch));
        if (!stale || attempt >= STALE_RETRIES_MAX) throw err;
        await this.#awaitNewer(name, v.epoch);
      }
    }
  }

  async #writeOne(name: string, edit: DocEdit): Promise<EditResult & { ok: true }> {
    await this.#vdbNow(name);
    const [result] = await this.#write(name, [edit]);
    if (result!.ok) return result!;
    throw new FirkinError(result!.error as FirkinError['code'], result!.message);
  }

  async create(spec: CreateVdb): Promise<Record<string, unknown>> {
    checkVdbName(spec.name);
    const state = this.#o.member.state;
    if (state.vdbs[spec.name] !== undefined) throw new FirkinError('conflict', `virtual database ${JSON.stringify(spec.name)} already exists`);
    await this.#refuseShardNameClashes(spec.name);
    const nodes = placementCandidates(state, spec.replicaFactor, spec.zones, 'replica_factor');
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
    const v = await this.#vdbNow(spec.name);
    const late = await awaitNewShardLeaders(() => Promise.all(v.shards.map((s) => this.#readShard(s, { op: 'info' }))));
    if (late !== undefined) throw late;
    return this.info(spec.name);
  }

  /**
   * Refuses a new VDB whose shards' names (`<name>_s<n>`) plain databases hold on a member: a
   * replica placed there could not open, and a shard placed on enough such nodes would have no
   * leader. A member that does not answer in time (cut off, an older build) is not checked; a
   * replica that meets such a database later says so in /health and retries.
   */
  async #refuseShardNameClashes(name: string): Promise<void> {
    const held = new Map<string, string[]>();
    const note = (node: string, dbs: readonly string[]) => {
      for (const db of dbs) held.set(db, [...(held.get(db) ?? []), node]);
    };
    note(this.me, plainShardDbs(this.#o.docs, name));
    const peers = this.#o.member.liveNodes().filter((n) => n.name !== this.me && n.status !== 'down');
    await Promise.all(
      peers.map(async (n) => {
        try {
          const reply = decodeCbor(await this.#o.member.callPeer(n.name, 'vdbnames.plain', encodeCbor({ vdb: name }), NAME_CHECK_TIMEOUT_MS)) as { dbs?: unknown } | null;
          if (Array.isArray(reply?.dbs)) note(n.name, reply.dbs.filter((db): db is string => typeof db === 'string'));
        } catch (err) {
          this.#o.log.warn({ vdb: name, node: n.name, err: (err as Error).message }, `virtual database ${name}: ${n.name} did not say whether it holds plain databases named like its shards`);
        }
      }),
    );
    if (held.size === 0) return;
    const where = [...held.keys()].sort().map((db) => `${db} on ${held.get(db)!.sort().join(', ')}`).join('; ');
    throw new FirkinError('conflict', `virtual database ${JSON.stringify(name)} cannot be created: plain databases hold its shards' names (${where}), and a shard's replica cannot open beside one; delete them (DELETE /db/<name> on those nodes) or choose another name`);
  }

  async #answerNames(method: string, body: Buffer): Promise<Uint8Array> {
    if (method !== 'vdbnames.plain') throw new FirkinError('not_found', `unknown cluster call ${method}`);
    const { vdb } = (decodeCbor(body) ?? {}) as { vdb?: unknown };
    if (typeof vdb !== 'string') throw new FirkinError('bad_request', 'vdbnames.plain without a VDB name');
    return encodeCbor({ dbs: plainShardDbs(this.#o.docs, vdb) });
  }

  async delete(name: string): Promise<void> {
    await this.#vdbNow(name);
    await this.#o.member.propose({ type: 'vdb.delete', name });
  }

  list(): string[] {
    return Object.keys(this.#o.member.state.vdbs).sort();
  }

  has(name: string): boolean {
    return this.#o.member.state.vdbs[name] !== undefined;
  }

  async info(name: string): Promise<Record<string, unknown>> {
    const v = await this.#vdbNow(name);
    const shards = await Promise.all(live(v).map(async ({ id, shard }) => ({ id, db: shardDb(name, id), ...((await this.#readShard(shard, { op: 'info' })) as { doc_count: number; disk_size: number; last: [number, number] }) })));
    const job = this.#jobOf(name);
    const total = shards.reduce((n, s) => n + s.doc_count, 0);
    // During a split or merge a copy sits in two shards until the switch: the counts show both.
    return {
      name,
      shard_count: shards.length,
      hash_function: v.config.hashFunction,
      placement: { replica_factor: v.config.replicaFactor, zones: v.config.zones },
      created_at: v.config.createdMs,
      total_docs: total,
      total_disk_size: shards.reduce((n, s) => n + s.disk_size, 0),
      shards: shards.map((s) => ({ db: s.db, doc_count: s.doc_count, disk_size: s.disk_size })),
      ...(job === undefined ? {} : { rebalance: rebalanceView(job, v.pending) }),
      // CouchDB's database info fields, for its clients (PouchDB's replication progress reads `update_seq`).
      db_name: name,
      doc_count: total,
      update_seq: encodeSinceToken(cursorAt(v, new Map(shards.map((s) => [s.id, s.last])))),
    };
  }

  /** The split or merge running on a VDB, if any. */
  #jobOf(name: string): Job | undefined {
    return Object.values(this.#o.member.state.jobs).find((j) => j.kind === 'vdb-rebalance' && j.target === name && !isReshardEnded(j.step));
  }

  /** Assignments: `primary` is the shard's Raft leader now (null while it has none). */
  async shards(name: string): Promise<Record<string, unknown>> {
    const v = await this.#vdbNow(name);
    const shards = live(v);
    const job = this.#jobOf(name)?.vdb;
    const statuses = await this.shardStatuses(shards.map((s) => s.shard));
    const moving = (id: number) => (job === undefined ? undefined : job.source === id ? (job.op === 'split' ? 'splitting' : 'merging') : job.target === id && job.op === 'merge' ? 'merging' : undefined);
    return {
      shards: shards.map(({ id, shard: s }, i) => {
        const st = statuses[i]!;
        const leader = typeof st.leader === 'string' ? st.leader : null;
        return { shard_id: id, primary: leader, replicas: s.replicas, down: st.down, status: s.readonly === true ? 'readonly' : leader === null ? 'unavailable' : (moving(id) ?? 'active'), group: s.group, ...(st.lag === undefined ? {} : { lag: st.lag, voters: st.voters, learners: st.learners }) };
      }),
      ranges: shards.map(({ id, shard: s }) => ({ shard_id: id, start_hash: s.range[0], end_hash: s.range[1] })),
    };
  }

  /** Replication is Raft's: each replica's lag behind its leader stands in for a task. */
  async replication(name: string): Promise<Record<string, unknown>> {
    const v = await this.#vdbNow(name);
    const shards = live(v);
    const statuses = await this.shardStatuses(shards.map((s) => s.shard));
    return {
      vdb_name: name,
      replica_factor: v.config.replicaFactor,
      shard_count: shards.length,
      shards: shards.map(({ id, shard: s }, i) => {
        const st = statuses[i]!;
        const leader = typeof st.leader === 'string' ? st.leader : null;
        const lag = (st.lag ?? {}) as Record<string, number | null>;
        const down = st.down as readonly string[];
        return {
          shard_id: id,
          replication_tasks: s.replicas
            .filter((r) => r !== leader)
            .map((r) => ({ source: leader ?? 'none', target: r, status: taskStatus(leader, down.includes(r), lag[r]), lag: lag[r] ?? null })),
        };
      }),
    };
  }

  async bulkDocs(name: string, docs: readonly unknown[], newEdits = true): Promise<EditResult[]> {
    await this.#vdbNow(name);
    return this.#write(name, bulkEdits(docs, newEdits, this.#o.newId));
  }

  async getDoc(name: string, id: string, options: VdbGetOptions, read: VdbRead = {}): Promise<Record<string, unknown>> {
    return this.#onMap(name, async (v) => {
      const reply = await this.#readShard(v.shards[this.#route(v, id)]!, { op: 'get', id, ...options }, read.stale === true);
      return reply.d as Record<string, unknown>;
    });
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
    const reply = await this.#onMap(name, (v) => this.#readShard(v.shards[this.#route(v, id)]!, { op: 'att', id, name: attName, ...(rev === undefined ? {} : { rev }) }));
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

  /**
   * Every shard's `_find` in parallel, merged in the query's order; `total` counts every match.
   * Each shard keeps only the ids of its range in this node's map (a split's or merge's copies
   * are never counted twice); a shard the map is stale for answers `stale_epoch`, and the
   * query runs again on the new map.
   */
  async find(name: string, raw: unknown, options: { stale?: boolean } = {}): Promise<MergedFind> {
    const q = parseFind(raw);
    const perShard = pageEnd(q) ?? null;
    return this.#onMap(name, async (v) => {
      const results = await Promise.all(live(v).map(({ shard: s }) => this.#readShard(s, { op: 'find', q: raw, limit: perShard, m: [s.range[0], s.range[1]], h: v.config.hashFunction }, options.stale === true)));
      return mergeFind(q, results.map((r) => ({ docs: r.docs as Record<string, unknown>[], total: r.total as number, stats: statsOf(r.stats) })));
    });
  }

  /** `_explain` on each shard's leader, as `find` would ask it. */
  async explain(name: string, raw: unknown): Promise<Record<string, unknown>> {
    requireProtocol(this.#o.member.liveNodes(), 6, `_explain on VDB ${JSON.stringify(name)}`);
    const q = parseFind(raw);
    const perShard = pageEnd(q) ?? null;
    const v = await this.#vdbNow(name);
    const plans = await Promise.all(live(v).map(async ({ id, shard: s }) => ({ shardId: id, plan: await this.#readShard(s, { op: 'explain', q: raw, limit: perShard }) })));
    return vdbExplain(q, plans);
  }

  /**
   * `_all_docs` on each shard's leader, merged by id; with keys, each shard reads the ids
   * routed to it. Like `find`, each shard keeps only the ids of its range in this node's map.
   */
  async allDocs(name: string, q: VdbAllDocsQuery): Promise<VdbAllDocs> {
    // The shards' `all` and `keys` reads are protocol 1: a member from before answers neither.
    requireProtocol(this.#o.member.liveNodes(), 1, `listing VDB ${JSON.stringify(name)} (_all_docs)`);
    const total = ((await this.info(name)) as { total_docs: number }).total_docs;
    if (q.keys !== undefined) {
      const keys = q.keys;
      const rows = await this.#onMap(name, (v) =>
        rowsByRoute(keys, (id) => this.#route(v, id), async (at, ids) => (await this.#readShard(v.shards[at]!, { op: 'keys', ids, d: q.includeDocs, c: q.conflicts })).rows as AllDocsRow[]),
      );
      return { total_rows: total, offset: 0, rows };
    }
    const range = {
      ...(q.startkey === undefined ? {} : { startkey: q.startkey }),
      ...(q.endkey === undefined ? {} : { endkey: q.endkey }),
      inclusiveEnd: q.inclusiveEnd,
      descending: q.descending,
      includeDocs: q.includeDocs,
      conflicts: q.conflicts,
    };
    // Pages from each shard's leader, only the ids of its range in this node's map; a split
    // or merge switching meanwhile restarts the cursors on the new map (mergedListing).
    const shardsNow = async (afterStale: boolean): Promise<ListingShards> => {
      let v = await this.#vdbNow(name);
      if (afterStale) {
        await this.#awaitNewer(name, v.epoch);
        v = await this.#vdbNow(name);
      }
      const hash = v.config.hashFunction;
      return {
        version: v.epoch,
        readers: live(v).map(({ shard: s }) => async (after: string | undefined, limit: number) => {
          const o: ShardAllDocsRange = { ...range, ...(after === undefined ? {} : { after }), limit };
          return (await this.#readShard(s, { op: 'all', o, m: [s.range[0], s.range[1]], h: hash })).rows as AllDocsRow[];
        }),
      };
    };
    return { total_rows: total, offset: q.skip, rows: await primed(mergedListing(shardsNow, q)) };
  }

  /**
   * The merged feed: each shard's page from its own cursor, merged by sequence, cut at
   * `limit`; each shard's cursor moves to the last of its entries that made the cut. A cursor
   * holds one position per shard id; one from before a split lacks the new shard, which is
   * read from its beginning (its copies come again: duplicates, never losses); a merged
   * shard's position is ignored (the target's copies have later sequences than any cursor
   * into it held).
   */
  async changes(name: string, options: VdbChangesOptions): Promise<VdbChangesPage> {
    if (options.allLeaves === true) this.#requireReplicationProtocol(name, '_changes?style=all_docs');
    if (options.docIds !== undefined || options.selector !== undefined) this.#requireReplicationProtocol(name, 'a filtered _changes');
    try {
      return await this.#onMap(name, (v) => this.#changes(v, options));
    } catch (err) {
      // A cursor with more positions than this node's map has shards was handed out by a node
      // that had applied a split this one has not yet: it catches up and reads again (503 when
      // it cannot), rather than refuse a cursor the feed itself gave (a replicator stops on a
      // 400; the chaos feed follower found it). Still longer after that, it is no cursor of this VDB.
      const behind = isFirkinError(err) && err.code === 'bad_request' && cursorPositions(options.since) > (this.#o.member.state.vdbs[name]?.shards.length ?? 0);
      if (!behind) throw err;
      await this.#o.member.catchUp();
      return this.#onMap(name, (v) => this.#changes(v, options));
    }
  }

  async #changes(v: VdbPlacement, options: VdbChangesOptions): Promise<VdbChangesPage> {
    const limit = options.limit ?? 1_000;
    const since = options.since === 'now' ? await this.#nowCursor(v) : afterMerges(v, decodeSince(options.since, v.shards.length));
    type Entry = { id: string; seq: string; rev: string; deleted: boolean; doc?: unknown; revs?: string[]; shard: number; hlc: Hlc };
    /** A shard's page: its entries, and where its feed ended when it read it all (`end`). */
    type Page = Entry[] & { end?: Hlc };
    const shards = live(v);
    const round = (waitMs: number) =>
      shards.map(async ({ id: i, shard: s }): Promise<Page> => {
        // `doc_ids`: each shard is asked for its own ids only, and one that owns none is not asked.
        const ids = options.docIds?.filter((id) => this.#route(v, id) === i);
        if (ids !== undefined && ids.length === 0) return [];
        const from = since[i] ?? null;
        const reply = await this.#readShard(s, {
          op: 'changes',
          since: from === null ? null : [from.wallMs, from.logical],
          limit,
          docs: options.includeDocs,
          m: [s.range[0], s.range[1]],
          h: v.config.hashFunction,
          ...(waitMs > 0 ? { w: waitMs } : {}),
          ...(options.allLeaves === true ? { a: true } : {}),
          ...(options.conflicts === true ? { c: true } : {}),
          ...(ids === undefined ? {} : { ids }),
          ...(options.selector === undefined ? {} : { sel: options.selector }),
        });
        const page: Page = (reply.results as Omit<Entry, 'shard' | 'hlc'>[]).map((e) => ({ ...e, shard: i, hlc: parseHlc(e.seq)! }));
        const last = reply.last as [number, number] | null;
        if (reply.more === false && page.length < limit && last !== null) page.end = { wallMs: last[0], logical: last[1] };
        return page;
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
    for (const { id } of retired(v)) cursor[id] = MERGED;
    const changes = merged.map((e) => {
      cursor[e.shard] = e.hlc;
      // A cursor per change resumes right after it: entries of one write share a sequence
      // across shards, so the entry's own sequence would skip the rest of them.
      const seq = options.cursorSeqs === true ? encodeSinceToken(cursor) : e.seq;
      return { id: e.id, seq, rev: e.rev, deleted: e.deleted, ...(options.includeDocs ? { doc: e.doc ?? null } : {}), ...(e.revs === undefined ? {} : { revs: e.revs }) };
    });
    // Then `last_seq`: a shard read to its end whose entries all made the cut resumes after what
    // it examined (a filtered feed does not read its skipped entries again; a later write in
    // that shard gets a later sequence from its log). Not in the changes' own cursors: a
    // change listed before that shard's entries must not resume past them.
    const taken = new Map<number, number>();
    for (const e of merged) taken.set(e.shard, (taken.get(e.shard) ?? 0) + 1);
    shards.forEach(({ id }, k) => {
      const end = pages[k]!.end;
      const at = cursor[id];
      if (end !== undefined && (taken.get(id) ?? 0) === pages[k]!.length && (at === null || at === undefined || compareHlc(end, at) > 0)) cursor[id] = end;
    });
    return { changes: this.#o.unsafeFeedSkips === true ? changes.slice(0, -1) : changes, last_seq: encodeSinceToken(cursor) };
  }

  async #nowCursor(v: VdbPlacement): Promise<(Hlc | null)[]> {
    const last = await Promise.all(live(v).map(async ({ id, shard }) => [id, (await this.#readShard(shard, { op: 'info' })).last as [number, number]] as const));
    return cursorAt(v, new Map(last));
  }

  // ---- CouchDB's replication protocol (docs/vdb.md "Replicating a VDB")

  /** The shards' reads and `local` entries for it are cluster protocol 3: an older member serves neither. */
  #requireReplicationProtocol(name: string, what: string): void {
    requireProtocol(this.#o.member.liveNodes(), 3, `${what} on VDB ${JSON.stringify(name)}`);
  }

  async revsDiff(name: string, request: Readonly<Record<string, readonly string[]>>): Promise<RevsDiff> {
    this.#requireReplicationProtocol(name, '_revs_diff');
    return this.#onMap(name, (v) => diffByRoute(request, (id) => this.#route(v, id), async (at, r) => (await this.#readShard(v.shards[at]!, { op: 'rdiff', r: r as Record<string, string[]> })).d as RevsDiff));
  }

  async bulkGet(name: string, entries: readonly BulkGetRequest[], options: { revs: boolean; attachments: boolean }): Promise<BulkGetResult[]> {
    this.#requireReplicationProtocol(name, '_bulk_get');
    return this.#onMap(name, (v) =>
      byRoute(entries, (e) => this.#route(v, e.id), async (at, e) => (await this.#readShard(v.shards[at]!, { op: 'bget', e, revs: options.revs, atts: options.attachments })).r as BulkGetResult[]),
    );
  }

  async getLocal(name: string, id: string): Promise<Record<string, unknown> | undefined> {
    this.#requireReplicationProtocol(name, '_local documents');
    checkLocalId(id);
    const reply = await this.#onMap(name, (v) => this.#readShard(v.shards[this.#route(v, localRouteId(id))]!, { op: 'lget', id }));
    return (reply.d as Record<string, unknown> | null) ?? undefined;
  }

  /** Each shard's `_local` documents of its range on this node's map, from its leader, page by page (cluster protocol 4). */
  async localDocs(name: string): Promise<[string, Uint8Array][]> {
    requireProtocol(this.#o.member.liveNodes(), 4, `_local_docs on VDB ${JSON.stringify(name)}`);
    return this.#onMap(name, async (v) => {
      const out: [string, Uint8Array][] = [];
      for (const { shard: s } of live(v)) {
        let after: string | undefined;
        for (;;) {
          const page = await this.#readShard(s, { op: 'locals', m: [s.range[0], s.range[1]], h: v.config.hashFunction, o: true, ...(after === undefined ? {} : { after }) });
          const entries = page.l as [string, Uint8Array][];
          await collectLocals(entries, out);
          if (page.more !== true || entries.length === 0) break;
          after = entries[entries.length - 1]![0];
        }
      }
      return out;
    });
  }

  putLocal(name: string, id: string, body: unknown, rev: string | undefined): Promise<LocalWriteResult> {
    // Refuse what no replica would take before it is logged (shape, size).
    localWrite(id, undefined, body, { force: true });
    const given = rev ?? (body as { _rev?: unknown })._rev;
    parseLocalRev(given);
    return this.#writeLocal(name, id, body as Record<string, unknown>, given as string | undefined);
  }

  deleteLocal(name: string, id: string, rev: string | undefined): Promise<LocalWriteResult> {
    checkLocalId(id);
    return this.#writeLocal(name, id, null, rev);
  }

  /**
   * A `local` entry in the log of the shard the id routes to (a read-only shard takes it too:
   * checkpoints are not documents). A shard a split or merge fenced refuses it with no effect:
   * it is routed again on the new map, as a document write is.
   */
  async #writeLocal(name: string, id: string, body: Record<string, unknown> | null, rev: string | undefined): Promise<LocalWriteResult> {
    this.#requireReplicationProtocol(name, '_local documents');
    // One request id for every attempt: an attempt that committed but whose answer was lost
    // answers the same again from that shard; a shard that fenced it (no effect) is not asked
    // again, the new map routing the id elsewhere.
    const rid = randomBytes(12).toString('base64url');
    for (let attempt = 0; ; attempt++) {
      const v = await this.#vdbNow(name);
      let outcome: DocShardOutcome;
      try {
        outcome = await this.#propose(v.shards[this.#route(v, localRouteId(id))]!, { kind: 'local', rid, id, body, ...(rev === undefined ? {} : { rev }) });
      } catch (err) {
        if (!this.#mapMoved(name, v.epoch)) throw err;
        outcome = { kind: 'fenced' };
      }
      if (outcome.kind === 'local') {
        if ('refused' in outcome) throw new FirkinError(outcome.refused.code as FirkinError['code'], outcome.refused.message);
        return { ok: true, id: `_local/${id}`, rev: outcome.rev };
      }
      if (outcome.kind !== 'fenced') throw new FirkinError('error', `a shard answered a _local write with a ${outcome.kind} outcome`);
      if (attempt >= STALE_RETRIES_MAX) throw new FirkinError('unavailable', `virtual database ${JSON.stringify(name)} is switching shards and the new map did not arrive; retry`);
      await this.#awaitNewer(name, v.epoch);
    }
  }

  /** Import every live document of a local database (optionally filtered) in batches. */
  async import(name: string, spec: ImportSpec) {
    const v = await this.#vdbNow(name);
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
      const results = await this.#write(name, bulkEdits(writes, true, this.#o.newId));
      for (const r of results) {
        if (r.ok) counts.docs_written++;
        else if (spec.onConflict === 'skip' && r.error === 'conflict') counts.docs_skipped++;
        else counts.errors++;
      }
    });
  }

  async setShardStatus(name: string, shardId: number, status: 'readonly' | 'active'): Promise<{ shard_id: number; status: string }> {
    const v = await this.#vdbNow(name);
    if (v.shards[shardId] === undefined || v.shards[shardId]!.retired === true) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
    const job = this.#jobOf(name)?.vdb;
    if (job !== undefined && (job.source === shardId || job.target === shardId)) throw new FirkinError('conflict', `shard ${shardId} is being ${job.op === 'split' ? 'split' : 'merged'}`);
    await this.#o.member.propose({ type: 'vdb.status', name, shard: shardId, readonly: status === 'readonly' });
    this.#o.log.info({ vdb: name, shard: shardId, status }, 'shard status changed');
    return { shard_id: shardId, status };
  }

  async compact(name: string): Promise<void> {
    const v = await this.#vdbNow(name);
    await Promise.all(live(v).map(({ shard }) => this.#propose(shard, { kind: 'compact', rid: randomBytes(12).toString('base64url') })));
  }

  /**
   * Split: a job of the metadata group (`vdb-rebalance.ts`); the new shard (id = highest + 1,
   * the next position) is placed now with the VDB's replica factor and zones. Answers when the
   * job is done, in the standalone route's shape.
   */
  async split(name: string, shardId: number): Promise<Record<string, unknown>> {
    const v = await this.#vdbPlanned(name);
    const shard = v.shards[shardId];
    if (shard === undefined || shard.retired === true) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
    if (shard.readonly === true) throw new FirkinError('conflict', `shard ${shardId} is readonly, not active`);
    const ranges = rangesOf(v);
    const r = ranges.find((x) => x.shardId === shardId)!;
    if (r.start === r.end) throw new FirkinError('conflict', `shard ${shardId} holds a single hash and cannot split`);
    const target = v.shards.length;
    const upper = splitRanges(ranges, shardId, target).find((x) => x.shardId === target)!;
    const state = this.#o.member.state;
    const nodes = placementCandidates(state, v.config.replicaFactor, v.config.zones, 'replica_factor');
    const [replicas] = placeShards(1, v.config.replicaFactor, nodes);
    const docs = ((await this.#readShard(shard, { op: 'info' })).doc_count as number) ?? 0;
    const jobId = `vdb-split-${randomBytes(6).toString('hex')}`;
    await this.#o.member.propose({ type: 'vdb.rebalance.begin', name, jobId, atMs: this.#o.clock.nowMs(), op: 'split', source: shardId, target, moving: [upper.start, upper.end], docs, replicas: replicas!, ...this.#planned(shard) });
    this.#o.log.info({ vdb: name, shard: shardId, newShard: target, replicas, job: jobId }, `split of ${name} shard ${shardId} started: shard ${target} on ${replicas!.join('+')} takes [${upper.start}, ${upper.end}]`);
    const job = await this.#awaitJob(jobId);
    return { ok: true, shard_id: shardId, new_shard_id: target, docs_moved: job.vdb!.copied, message: `shard ${shardId} split: shard ${target} took the upper half of its range`, job: jobId };
  }

  /** Merge: the path shard's documents move into `targetShard` (adjacent), as a job; answers when it is done. */
  async merge(name: string, shardId: number, targetShard: number): Promise<Record<string, unknown>> {
    const v = await this.#vdbPlanned(name);
    if (shardId === targetShard) throw new FirkinError('bad_request', 'a shard cannot merge into itself');
    const ranges = rangesOf(v);
    const a = ranges.find((x) => x.shardId === shardId);
    const b = ranges.find((x) => x.shardId === targetShard);
    if (a === undefined) throw new FirkinError('not_found', `shard ${shardId} does not exist`);
    if (b === undefined) throw new FirkinError('not_found', `target shard ${targetShard} does not exist`);
    for (const id of [shardId, targetShard]) if (v.shards[id]!.readonly === true) throw new FirkinError('conflict', `shard ${id} is readonly, not active`);
    if (!areAdjacent(a, b)) throw new FirkinError('conflict', `shards ${shardId} [${a.start}, ${a.end}] and ${targetShard} [${b.start}, ${b.end}] are not adjacent in hash space`);
    const docs = ((await this.#readShard(v.shards[shardId]!, { op: 'info' })).doc_count as number) ?? 0;
    const jobId = `vdb-merge-${randomBytes(6).toString('hex')}`;
    await this.#o.member.propose({ type: 'vdb.rebalance.begin', name, jobId, atMs: this.#o.clock.nowMs(), op: 'merge', source: shardId, target: targetShard, moving: [a.start, a.end], docs, ...this.#planned(v.shards[shardId]!, v.shards[targetShard]!) });
    this.#o.log.info({ vdb: name, shard: shardId, into: targetShard, job: jobId }, `merge of ${name} shard ${shardId} into shard ${targetShard} started`);
    const job = await this.#awaitJob(jobId);
    return { ok: true, shard_id: shardId, target_shard: targetShard, docs_moved: job.vdb!.copied, message: `shard ${shardId} merged into shard ${targetShard}`, job: jobId };
  }

  /**
   * Cancel the split or merge running on a VDB (before its switching step), and wait until its
   * coordinator has undone the copy and ended it. Answers the job as it ended (or as it stands
   * when `waitMs` passed: the cancel is recorded and goes on).
   */
  async cancelRebalance(name: string, waitMs = 60_000): Promise<Record<string, unknown>> {
    await this.#vdbNow(name);
    const job = this.#jobOf(name);
    if (job === undefined) throw new FirkinError('not_found', `virtual database ${JSON.stringify(name)} has no split or merge running`);
    if (job.step !== 'copying' && job.step !== 'catching_up') throw new FirkinError('conflict', `the ${job.vdb?.op ?? 'job'} of ${JSON.stringify(name)} is ${job.step}; it can no longer be cancelled`);
    // The log decides a race with the coordinator's next step: this entry or the switching one.
    await this.#o.member.propose({ type: 'vdb.rebalance.progress', jobId: job.id, atMs: this.#o.clock.nowMs(), cancel: true });
    this.#o.log.info({ vdb: name, job: job.id }, `cancel of the ${job.vdb?.op} of ${name} taken`);
    return rebalanceView((await this.#jobWhenEnded(job.id, Date.now() + waitMs)) ?? job);
  }

  /** This node's copy of a job once it ended, or as it stands when `until` passed or the node closes (undefined: gone). */
  async #jobWhenEnded(jobId: string, until: number): Promise<Job | undefined> {
    for (;;) {
      const job = this.#o.member.state.jobs[jobId];
      if (job === undefined || isReshardEnded(job.step) || Date.now() > until || this.closed) return job;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Wait until a rebalance job ended, as this node's metadata says; a failed one is an error. */
  async #awaitJob(jobId: string): Promise<Job> {
    const job = await this.#jobWhenEnded(jobId, Date.now() + REBALANCE_WAIT_MS);
    if (job === undefined) throw new FirkinError('error', `job ${jobId} is gone`);
    if (job.step === 'done') return job;
    if (job.step === 'cancelled') throw new FirkinError('conflict', `job ${jobId} was cancelled (DELETE /vdb/${job.target}/_rebalance): the shards are as they were`);
    if (job.step === 'failed') throw new FirkinError('error', `job ${jobId} failed: ${job.vdb?.error ?? 'no reason recorded'}`);
    if (this.closed) throw new FirkinError('unavailable', 'the node is closing; the job goes on (GET /_cluster/jobs)');
    throw new FirkinError('timeout', `job ${jobId} is still ${job.step}; it goes on (GET /_cluster/jobs)`);
  }

  /** The shard that owns `id` and its group (tests and the admin view). */
  placementOf(name: string, id: string): { shardId: number; group: string; leader: string | undefined } {
    const v = this.#vdb(name);
    const shardId = this.#route(v, id);
    const group = v.shards[shardId]!.group;
    return { shardId, group, leader: this.knownLeader(group) };
  }
}
