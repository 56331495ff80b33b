// Replicated vector shards on a cluster node: the collection catalogue kept by the metadata
// group, the Raft groups of the shard replicas this node hosts, and the router that reaches
// any shard's leader from any node.
//
// - Placement: `create` decides replicas and hash ranges on the proposer (`placement.ts`) and
//   proposes `collection.create`; the log numbers the shards (`vs<n>`). Every node applies it
//   and opens the replicas placed on it: a `Shard` (storage id CLUSTER_SHARD_BASE + n) as the
//   state machine (`ShardFsm`) of a `RaftGroup` whose initial voters are the replicas.
// - Writes: a shard command (ids and vectors decided by the engine before it exists) goes to
//   the group's leader (`vshard.propose`, one hop over the authenticated cluster link) and is
//   acknowledged once committed and applied there. A follower or unknown leader answers
//   `not_leader`; the router tries the next replica until its deadline, then 503 `no_quorum`.
// - Reads (get, search, count): linearizable. The leader confirms its leadership with a
//   ReadIndex barrier (`readBarrier`), then answers from its applied state.
// - Stale reads (`consistency: stale`) are answered by any replica, the local one first.
// - Repair and leave: the metadata moves replicas (`shard.replace`); `#confRound` walks each
//   led group's membership toward its placement one step at a time (shard-repair.ts).
// - Every group ticks on the member's one ticker, and idle groups quiesce: a quiesced
//   follower wakes when the cluster link to its leader's node goes quiet (`peerAlive`).
import { randomBytes } from 'node:crypto';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import type { Logger } from 'pino';
import { FirkinError, isFirkinError } from '../core/errors.js';
import { type IdRouting, initialRanges } from '../core/shard-hash.js';
import type { RaftGroup } from '../raft/group.js';
import { RocksLog } from '../raft/rocks-log.js';
import type { Store } from '../storage/db.js';
import type { AnnEngine } from '../vector/ann/ann-index.js';
import type { QueryStats, ScoredId } from '../vector/bm25.js';
import type { CollectionConfig } from '../vector/collection-config.js';
import { type ApplyOutcome, type FenceOutcome, REPLAY_RUN, type ShardCommand, decodeShardCommand, decodeShardEntry, encodeShardCommand } from '../vector/commands.js';
import { fenceFromWire, fenceToWire } from '../vector/fence.js';
import { encodeKey } from '../core/keys.js';
import type { Filter } from '../vector/filter.js';
import { type DocInput, Shard, type ShardCaches, type StoredDoc, type VectorHit, dropShardData, newShardCaches } from '../vector/shard.js';
import { ShardFsm, isRequestRecord } from '../vector/shard-fsm.js';
import type { RequestRecord, ShardStateChunk } from '../vector/shard.js';
import type { Bm25Options, ClusterCatalogue, ClusteredCollection, ReadOptions, ScrollOptions, ScrolledDoc, SearchOptions, ShardHandle } from '../vector/shard-handle.js';
import type { CollectionPlacement, MetaState, ShardPlacement } from './meta-state.js';
import { liftedRollbacks } from './switch-bound.js';
import { placeShards, placementCandidates } from './placement.js';
import { ReshardCoordinator, reshardView } from './reshard.js';
import { isReshardEnded, reshardLogFloor } from './meta-state.js';
import { statfs } from 'node:fs/promises';
import type { ReshardInfo } from '../vector/cluster.js';
import { ShardHost, awaitNewShardLeaders, type ReplicaDiagnostics, type ShardHostOptions, type WantedReplica } from './shard-host.js';

/** Where a replica keeps the index of its reshard fence (`system` column family). */
const fenceKey = (group: string) => encodeKey(['vshard.fence', group]);

/** Local storage ids of replicated shards start here, far above any standalone shard id. */
export const CLUSTER_SHARD_BASE = 2 ** 40;
/** An export (snapshot transfer) whose reader stopped asking for this long is closed. */
const EXPORT_IDLE_MS = 60_000;
/** Each call of a snapshot transfer waits at most this long for its chunk. */
const EXPORT_CALL_MS = 30_000;

/** One snapshot transfer being read by another node: an open iterator over the shard's state. */
interface ExportSession {
  readonly group: string;
  readonly stream: AsyncGenerator<ShardStateChunk>;
  lastUsedMs: number;
  /** The replica's applied index when the transfer began: the state read covers at least it. */
  readonly appliedAtStart: number;
}


