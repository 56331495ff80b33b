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
import { RaftGroup } from '../raft/group.js';
import { RocksLog } from '../raft/rocks-log.js';
import type { Message } from '../raft/types.js';
import type { Rand } from '../core/rand.js';
import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../storage/db.js';
import type { AnnEngine } from '../vector/ann/ann-index.js';
import type { ScoredId } from '../vector/bm25.js';
import type { CollectionConfig } from '../vector/collection-config.js';
import { type ApplyOutcome, type ShardCommand, decodeShardCommand, encodeShardCommand } from '../vector/commands.js';
import type { Filter } from '../vector/filter.js';
import { type DocInput, Shard, type StoredDoc, type VectorHit, dropShardData } from '../vector/shard.js';
import { ShardFsm, isRequestRecord } from '../vector/shard-fsm.js';
import type { RequestRecord, ShardStateChunk } from '../vector/shard.js';
import type { ClusterCatalogue, ClusteredCollection, ReadOptions, ShardHandle } from '../vector/shard-handle.js';
import type { ClusterMember, GroupHost } from './member.js';
import type { CollectionPlacement, MetaState, ShardPlacement } from './meta-state.js';
import { placeShards } from './placement.js';
import { planShardConf } from './shard-repair.js';
import { wasNotSent } from './transport.js';

/** Local storage ids of replicated shards start here, far above any standalone shard id. */
export const CLUSTER_SHARD_BASE = 2 ** 40;
/** A learner within this many entries of the leader's last index may vote. */
const CAUGHT_UP_LAG = 16;
/** An export (snapshot transfer) whose reader stopped asking for this long is closed. */
const EXPORT_IDLE_MS = 60_000;
/** Each call of a snapshot transfer waits at most this long for its chunk. */
const EXPORT_CALL_MS = 30_000;

/** One snapshot transfer being read by another node: an open iterator over the shard's state. */
interface ExportSession {
  readonly group: string;
  readonly stream: AsyncGenerator<ShardStateChunk>;
  lastUsedMs: number;
}


export interface VectorShardsOptions {
  member: ClusterMember;
  store: Store;
  ann: AnnEngine;
  indexDir: string;
  log: Logger;
  rand: Rand;
  registry?: Registry;
  /**
   * The chaos suite's deliberately broken build (FIRKIN_UNSAFE_FIXTURE=stale-reads): every
   * read is served like a stale one, by any replica without a ReadIndex round. Its checker
   * must catch it. Never set outside that test.
   */
  unsafeStaleReads?: boolean;
}

interface Replica {
  /** As the metadata says now (repair and leave change its replicas). */
  placement: ShardPlacement;
  readonly fsm: ShardFsm;
  readonly group: RaftGroup;
}

type ReadRequest =
  | { op: 'get'; id: string }
  | { op: 'search'; v: Uint8Array; k: number; ef: number; f: Filter | null }
  | { op: 'bm25'; q: string; k: number }
  | { op: 'count' };