export interface VectorShardsOptions extends ShardHostOptions {
  ann: AnnEngine;
  indexDir: string;
  /** A reshard copies at most this many documents per second. */
  reshardDocsPerSecond?: number;
  /** A reshard's switch is rolled back when not done this long after its fences (default 10 s). */
  reshardSwitchTimeoutMs?: number;
  /** Tests only: see `ReshardOptions.switchDelayMs`. */
  reshardSwitchDelayMs?: number;
  /** Tests only: see `ReshardOptions.switchStalls`. */
  reshardSwitchStalls?: number;
  /**
   * Tests only (FIRKIN_UNSAFE_FIXTURE=exit-in-snapshot-load): the process exits (code 86) when
   * a replica starts streaming a snapshot's state, its own data already dropped: the crash a
   * restart must recover from. Never set outside tests.
   */
  exitInSnapshotLoad?: boolean;
  /**
   * The chaos suite's deliberately broken build (FIRKIN_UNSAFE_FIXTURE=stale-reads): every
   * read is served like a stale one, by any replica without a ReadIndex round. Its checker
   * must catch it. Never set outside that test.
   */
  unsafeStaleReads?: boolean;
  /**
   * The chaos suite's broken build FIRKIN_UNSAFE_FIXTURE=bm25-kept-deletes: a deleted document's
   * postings stay in its shard's keyword index. Never set outside that test.
   */
  unsafeBm25KeepsDeletes?: boolean;
  /** Shared with the node's standalone engine (default: the host's own). */
  caches?: ShardCaches;
}

interface Replica {
  /** As the metadata says now (repair and leave change its replicas). */
  placement: ShardPlacement;
  readonly fsm: ShardFsm;
  readonly group: RaftGroup;
}

type ReadRequest =
  | { op: 'get'; id: string }
  | { op: 'search'; v: Uint8Array; k: number; ef: number; f: Filter | null; p?: boolean }
  | { op: 'bm25'; q: string; k: number; st?: QueryStats | null }
  | { op: 'bm25stats'; q: string }
  | { op: 'scroll'; from: string | null; n: number; f: Filter | null; vec: boolean }
  | { op: 'count' };

const f32 = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
function fromF32(b: Uint8Array): Float32Array {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

export class VectorShards extends ShardHost<Replica, CollectionPlacement> implements ClusterCatalogue {
  readonly prefix = 'vshard';
  readonly #o: VectorShardsOptions;
  /** Recent hits' payloads and decoded BM25 term lists of every replica here. */
  readonly #caches: ShardCaches;
  readonly #views = new Map<string, { placement: CollectionPlacement; view: ClusteredCollection }>();
  readonly #exports = new Map<string, ExportSession>();
  readonly #reshards: ReshardCoordinator;

  private constructor(o: VectorShardsOptions) {
    super(o);
    this.#o = o;
    this.#caches = o.caches ?? newShardCaches();
    this.#reshards = new ReshardCoordinator({ member: o.member, shards: this, log: o.log.child({ mod: 'reshard' }), docsPerSecond: o.reshardDocsPerSecond ?? 20_000, switchTimeoutMs: o.reshardSwitchTimeoutMs ?? 10_000, switchDelayMs: o.reshardSwitchDelayMs, switchStalls: o.reshardSwitchStalls });
  }

  /** A call to one given node (this one answers itself). */
  async callOn(node: string, method: string, payload: Record<string, unknown>): Promise<Record<string, unknown>> {
    const body = encodeCbor(payload);
    const reply = node === this.me ? await this.answer(this.me, method, body) : await this.o.member.callPeer(node, method, body, EXPORT_CALL_MS);
    return decodeCbor(reply) as Record<string, unknown>;
  }

  // ---- reshard -------------------------------------------------------------------------------

  /**
   * Start an online reshard (any node): the new groups are placed like a new collection's and
   * the job is recorded; the metadata leader runs it. Refused while one runs (409
   * reshard_in_progress), or when the disk holds less than about twice the collection.
   */
  async startReshard(name: string, numShards: number): Promise<ReshardInfo> {
    const state = this.#o.member.state;
    const c = state.collections[name];
    if (c === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} not found`);
    if (c.shards.length === numShards) throw new FirkinError('same_shard_count', `collection ${JSON.stringify(name)} already has ${numShards} shards`);
    const running = this.#runningJob(name);
    if (running !== undefined) throw new FirkinError('reshard_in_progress', `collection ${JSON.stringify(name)} is being resharded (job ${running.id}, ${running.step})`);
    const view = this.get(name)!;
    const docs = (await Promise.all(view.shards.map((s) => s.countDocs()))).reduce((a, b) => a + b, 0);
    const config = c.config as unknown as CollectionConfig;
    // Vector, index links, text and metadata: a generous estimate of a document's bytes.
    const bytes = docs * (config.dimensions * 4 * 2 + 1024);
    const fs = await statfs(this.#o.indexDir);
    const free = fs.bavail * fs.bsize;
    if (free < 2 * bytes) throw new FirkinError('too_large', `a reshard needs about twice the collection's size on disk (${Math.round((2 * bytes) / 2 ** 20)} MiB); ${Math.round(free / 2 ** 20)} MiB are free on ${this.me}`);
    const replicas = placeShards(numShards, c.replicationFactor, placementCandidates(state, c.replicationFactor));
    const ranges = initialRanges(numShards);
    const jobId = randomBytes(9).toString('base64url');
    await this.#o.member.propose({
      type: 'reshard.begin',
      collection: name,
      jobId,
      atMs: Date.now(),
      docs,
      shards: replicas.map((r, i) => ({ range: [ranges[i]!.start, ranges[i]!.end] as const, replicas: r })),
    });
    this.#o.log.info({ collection: name, job: jobId, from: c.shards.length, to: numShards, docs }, `reshard of ${name} started: ${c.shards.length} -> ${numShards} shards (${docs} documents)`);
    return { old_shards: c.shards.length, new_shards: numShards, documents_migrated: 0 };
  }

  #runningJob(name: string) {
    return Object.values(this.#o.member.state.jobs).find((j) => j.kind === 'reshard' && j.target === name && !isReshardEnded(j.step));
  }

  /** The collection's current (or last) reshard job. */
  reshardStatus(name: string): Record<string, unknown> {
    const c = this.#o.member.state.collections[name];
    if (c === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} not found`);
    const jobs = Object.values(this.#o.member.state.jobs).filter((j) => j.kind === 'reshard' && j.target === name && j.reshard !== undefined);
    const job = jobs.sort((a, b) => b.createdAtMs - a.createdAtMs)[0];
    if (job === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} has no reshard job`);
    return reshardView(job, c.pending);
  }

  /** Cancel a reshard before its switch: the new groups go, the old ones stay authoritative. */
  async cancelReshard(name: string): Promise<Record<string, unknown>> {
    const job = this.#runningJob(name);
    if (job === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} has no reshard running`);
    if (job.step === 'switching') throw new FirkinError('conflict', `the reshard of ${JSON.stringify(name)} is switching; it can no longer be cancelled`);
    await this.#o.member.propose({ type: 'reshard.abort', jobId: job.id, atMs: Date.now(), step: 'cancelled' });
    return this.reshardStatus(name);
  }

  static async start(o: VectorShardsOptions): Promise<VectorShards> {
    const host = new VectorShards(o);
    await host.begin();
    await host.#sweep();
    return host;
  }

  protected placements(state: MetaState): WantedReplica<CollectionPlacement>[] {
    // A reshard's pending groups are hosted (and filled) before the collection routes to them.
    return Object.values(state.collections).flatMap((c) => [...c.shards, ...(c.pending ?? [])].map((shard) => ({ owner: c, shard })));
  }

  /** Resolves once this node's metadata holds a newer shard map of `name` than `epoch` (or the deadline passed). */
  async awaitNewer(name: string, epoch: number, timeoutMs?: number): Promise<void> {
    const until = Date.now() + (timeoutMs ?? this.o.member.timings.proposalTimeoutMs);
    // A switch rolled back (its fences lifted) since the wait began: the old map serves again.
    const lifted = () => liftedRollbacks(this.#o.member.state.jobs, 'reshard', name);
    const liftedBefore = lifted();
    while (Date.now() < until && !this.closed) {
      const c = this.#o.member.state.collections[name];
      if (c === undefined || c.epoch > epoch || lifted() > liftedBefore) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  protected concerns(type: string): boolean {
    return type.startsWith('collection.') || type.startsWith('shard.') || type === 'reshard.begin' || type === 'reshard.switch' || type === 'reshard.abort';
  }

  /**
   * Leftovers are judged against the metadata this node had applied before it stopped: wait
   * (bounded) until it applied up to its stored commit index, so a collection it had already
   * created is not taken for a deleted one.
   */
  async #sweep(): Promise<void> {
    const { member, store, indexDir, log } = this.#o;
    const commit = member.groupStatus().commit;
    const until = Date.now() + 30_000;
    while (member.groupStatus().applied < commit) {
      if (Date.now() > until || this.closed) {
        log.warn({ commit }, 'leftover shard data not swept: the metadata did not catch up with its commit index in time');
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await this.settled();
    const hosted = this.heldGroups();
    for (const g of this.placedHere(member.state)) hosted.add(g);
    // A whole replica of a group that still exists is kept, placed here or not: it may still
    // vote (the host opens it again); only a removal begun (`RocksLog.markDropping`) or a
    // deleted group is a leftover.
    const intact = this.storedGroups();
    for (const w of this.placements(member.state)) if (intact.has(w.shard.group)) hosted.add(w.shard.group);
    await sweepLeftovers(store, hosted, indexDir, log);
  }

  /** Whether a read goes to any replica (asked for, or the broken fixture) or to the leader. */
  staleRead(options: ReadOptions): boolean {
    return options.stale === true || this.#o.unsafeStaleReads === true;
  }

  // ---- the catalogue -------------------------------------------------------------------------

  get(name: string): ClusteredCollection | undefined {
    const placement = this.#o.member.state.collections[name];
    if (placement === undefined) return undefined;
    const cached = this.#views.get(name);
    if (cached !== undefined && cached.placement === placement) return cached.view;
    const ranges = placement.shards.map((s) => ({ shardId: s.number, start: s.range[0], end: s.range[1] }));
    const routing: IdRouting = { scheme: 'ranges', hash: 'xxhash', ranges };
    const view: ClusteredCollection = {
      config: placement.config as unknown as CollectionConfig,
      routing,
      shards: placement.shards.map((s) => new RoutedShard(this, s, name, placement.epoch)),
      epoch: placement.epoch,
    };
    this.#views.set(name, { placement, view });
    return view;
  }

  catchUp(): Promise<void> {
    return this.#o.member.catchUp();
  }

  names(): string[] {
    return Object.keys(this.#o.member.state.collections);
  }

  async create(name: string, config: CollectionConfig): Promise<void> {
    const state = this.#o.member.state;
    const replicas = placeShards(config.num_shards, config.replication_factor, placementCandidates(state, config.replication_factor));
    const ranges = initialRanges(config.num_shards);
    await this.#o.member.propose({
      type: 'collection.create',
      name,
      config: config as unknown as Record<string, unknown>,
      replicationFactor: config.replication_factor,
      shards: replicas.map((r, i) => ({ range: [ranges[i]!.start, ranges[i]!.end] as const, replicas: r })),
    });
    this.#o.log.info({ collection: name, shards: replicas }, `collection ${name} placed: ${replicas.map((r, i) => `shard ${i} on ${r.join('+')}`).join(', ')}`);
    // Usable when it answers: every shard has a leader that can confirm a read; if the rounds
    // run out, the create (committed) still answers, and the log says so.
    const view = this.get(name);
    if (view === undefined) return;
    const late = await awaitNewShardLeaders(() => Promise.all(view.shards.map((s) => s.countDocs())), () => this.closed);
    if (late !== undefined) this.#o.log.warn({ collection: name, err: late.message }, `collection ${name} is created but not every shard has a leader yet; writes answer 503 until they do`);
  }

  async delete(name: string): Promise<void> {
    await this.#o.member.propose({ type: 'collection.delete', name });
  }

  // ---- hosting -------------------------------------------------------------------------------

  protected async dropData(group: string, replica: Replica): Promise<void> {
    await replica.fsm.shard.drop();
    await this.o.store.del('system', fenceKey(group), { sync: true });
  }

  protected stopReplica(replica: Replica): void {
    replica.fsm.stop();
  }

  protected async closeReplica(replica: Replica): Promise<void> {
    await replica.fsm.shard.close({ save: true });
  }

  protected override housekeeping(): void {
    this.#expireExports();
    this.#reshards.tick();
  }

  protected async open(collection: CollectionPlacement, placement: ShardPlacement): Promise<Replica> {
    const { store, ann, indexDir, log } = this.#o;
    const config = collection.config as unknown as CollectionConfig;
    const storageId = CLUSTER_SHARD_BASE + placement.number;
    const deps = { store, ann, indexDir, log: log.child({ group: placement.group }), caches: this.#caches, ...(this.#o.unsafeBm25KeepsDeletes === true ? { unsafeBm25KeepsDeletes: true } : {}) };
    const shard = await Shard.open(storageId, config, deps);
    try {
      return await this.#openGroup(shard, storageId, config, deps, placement);
    } catch (err) {
      // The host opens it again later: leave nothing open behind.
      await shard.close({ save: false, reason: 'stopping' }).catch(() => undefined);
      throw err;
    }
  }

  async #openGroup(shard: Shard, storageId: number, config: CollectionConfig, deps: Parameters<typeof Shard.open>[2], placement: ShardPlacement): Promise<Replica> {
    const { store, indexDir } = this.#o;
    const fsm = new ShardFsm(shard, {
      reopenEmpty: async (old) => {
        await old.close({ save: false, reason: 'dropped' });
        await dropShardData(store, storageId, indexDir);
        return Shard.open(storageId, config, deps);
      },
      source: (index) => this.#pull(placement, index),
      rand: this.#o.rand,
      onRetry: (err, attempt, delayMs) => this.snapshotLoadFailed(placement.group, err, attempt, delayMs),
      fence: {
        load: async () => {
          const raw = await store.get('system', fenceKey(placement.group));
          if (raw === undefined) return undefined;
          const state = fenceFromWire(decodeCbor(raw));
          if (state === undefined) throw new FirkinError('error', `the stored reshard fence of ${placement.group} does not decode`);
          return state;
        },
        save: (state) => store.put('system', fenceKey(placement.group), encodeCbor(fenceToWire(state)), { sync: true }),
      },
    });
    await fsm.loadFence();
    // A running reshard replays this group's log after where its copy read: keep those entries.
    const group = await this.raftGroup(placement, fsm, () => fsm.shard.appliedIndex, () => reshardLogFloor(this.#o.member.state, placement.group));
    return { placement, fsm, group };
  }

  /** Each shard of a collection as its leader sees it (see `shardStatuses`). */
  async shardReport(name: string): Promise<Record<string, unknown>> {
    const placement = this.#o.member.state.collections[name];
    if (placement === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} not found`);
    const shards = await this.shardStatuses(placement.shards);
    return { collection: name, replication_factor: placement.replicationFactor, epoch: placement.epoch, shards };
  }

  /** For /health → vector: replicated collections (the metadata's), and the replicas hosted here with their documents. */
  healthStats(): { collections: number; replicas_hosted: number; documents_hosted: number } {
    let documents = 0;
    for (const r of this.replicas.values()) documents += r.fsm.shard.count;
    return { collections: this.names().length, replicas_hosted: this.replicas.size, documents_hosted: documents };
  }

  /** Status of the replicas hosted here, for the admin view and tests. */
  replicaStatus(): ({ group: string; role: string; leader: string | null; term: number; applied: number; docs: number; quiesced: boolean; catching_up: boolean; voters: readonly string[]; learners: readonly string[] } & ReplicaDiagnostics)[] {
    return [...this.replicas].map(([group, r]) => {
      const s = r.group.status();
      const conf = r.group.core.confState();
      return { group, role: s.role, leader: s.leader, term: s.term, applied: r.fsm.shard.appliedIndex, docs: r.fsm.shard.count, quiesced: s.quiesced, catching_up: s.catching_up, voters: conf.voters, learners: conf.learners, ...this.replicaDiagnostics(r) };
    });
  }

  /** Per-replica digest at its applied index: replicas of one shard compare these. */
  async digests(): Promise<{ group: string; applied: number; docs: number; sha256: string }[]> {
    return Promise.all([...this.replicas].map(async ([group, r]) => ({ group, ...(await r.fsm.shard.digest()) })));
  }

  // ---- answering (on the leader) -------------------------------------------------------------

  protected async answerOwn(_from: string, method: string, req: Record<string, unknown> & { g: string }): Promise<Uint8Array> {
    switch (method) {
      case 'vshard.propose': {
        const { c } = req;
        if (!(c instanceof Uint8Array)) throw new FirkinError('bad_request', 'shard proposal without a command');
        const r = this.leading(req.g);
        this.checkDeadline(req);
        const outcome = (await r.group.propose(c)) as ApplyOutcome | undefined;
        return encodeCbor({ o: outcome ?? null });
      }
      case 'vshard.proposeMany': {
        // A reshard's replay: commands proposed back to back take consecutive places in the log,
        // in this order (one document's writes stay in the order they had in the old shard).
        const { cs } = req;
        if (!Array.isArray(cs) || cs.length === 0 || cs.length > REPLAY_RUN.count || !cs.every((c) => c instanceof Uint8Array)) {
          throw new FirkinError('bad_request', `a run of shard proposals is 1 to ${REPLAY_RUN.count} commands`);
        }
        const r = this.leading(req.g);
        this.checkDeadline(req);
        const proposed: Promise<ApplyOutcome | undefined>[] = [];
        try {
          for (const c of cs as Uint8Array[]) proposed.push(r.group.propose(c) as Promise<ApplyOutcome | undefined>);
        } catch (err) {
          // Leadership lost part way: the commands already in the log may still commit (the
          // replay sends the run again; each applies its request id once).
          for (const p of proposed) p.catch(() => undefined);
          throw err;
        }
        return encodeCbor({ o: (await Promise.all(proposed)).map((o) => o ?? null) });
      }
      case 'vshard.export':
        return this.#export(req.g, req.s);
      case 'vshard.tail':
        return this.#tail(req.g, req.after, req.max);
      case 'vshard.read': {
        // Stale: whatever this replica applied, with no leader and no quorum needed.
        const stale = req.s === true;
        const r = stale ? this.staleReplica(req.g) : this.leading(req.g);
        // A BM25 query's statistics need no barrier: a write racing the search moves them
        // as little as it moves the ranking (the second round reads linearizably).
        if (!stale && req.op !== 'bm25stats') await r.group.readBarrier();
        // A fenced shard is being switched away from: the router waits for the new map.
        if (r.fsm.fencedAt !== undefined) throw new FirkinError('stale_epoch', `shard ${req.g} was fenced by a reshard: the collection is switching to new shards`);
        const shard = r.fsm.shard;
        const q = req as unknown as ReadRequest;
        switch (q.op) {
          case 'get': {
            const doc = await shard.get(q.id);
            return encodeCbor({ d: doc === undefined ? null : { id: doc.id, text: doc.text, metadata: doc.metadata, vector: f32(doc.vector) } });
          }
          case 'search':
            return encodeCbor({ h: await shard.search(fromF32(q.v), q.k, q.ef, q.f ?? undefined, { payload: q.p !== false }) });
          case 'bm25':
            return encodeCbor({ h: await shard.searchBm25(q.q, q.k, { collection: q.st ?? undefined }) });
          case 'bm25stats':
            return encodeCbor({ st: await shard.bm25Stats(q.q) });
          case 'scroll': {
            const docs = await shard.scroll(q.from ?? undefined, q.n, { filter: q.f ?? undefined, vectors: q.vec });
            return encodeCbor({ d: docs.map((d) => ({ id: d.id, text: d.text, metadata: d.metadata, vector: d.vector === undefined ? null : f32(d.vector) })) });
          }
          case 'count':
            return encodeCbor({ n: shard.count });
          default:
            throw new FirkinError('bad_request', 'unknown shard read');
        }
      }
      default:
        throw new FirkinError('not_found', `unknown shard call ${method}`);
    }
  }

  /**
   * The committed and applied entries of a led group after index `after` (at most `max`): what
   * a reshard replays into the new shards. `compacted` when the log no longer holds them.
   */
  async #tail(group: string, after: unknown, max: unknown): Promise<Uint8Array> {
    if (typeof after !== 'number' || typeof max !== 'number') throw new FirkinError('bad_request', 'tail needs after and max');
    const r = this.leading(group);
    const log = r.group.core.log;
    const applied = log.applied;
    const hi = Math.min(applied, after + Math.max(1, max));
    if (hi <= after) return encodeCbor({ e: [], applied, fenced: r.fsm.fencedAt ?? null });
    if (after + 1 < log.firstIndex()) return encodeCbor({ compacted: true, first: log.firstIndex(), applied });
    const entries = log.slice(after + 1, hi + 1);
    if (entries === undefined) return encodeCbor({ compacted: true, first: log.firstIndex(), applied });
    const shard = r.fsm.shard;
    const e: { i: number; d: Uint8Array }[] = [];
    for (const x of entries) {
      if (x.kind !== 'normal' || x.data.length === 0) continue;
      // Not applied here, so not replayed: writes refused by a fence (in force, or lifted by a
      // rolled-back switch), and retries of a request that had applied earlier (replaying one
      // could undo a later write).
      if (r.fsm.refused(x.index)) continue;
      const command = decodeShardEntry(x.data);
      if (command.kind === 'fence' || command.kind === 'lift') continue;
      const first = command.rid === undefined ? undefined : shard.requestIndex(command.rid);
      if (first !== undefined && first < x.index) continue;
      e.push({ i: x.index, d: x.data });
    }
    return encodeCbor({ e, to: hi, applied, fenced: r.fsm.fencedAt ?? null });
  }

  /**
   * One chunk of a snapshot transfer: the first call opens an iterator over the shard's state
   * (any replica that holds it can serve; the puller asks the leader), later calls continue it.
   */
  async #export(group: string, session: unknown): Promise<Uint8Array> {
    let s: ExportSession | undefined;
    let id: string;
    if (session === undefined) {
      const r = this.hostedReplica(group);
      id = randomBytes(9).toString('base64url');
      s = { group, stream: r.fsm.shard.exportState(), lastUsedMs: Date.now(), appliedAtStart: r.fsm.shard.appliedIndex };
      this.#exports.set(id, s);
    } else {
      id = String(session);
      s = this.#exports.get(id);
      if (s === undefined || s.group !== group) throw new FirkinError('not_found', `no snapshot transfer ${id} of ${group} (it expired or the node restarted)`);
    }
    s.lastUsedMs = Date.now();
    const next = await s.stream.next();
    if (next.done === true || !('docs' in next.value)) {
      this.#exports.delete(id);
      await s.stream.return(undefined);
      if (next.done === true || 'docs' in next.value) throw new FirkinError('error', `snapshot transfer ${id} ended without its applied index`);
      // `a0` on the tail too: a shard with no document has nothing else to say where it stood.
      return encodeCbor({ s: id, a0: s.appliedAtStart, applied: next.value.applied, requests: next.value.requests });
    }
    // Documents travel in the one checked command codec.
    return encodeCbor({ s: id, a0: s.appliedAtStart, c: encodeShardCommand({ kind: 'upsert', docs: next.value.docs }) });
  }

  /** Close transfers whose reader went away. */
  #expireExports(): void {
    const now = Date.now();
    for (const [id, s] of this.#exports) {
      if (now - s.lastUsedMs < EXPORT_IDLE_MS) continue;
      this.#exports.delete(id);
      void s.stream.return(undefined);
    }
  }

  /**
   * The state of `group` at or past `index`, pulled in chunks from a replica: the leader
   * first, then (on each retry) the next replica of the placement. A replica that waits on a
   * transfer cannot vote, so it must not depend on one source staying up.
   */
  async *#pull(placement: ShardPlacement, index: number): AsyncGenerator<ShardStateChunk> {
    const group = placement.group;
    const source = this.snapshotSource(placement);
    if (this.#o.exitInSnapshotLoad === true) {
      this.#o.log.warn({ group, source, index }, 'FIRKIN_UNSAFE_FIXTURE=exit-in-snapshot-load: exiting in the middle of a snapshot transfer');
      process.exit(86);
    }
    this.#o.log.info({ group, source, index }, `loading shard replica ${group} from ${source} (snapshot at ${index})`);
    let session: string | undefined;
    let docs = 0;
    {
      for (;;) {
        const reply = decodeCbor(await this.#o.member.callPeer(source, 'vshard.export', encodeCbor({ g: group, ...(session === undefined ? {} : { s: session }) }), EXPORT_CALL_MS)) as Record<string, unknown>;
        if (typeof reply.s !== 'string') throw new FirkinError('error', 'snapshot transfer: bad reply');
        session = reply.s;
        if (reply.c instanceof Uint8Array) {
          const command = decodeShardCommand(reply.c);
          if (command.kind !== 'upsert') throw new FirkinError('error', 'snapshot transfer: a chunk holds a delete');
          docs += command.docs.length;
          yield { docs: command.docs };
          continue;
        }
        const requests = reply.requests as unknown;
        if (typeof reply.applied !== 'number' || !Array.isArray(requests) || !requests.every(isRequestRecord)) throw new FirkinError('error', 'snapshot transfer: bad tail');
        this.#o.log.info({ group, source, docs, applied: reply.applied }, `loaded shard replica ${group}: ${docs} documents at applied index ${reply.applied}`);
        this.snapshotLoaded(group);
        yield { applied: reply.applied, requests: requests as RequestRecord[] };
        return;
      }
    }
  }

  override async close(): Promise<void> {
    this.#reshards.close();
    for (const s of this.#exports.values()) await s.stream.return(undefined);
    this.#exports.clear();
    await super.close();
  }
}