const f32 = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
function fromF32(b: Uint8Array): Float32Array {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

export class VectorShards implements ClusterCatalogue, GroupHost {
  readonly prefix = 'vshard';
  readonly #o: VectorShardsOptions;
  readonly #replicas = new Map<string, Replica>();
  readonly #views = new Map<string, { placement: CollectionPlacement; view: ClusteredCollection }>();
  /** The last node that answered as leader, per group. */
  readonly #leaderHints = new Map<string, string>();
  #reconciling: Promise<void> = Promise.resolve();
  #closed = false;
  #confLoop: NodeJS.Timeout | undefined;
  /** Groups with a membership step or a removal check under way. */
  readonly #busy = new Set<string>();
  readonly #exports = new Map<string, ExportSession>();
  /** Snapshot transfers tried per group: each retry asks the next replica. */
  readonly #pullAttempts = new Map<string, number>();

  private constructor(o: VectorShardsOptions) {
    this.#o = o;
    if (o.registry !== undefined) {
      const replicas = this.#replicas;
      new Gauge({
        name: 'firkin_shard_replicas',
        help: 'Shard replicas hosted on this node, by Raft role and whether the group is quiesced (idle and silent)',
        labelNames: ['role', 'quiesced'] as const,
        registers: [o.registry],
        collect() {
          this.reset();
          for (const r of replicas.values()) this.inc({ role: r.group.core.role, quiesced: String(r.group.core.quiesced) });
        },
      });
    }
  }

  static async start(o: VectorShardsOptions): Promise<VectorShards> {
    const host = new VectorShards(o);
    o.member.attachGroups(host);
    o.member.fsm.listen((state, cmd) => {
      if (cmd === undefined || cmd.type.startsWith('collection.') || cmd.type.startsWith('shard.')) host.#reconcile(state);
    });
    host.#reconcile(o.member.state);
    await host.#reconciling;
    await host.#sweep();
    host.#confLoop = setInterval(() => host.#confRound(), Math.max(50, o.member.timings.nodeHeartbeatMs));
    return host;
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
      if (Date.now() > until || this.#closed) {
        log.warn({ commit }, 'leftover shard data not swept: the metadata did not catch up with its commit index in time');
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await this.#reconciling;
    const hosted = new Set(this.#replicas.keys());
    for (const c of Object.values(member.state.collections)) for (const sh of c.shards) if (sh.replicas.includes(this.#me)) hosted.add(sh.group);
    await sweepLeftovers(store, hosted, indexDir, log);
  }

  /** Whether a read goes to any replica (asked for, or the broken fixture) or to the leader. */
  staleRead(options: ReadOptions): boolean {
    return options.stale === true || this.#o.unsafeStaleReads === true;
  }

  get #me(): string {
    return this.#o.member.name;
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
      shards: placement.shards.map((s) => new RoutedShard(this, s)),
      epoch: placement.epoch,
    };
    this.#views.set(name, { placement, view });
    return view;
  }

  names(): string[] {
    return Object.keys(this.#o.member.state.collections);
  }

  async create(name: string, config: CollectionConfig): Promise<void> {
    const state = this.#o.member.state;
    const held = new Map<string, number>();
    for (const c of Object.values(state.collections)) for (const s of c.shards) for (const r of s.replicas) held.set(r, (held.get(r) ?? 0) + 1);
    const up = Object.values(state.nodes).filter((n) => n.status === 'up');
    const replicas = placeShards(config.num_shards, config.replication_factor, up.map((n) => ({ name: n.name, zone: n.zone, replicas: held.get(n.name) ?? 0 })));
    const ranges = initialRanges(config.num_shards);
    await this.#o.member.propose({
      type: 'collection.create',
      name,
      config: config as unknown as Record<string, unknown>,
      replicationFactor: config.replication_factor,
      shards: replicas.map((r, i) => ({ range: [ranges[i]!.start, ranges[i]!.end] as const, replicas: r })),
    });
    this.#o.log.info({ collection: name, shards: replicas }, `collection ${name} placed: ${replicas.map((r, i) => `shard ${i} on ${r.join('+')}`).join(', ')}`);
    // Usable when it answers: every shard has a leader that can confirm a read.
    const view = this.get(name);
    if (view !== undefined) await Promise.all(view.shards.map((s) => s.countDocs()));
  }

  async delete(name: string): Promise<void> {
    await this.#o.member.propose({ type: 'collection.delete', name });
  }

  // ---- hosting -------------------------------------------------------------------------------

  /** Open the replicas placed here, close the ones no longer placed (one pass at a time). */
  #reconcile(state: MetaState): void {
    this.#reconciling = this.#reconciling
      .then(() => this.#reconcileNow(state))
      .catch((err: unknown) => this.#o.log.error({ err }, 'opening or closing shard replicas failed; the next metadata change retries'));
  }

  async #reconcileNow(state: MetaState): Promise<void> {
    if (this.#closed) return;
    const wanted = new Map<string, { collection: CollectionPlacement; shard: ShardPlacement }>();
    for (const c of Object.values(state.collections)) for (const s of c.shards) if (s.replicas.includes(this.#me)) wanted.set(s.group, { collection: c, shard: s });
    const existing = new Set<string>();
    for (const c of Object.values(state.collections)) for (const s of c.shards) existing.add(s.group);
    for (const [group, replica] of this.#replicas) {
      if (wanted.has(group)) continue;
      // Moved off this node: it keeps serving until its group has removed it (#confRound).
      if (existing.has(group)) continue;
      await this.#drop(group, replica, 'its collection was deleted');
    }
    for (const c of Object.values(state.collections)) {
      for (const s of c.shards) {
        const r = this.#replicas.get(s.group);
        if (r !== undefined) r.placement = s;
      }
    }
    for (const [group, { collection, shard }] of wanted) {
      if (this.#replicas.has(group)) continue;
      this.#replicas.set(group, await this.#open(collection, shard));
      this.#o.log.info({ group, collection: collection.name, replicas: shard.replicas }, `hosting shard replica ${group} of ${collection.name}`);
    }
  }

  async #drop(group: string, replica: Replica, why: string): Promise<void> {
    this.#replicas.delete(group);
    replica.fsm.stop();
    await replica.group.close();
    await replica.fsm.shard.drop();
    await this.#o.store.clearRange('raft', RocksLog.groupRange(group));
    this.#o.log.info({ group }, `shard replica ${group} closed and its data removed (${why})`);
  }

  /**
   * Membership of the groups this node leads, toward the replicas the metadata wants (one
   * step per group at a time, `planShardConf`); and replicas moved off this node, dropped once
   * their group no longer counts them.
   */
  #confRound(): void {
    if (this.#closed) return;
    this.#expireExports();
    for (const [group, r] of this.#replicas) {
      if (this.#busy.has(group)) continue;
      const core = r.group.core;
      const desired = r.placement.replicas;
      // Moved off this node: a follower waits to be removed; a leader still drives the move
      // (and hands leadership over before it removes itself).
      if (!desired.includes(this.#me) && core.role !== 'leader') {
        this.#busy.add(group);
        void this.#checkRemoved(group, r).finally(() => this.#busy.delete(group));
        continue;
      }
      if (core.role !== 'leader') continue;
      const last = core.log.lastIndex();
      const caughtUp = new Set<string>();
      for (const l of core.confState().learners) {
        const p = core.progress.get(l);
        if (p !== undefined && p.match > 0 && last - p.match <= CAUGHT_UP_LAG) caughtUp.add(l);
      }
      const step = planShardConf({ conf: core.confState(), desired, caughtUp, leader: this.#me });
      if (step === undefined) continue;
      this.#busy.add(group);
      const run = async () => {
        this.#o.log.info({ group, step }, step.kind === 'transfer' ? `${group}: handing leadership to ${step.to} (${step.why})` : `${group}: ${step.change.type} ${step.change.node} (${step.why})`);
        if (step.kind === 'transfer') r.group.transferLeadership(step.to);
        else await r.group.proposeConfChange(step.change);
      };
      void run()
        .catch((err: unknown) => this.#o.log.warn({ group, err: (err as Error).message }, 'shard membership step failed; retrying'))
        .finally(() => this.#busy.delete(group));
    }
  }

  /** A replica the metadata moved away: drop it once its group's conf (as its leader says) no longer has this node. */
  async #checkRemoved(group: string, r: Replica): Promise<void> {
    const own = r.group.core.confState();
    let members: string[] = [...own.voters, ...own.learners];
    if (members.includes(this.#me)) {
      try {
        const reply = await this.leaderCall(r.placement, 'vshard.conf', {});
        members = [...(reply.voters as string[]), ...(reply.learners as string[])];
      } catch {
        return; // no leader reachable now: ask again next round
      }
    }
    if (!members.includes(this.#me) && this.#replicas.get(group) === r) await this.#drop(group, r, 'it moved to another node');
  }

  async #open(collection: CollectionPlacement, placement: ShardPlacement): Promise<Replica> {
    const { store, ann, indexDir, log, member } = this.#o;
    const config = collection.config as unknown as CollectionConfig;
    const storageId = CLUSTER_SHARD_BASE + placement.number;
    const deps = { store, ann, indexDir, log: log.child({ group: placement.group }) };
    const shard = await Shard.open(storageId, config, deps);
    const fsm = new ShardFsm(shard, {
      reopenEmpty: async (old) => {
        await old.close({ save: false, reason: 'dropped' });
        await dropShardData(store, storageId, indexDir);
        return Shard.open(storageId, config, deps);
      },
      source: (index) => this.#pull(placement.group, index),
      rand: this.#o.rand,
      onRetry: (err, attempt, delayMs) => log.warn({ group: placement.group, attempt, delayMs, err: (err as Error).message }, `loading shard replica ${placement.group} from a snapshot failed; retrying`),
    });
    // The replicas it was created on bootstrap the same initial membership (themselves as
    // voters); a replica placed later (repair, leave) starts empty and is added by the leader.
    const initial = placement.initial ?? placement.replicas;
    const raftLog = initial.includes(this.#me) ? await RocksLog.open(store, placement.group, { voters: [...initial], learners: [] }) : await RocksLog.open(store, placement.group);
    const t = member.timings;
    const group = new RaftGroup({
      id: this.#me,
      group: placement.group,
      log: raftLog,
      fsm,
      send: (ms) => member.sendRaft(ms),
      rand: this.#o.rand,
      ticker: member.ticker,
      electionTicks: t.electionTicks,
      heartbeatTicks: t.heartbeatTicks,
      quiesceAfterTicks: t.quiesceTicks,
      peerAlive: (node) => member.peerAlive(node),
      appliedIndex: () => fsm.shard.appliedIndex,
      proposalTimeoutMs: t.proposalTimeoutMs,
      snapshotEveryEntries: t.snapshotEntries,
      retainEntries: t.retainEntries,
    });
    await group.start();
    return { placement, fsm, group };
  }

  /**
   * Each shard of a collection as its leader sees it: desired replicas, the group's voters and
   * learners, and each member's lag in log entries (null: not known to the leader yet). A shard
   * with no reachable leader says so instead.
   */
  async shardReport(name: string): Promise<Record<string, unknown>> {
    const placement = this.#o.member.state.collections[name];
    if (placement === undefined) throw new FirkinError('not_found', `collection ${JSON.stringify(name)} not found`);
    const shards = await Promise.all(
      placement.shards.map(async (s, i) => {
        const base = { shard: i, group: s.group, replicas: s.replicas };
        try {
          const st = await this.leaderCall(s, 'vshard.status', {});
          const last = st.last as number;
          const lag = Object.fromEntries(Object.entries(st.matches as Record<string, number | null>).map(([n, m]) => [n, m === null ? null : last - m]));
          return { ...base, leader: st.leader, term: st.term, commit: st.commit, voters: st.voters, learners: st.learners, lag };
        } catch (err) {
          return { ...base, leader: null, error: isFirkinError(err) ? err.code : 'error', message: (err as Error).message };
        }
      }),
    );
    return { collection: name, replication_factor: placement.replicationFactor, epoch: placement.epoch, shards };
  }

  hosted(): number {
    return this.#replicas.size;
  }

  step(m: Message): void {
    // A group not opened yet (its collection.create is not applied here yet): Raft resends.
    this.#replicas.get(m.group)?.group.step(m);
  }

  /** Status of the replicas hosted here, for the admin view and tests. */
  replicaStatus(): { group: string; role: string; leader: string | null; term: number; applied: number; docs: number; quiesced: boolean }[] {
    return [...this.#replicas].map(([group, r]) => {
      const s = r.group.status();
      return { group, role: s.role, leader: s.leader, term: s.term, applied: r.fsm.shard.appliedIndex, docs: r.fsm.shard.count, quiesced: s.quiesced };
    });
  }

  /** Per-replica digest at its applied index: replicas of one shard compare these. */
  async digests(): Promise<{ group: string; applied: number; docs: number; sha256: string }[]> {
    return Promise.all([...this.#replicas].map(async ([group, r]) => ({ group, ...(await r.fsm.shard.digest()) })));
  }

  // ---- answering (on the leader) -------------------------------------------------------------

  #hosted(group: string): Replica {
    const r = this.#replicas.get(group);
    if (r === undefined) throw new FirkinError('not_leader', `${this.#me} holds no replica of ${group}`, { details: { leader: null } });
    return r;
  }

  #leading(group: string): Replica {
    const r = this.#hosted(group);
    if (r.group.core.role !== 'leader') throw new FirkinError('not_leader', `${this.#me} does not lead ${group}`, { details: { leader: r.group.core.leader } });
    return r;
  }

  async answer(_from: string, method: string, body: Buffer | Uint8Array): Promise<Uint8Array> {
    const req = decodeCbor(body) as { g?: unknown };
    if (typeof req.g !== 'string') throw new FirkinError('bad_request', 'shard call without a group');
    switch (method) {
      case 'vshard.propose': {
        const { c, dl } = req as { c?: unknown; dl?: unknown };
        if (!(c instanceof Uint8Array)) throw new FirkinError('bad_request', 'shard proposal without a command');
        const r = this.#leading(req.g);
        // A request held up on a broken link arrives after its caller gave up (and answered
        // 503): refuse it rather than commit a write the client was told failed. This
        // narrows, but cannot close, the window of a timed-out write that still commits
        // (it assumes the nodes' clocks agree to well within the deadline).
        if (typeof dl === 'number' && Date.now() > dl) throw new FirkinError('timeout', `the write reached ${this.#me} after its deadline`);
        const outcome = (await r.group.propose(c)) as ApplyOutcome | undefined;
        return encodeCbor({ o: outcome ?? null });
      }
      case 'vshard.export':
        return this.#export(req.g, (req as { s?: unknown }).s);
      case 'vshard.status': {
        const r = this.#leading(req.g);
        const core = r.group.core;
        const conf = core.confState();
        const matches: Record<string, number | null> = {};
        for (const n of [...conf.voters, ...conf.learners]) matches[n] = n === this.#me ? core.log.lastIndex() : (core.progress.get(n)?.match ?? null);
        return encodeCbor({ leader: this.#me, term: core.term, last: core.log.lastIndex(), commit: core.log.committed, voters: conf.voters, learners: conf.learners, matches });
      }
      case 'vshard.conf': {
        const conf = this.#leading(req.g).group.core.confState();
        return encodeCbor({ voters: conf.voters, learners: conf.learners });
      }
      case 'vshard.read': {
        // Stale: whatever this replica applied, with no leader and no quorum needed.
        const stale = (req as { s?: unknown }).s === true;
        const r = stale ? this.#hosted(req.g) : this.#leading(req.g);
        if (!stale) await r.group.readBarrier();
        const shard = r.fsm.shard;
        const q = req as unknown as ReadRequest;
        switch (q.op) {
          case 'get': {
            const doc = await shard.get(q.id);
            return encodeCbor({ d: doc === undefined ? null : { id: doc.id, text: doc.text, metadata: doc.metadata, vector: f32(doc.vector) } });
          }
          case 'search':
            return encodeCbor({ h: await shard.search(fromF32(q.v), q.k, q.ef, q.f ?? undefined) });
          case 'bm25':
            return encodeCbor({ h: await shard.searchBm25(q.q, q.k) });
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
   * One chunk of a snapshot transfer: the first call opens an iterator over the shard's state
   * (any replica that holds it can serve; the puller asks the leader), later calls continue it.
   */
  async #export(group: string, session: unknown): Promise<Uint8Array> {
    let s: ExportSession | undefined;
    let id: string;
    if (session === undefined) {
      const r = this.#hosted(group);
      id = randomBytes(9).toString('base64url');
      s = { group, stream: r.fsm.shard.exportState(), lastUsedMs: Date.now() };
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
      return encodeCbor({ s: id, applied: next.value.applied, requests: next.value.requests });
    }
    // Documents travel in the one checked command codec.
    return encodeCbor({ s: id, c: encodeShardCommand({ kind: 'upsert', docs: next.value.docs }) });
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
  async *#pull(group: string, index: number): AsyncGenerator<ShardStateChunk> {
    const replica = this.#replicas.get(group);
    const leader = replica?.group.core.leader ?? null;
    const others = (replica?.placement.replicas ?? []).filter((n) => n !== this.#me && n !== leader);
    const candidates = [...(leader === null || leader === this.#me ? [] : [leader]), ...others];
    const attempt = this.#pullAttempts.get(group) ?? 0;
    this.#pullAttempts.set(group, attempt + 1);
    const source = candidates[attempt % Math.max(1, candidates.length)];
    if (source === undefined) throw new FirkinError('unavailable', `no replica of ${group} to stream a snapshot from`);
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
        this.#pullAttempts.delete(group);
        yield { applied: reply.applied, requests: requests as RequestRecord[] };
        return;
      }
    }
  }

  // ---- routing (from any node) ---------------------------------------------------------------

  /**
   * Send a call to the shard's leader (or, for a stale read, to any replica, this node's
   * first), following what this node's own replica knows, then the last leader that
   * answered, then each replica in turn, until the deadline. Each attempt waits at most a
   * third of the deadline, so a leader cut off from its majority (still believing it leads)
   * does not use up the whole budget. A write retried after an attempt timed out is safe:
   * shard commands are idempotent (an upsert writes the same documents again; a delete of a
   * gone document changes nothing, though it then reports `not found`).
   */
  async leaderCall(shard: ShardPlacement, method: string, payload: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { member } = this.#o;
    const timeoutMs = member.timings.proposalTimeoutMs;
    const attemptMs = Math.max(200, Math.floor(timeoutMs / 3));
    const deadline = Date.now() + timeoutMs;
    const body = encodeCbor({ g: shard.group, dl: deadline, ...payload });
    const replicas = shard.replicas;
    const stale = payload.s === true;
    const known = () => this.#replicas.get(shard.group)?.group.core.leader ?? undefined;
    let target = stale && this.#replicas.has(shard.group) ? this.#me : (known() ?? this.#leaderHints.get(shard.group) ?? replicas[0]!);
    let waitMs = 10;
    let last = 'no replica answered';
    let maybeCommitted = false;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.#closed) {
        const tail = maybeCommitted && method === 'vshard.propose' ? '; an attempt timed out after it was sent, so the write may still commit' : '';
        throw new FirkinError('no_quorum', `shard ${shard.group} (replicas ${replicas.join(', ')}) has no ${stale ? 'replica' : 'leader'} reachable from ${this.#me} within ${timeoutMs} ms (${last})${tail}`);
      }
      try {
        const reply = target === this.#me ? await this.answer(this.#me, method, body) : await member.callPeer(target, method, body, Math.min(remaining, attemptMs));
        if (!stale) this.#leaderHints.set(shard.group, target);
        return decodeCbor(reply) as Record<string, unknown>;
      } catch (err) {
        last = `${target}: ${(err as Error).message}`;
        const code = isFirkinError(err) ? err.code : undefined;
        if (!(wasNotSent(err) || code === 'not_leader' || code === 'unavailable' || code === 'timeout' || code === 'no_quorum')) throw err;
        if (code === 'timeout' && !wasNotSent(err)) maybeCommitted = true;
        this.#leaderHints.delete(shard.group);
        const hinted = !stale && isFirkinError(err) && typeof err.details?.leader === 'string' && replicas.includes(err.details.leader) && err.details.leader !== target ? err.details.leader : undefined;
        const fresh = stale ? undefined : known();
        target = hinted ?? (fresh !== undefined && fresh !== target ? fresh : replicas[(replicas.indexOf(target) + 1) % replicas.length]!);
        await new Promise((r) => setTimeout(r, Math.min(waitMs, Math.max(1, deadline - Date.now()))));
        waitMs = Math.min(waitMs * 2, 200);
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#confLoop);
    await this.#reconciling;
    for (const r of this.#replicas.values()) r.fsm.stop();
    for (const s of this.#exports.values()) await s.stream.return(undefined);
    this.#exports.clear();
    for (const r of this.#replicas.values()) {
      await r.group.close();
      await r.fsm.shard.close({ save: true });
    }
    this.#replicas.clear();
  }
}

/**
 * Remove shard replica data this node no longer hosts: a removal (collection deleted, replica
 * moved away) that a crash interrupted. `#drop` clears the Raft log last, so any leftover
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
  ) {
    this.id = placement.number;
  }

  async #propose(command: ShardCommand): Promise<ApplyOutcome | undefined> {
    // One request id for every attempt: the router retries through other leaders, and the
    // shard applies an id once (a retry of a write that already committed changes nothing).
    const rid = randomBytes(12).toString('base64url');
    const reply = await this.host.leaderCall(this.placement, 'vshard.propose', { c: encodeShardCommand({ ...command, rid }) });
    return (reply.o ?? undefined) as ApplyOutcome | undefined;
  }

  async upsert(docs: readonly DocInput[]): Promise<void> {
    await this.#propose({ kind: 'upsert', docs });
  }

  async remove(id: string): Promise<boolean> {
    const outcome = await this.#propose({ kind: 'delete', ids: [id] });
    return outcome?.kind === 'delete' && outcome.deleted[0] === true;
  }

  async get(id: string, options: ReadOptions = {}): Promise<StoredDoc | undefined> {
    const reply = await this.host.leaderCall(this.placement, 'vshard.read', { op: 'get', id, s: this.host.staleRead(options) });
    const d = reply.d as { id: string; text: string; metadata: Record<string, unknown>; vector: Uint8Array } | null;
    return d === null ? undefined : { id: d.id, text: d.text, metadata: d.metadata, vector: fromF32(d.vector) };
  }

  async search(query: Float32Array, k: number, ef: number, filter: Filter | undefined, options: ReadOptions = {}): Promise<VectorHit[]> {
    const reply = await this.host.leaderCall(this.placement, 'vshard.read', { op: 'search', v: f32(query), k, ef, f: filter ?? null, s: this.host.staleRead(options) });
    return reply.h as VectorHit[];
  }

  async searchBm25(query: string, k: number, options: ReadOptions = {}): Promise<ScoredId[]> {
    const reply = await this.host.leaderCall(this.placement, 'vshard.read', { op: 'bm25', q: query, k, s: this.host.staleRead(options) });
    return reply.h as ScoredId[];
  }

  async countDocs(options: ReadOptions = {}): Promise<number> {
    const reply = await this.host.leaderCall(this.placement, 'vshard.read', { op: 'count', s: this.host.staleRead(options) });
    return reply.n as number;
  }
}