/**
 * Remove shard replica data this node no longer hosts: a removal (collection deleted, replica
 * moved away: `RocksLog.markDropping`) that a crash interrupted. `#drop` clears the Raft log last, so any leftover
 * still has its log, and the groups with a log are cheap to list.
 */
export async function sweepLeftovers(store: Store, hosted: ReadonlySet<string>, indexDir: string, log: Logger): Promise<string[]> {
  const removed: string[] = [];
  for (const group of await RocksLog.groups(store)) {
    const n = /^vs(\d+)$/.exec(group)?.[1];
    if (n === undefined || hosted.has(group)) continue;
    await dropShardData(store, CLUSTER_SHARD_BASE + Number(n), indexDir);
    await store.clearRange('raft', RocksLog.groupRange(group));
    log.warn({ group }, `removed leftover data of shard replica ${group}: this node no longer hosts it, and a crash had interrupted its removal`);
    removed.push(group);
  }
  return removed;
}

/** A shard of a clustered collection, reached through its leader. */
class RoutedShard implements ShardHandle {
  readonly id: number;

  constructor(
    readonly host: VectorShards,
    readonly placement: ShardPlacement,
    readonly collection: string,
    readonly epoch: number,
  ) {
    this.id = placement.number;
  }

  async #propose(command: ShardCommand): Promise<ApplyOutcome | undefined> {
    // One request id for every attempt: the router retries through other leaders, and the
    // shard applies an id once (a retry of a write that already committed changes nothing).
    const rid = randomBytes(12).toString('base64url');
    const reply = await this.host.leaderCall(this.placement, 'vshard.propose', { c: encodeShardCommand({ ...command, rid }) });
    const outcome = (reply.o ?? undefined) as ApplyOutcome | Extract<FenceOutcome, { kind: 'fenced' }> | undefined;
    if (outcome?.kind === 'fenced') {
      // Refused (no effect) by a shard a reshard is leaving: wait for the new map, and let the
      // engine route the write again.
      await this.host.awaitNewer(this.collection, this.epoch);
      throw new FirkinError('stale_epoch', `shard ${this.placement.group} of ${JSON.stringify(this.collection)} was fenced by a reshard; the write was not applied`);
    }
    return outcome;
  }

  async upsert(docs: readonly DocInput[]): Promise<void> {
    await this.#propose({ kind: 'upsert', docs });
  }

  async remove(id: string): Promise<boolean> {
    const outcome = await this.#propose({ kind: 'delete', ids: [id] });
    return outcome?.kind === 'delete' && outcome.deleted[0] === true;
  }

  /** A read; a fenced shard's `stale_epoch` comes back once this node has the new map. */
  async #read(payload: Record<string, unknown>): Promise<Record<string, unknown>> {
    try {
      return await this.host.leaderCall(this.placement, 'vshard.read', payload);
    } catch (err) {
      if (isFirkinError(err) && err.code === 'stale_epoch') await this.host.awaitNewer(this.collection, this.epoch);
      throw err;
    }
  }

  async get(id: string, options: ReadOptions = {}): Promise<StoredDoc | undefined> {
    const reply = await this.#read({ op: 'get', id, s: this.host.staleRead(options) });
    const d = reply.d as { id: string; text: string; metadata: Record<string, unknown>; vector: Uint8Array } | null;
    return d === null ? undefined : { id: d.id, text: d.text, metadata: d.metadata, vector: fromF32(d.vector) };
  }

  async search(query: Float32Array, k: number, ef: number, filter: Filter | undefined, options: SearchOptions = {}): Promise<VectorHit[]> {
    const reply = await this.#read({ op: 'search', v: f32(query), k, ef, f: filter ?? null, p: options.payload !== false, s: this.host.staleRead(options) });
    return reply.h as VectorHit[];
  }

  async searchBm25(query: string, k: number, options: Bm25Options = {}): Promise<ScoredId[]> {
    const reply = await this.#read({ op: 'bm25', q: query, k, st: options.collection ?? null, s: this.host.staleRead(options) });
    return reply.h as ScoredId[];
  }

  async bm25Stats(query: string, options: ReadOptions = {}): Promise<QueryStats> {
    const reply = await this.#read({ op: 'bm25stats', q: query, s: this.host.staleRead(options) });
    return reply.st as QueryStats;
  }

  async countDocs(options: ReadOptions = {}): Promise<number> {
    const reply = await this.#read({ op: 'count', s: this.host.staleRead(options) });
    return reply.n as number;
  }

  async scroll(from: string | undefined, limit: number, options: ScrollOptions = {}): Promise<ScrolledDoc[]> {
    const reply = await this.#read({ op: 'scroll', from: from ?? null, n: limit, f: options.filter ?? null, vec: options.vectors === true, s: this.host.staleRead(options) });
    const docs = reply.d as { id: string; text: string; metadata: Record<string, unknown>; vector: Uint8Array | null }[];
    return docs.map((d) => ({ id: d.id, text: d.text, metadata: d.metadata, ...(d.vector === null ? {} : { vector: fromF32(d.vector) }) }));
  }
}
