// The shard-group framework both replicated data kinds share (vector collections, VDBs): a
// node hosts the replicas the metadata places on it as Raft groups, walks the membership of
// the groups it leads toward their placement, and routes calls to any shard's leader from
// any node. A kind supplies what differs: which placements it reads from the metadata, the
// state machine behind each replica, and the calls it answers.
//
// - Hosting: `#reconcile` opens the replicas placed here and drops the ones whose owner
//   (collection or VDB) was deleted. A replica moved to another node keeps serving until its
//   group has removed it (`#checkRemoved`), then it is dropped; one that hears from no leader
//   for a while asks its group whether it still counts (`#checkOutOfGroup`). A replica that
//   fails to open or start is tried again on a backoff (1 s to 30 s) and named by /health
//   meanwhile; the others are hosted regardless. Opening reads local data only;
//   starting the group (restoring its stored snapshot, which may stream the state from another
//   replica after a crash mid-transfer) runs on its own, so one replica whose sources are all
//   down holds up neither the node's start nor the hosting of any other replica (`/health`
//   names it meanwhile).
// - Membership: `#confRound` takes, for each led group, the next single step of
//   `planShardConf` (add a learner, promote it once caught up, remove the replaced voter,
//   hand leadership over first if the leader itself is replaced).
// - Routing: `leaderCall` sends a call to the shard's leader (or, for a stale read, to any
//   replica, this node's first), following hints, until a deadline, then 503 `no_quorum`.
import { type Backoff, nominalDelayMs } from '../core/backoff.js';
import { REPEATED_FAILURE_LOG_MS, RepeatedFailures } from '../core/repeated-failures.js';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { FirkinError, isFirkinError } from '../core/errors.js';
import type { HealthReport } from '../core/health.js';
import type { Rand } from '../core/rand.js';
import { RaftGroup, type StateMachine } from '../raft/group.js';
import { RocksLog } from '../raft/rocks-log.js';
import type { Message } from '../raft/types.js';
import type { Store } from '../storage/db.js';
import type { ClusterMember, GroupHost } from './member.js';
import { type MetaState, type ShardPlacement, bootstrapConf, deletedGroups, isDownOrGone } from './meta-state.js';
import { type LedGroup, planLeaderTransfer } from './leader-balance.js';
import { type GroupView, removalRisks, stillCounted } from './removal-risk.js';
import { planShardConf } from './shard-repair.js';
import { wasNotSent } from './not-sent.js';
import { SilentReplicas, reportAfterMs } from './silent-replicas.js';
import type { LinkState } from './transport.js';

/** A replica status's diagnostics (`ShardHost.replicaDiagnostics`). */
export interface ReplicaDiagnostics {
  /** Why the group stopped (a failed write or apply); null while it runs. */
  stopped: string | null;
  /** On a leader: each other member's progress and this node's link to it. */
  followers?: { node: string; match: number; state: string; link: LinkState; queued: number }[];
}

/** How long a stop waits for the groups it leads to take their new leaders. */
const HAND_OVER_WAIT_MS = 1_000;

/** `map[key]` holds since when `holds` has been true at each look; deleted when it is not. */
function sinceWhile(map: Map<string, number>, key: string, holds: boolean, nowMs: number): void {
  if (!holds) map.delete(key);
  else if (!map.has(key)) map.set(key, nowMs);
}

/** A learner within this many entries of the leader's last index may vote. */
const CAUGHT_UP_LAG = 16;
/** Rounds of the proposal timeout a create waits for every new shard to elect a leader. */
const CREATE_READY_ROUNDS = 3;

/**
 * After a committed create: `ask` (a read every new shard's leader confirms) until it answers,
 * for up to CREATE_READY_ROUNDS rounds of the proposal timeout, since a slow election (a loaded
 * machine) must not turn a committed create into an error a client would retry into a 409.
 * Returns the last `no_quorum` when the rounds run out; any other error, or any error once
 * `stopped()`, is thrown.
 */
export async function awaitNewShardLeaders(ask: () => Promise<unknown>, stopped: () => boolean = () => false): Promise<FirkinError | undefined> {
  for (let round = 1; ; round++) {
    try {
      await ask();
      return undefined;
    } catch (err) {
      if (!isFirkinError(err) || err.code !== 'no_quorum' || stopped()) throw err;
      if (round === CREATE_READY_ROUNDS) return err;
    }
  }
}

/** One replica hosted here: its placement as the metadata says now, and its Raft group. */
export interface HostedReplica {
  placement: ShardPlacement;
  readonly group: RaftGroup;
}

/** A replica opened here whose group is still starting (restoring its stored snapshot). */
interface StartingReplica<R> {
  readonly replica: R;
  readonly sinceMs: number;
  /** Settles once the start ended and the replica was hosted, closed or dropped. */
  done: Promise<void>;
  /** Its owner was deleted meanwhile: drop it once the start ends. */
  dropped: boolean;
}

/** How long a node's start waits for its replicas' groups to start before it serves anyway. */
const STARTUP_WAIT_MS = 5_000;
/** A replica that failed to open or start is tried again: 1 s doubling to 30 s. */
const REOPEN_BACKOFF: Backoff = { baseMs: 1_000, capMs: 30_000 };

/** A placement this node should host, with whatever the kind needs to open it. */
export interface WantedReplica<O> {
  readonly owner: O;
  readonly shard: ShardPlacement;
}

export interface ShardHostOptions {
  member: ClusterMember;
  store: Store;
  log: Logger;
  rand: Rand;
  registry?: Registry;
}

/** Every host of one registry reports into one gauge (a metric name registers once). */
const gauges = new WeakMap<Registry, Set<ShardHost<HostedReplica, unknown>>>();

function registerGauge(registry: Registry, host: ShardHost<HostedReplica, unknown>): void {
  let hosts = gauges.get(registry);
  if (hosts === undefined) {
    const all = new Set<ShardHost<HostedReplica, unknown>>();
    hosts = all;
    gauges.set(registry, all);
    new Gauge({
      name: 'firkin_shard_replicas',
      help: 'Shard replicas hosted on this node, by kind, Raft role and whether the group is quiesced (idle and silent)',
      labelNames: ['kind', 'role', 'quiesced'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const h of all) for (const r of h.hostedReplicas()) this.inc({ kind: h.prefix, role: r.group.core.role, quiesced: String(r.group.core.quiesced) });
      },
    });
  }
  hosts.add(host);
}

/** Leader balancing's transfers, one counter per registry for every kind. */
const transferCounters = new WeakMap<Registry, Counter<'kind'>>();

function transferCounter(registry: Registry): Counter<'kind'> {
  let c = transferCounters.get(registry);
  if (c === undefined) {
    c = new Counter({ name: 'firkin_shard_leader_transfers_total', help: 'Shard leaderships this node handed to a voter leading fewer groups (leader balancing), by kind', labelNames: ['kind'] as const, registers: [registry] });
    transferCounters.set(registry, c);
  }
  return c;
}

/** What one call to a shard's replicas found: `leaderCall`'s reason to stop before its deadline. */
export interface ReplicaAttempts {
  /** The shard's placed replicas. */
  readonly replicas: readonly string[];
  /** Tried and not reached: the call could not be sent (no link). */
  readonly unreached: ReadonlySet<string>;
  /** Tried and reached, and refused naming no leader (`not_leader` without a hint, `unavailable`). */
  readonly leaderless: ReadonlySet<string>;
  /** A read any replica may answer (`consistency: stale`). */
  readonly stale: boolean;
  /** Whether the cluster counts the replica's node down (or gone). */
  readonly isDown: (replica: string) => boolean;
}

/**
 * Why no replica can answer before a node comes back, in words after "shard <group> ", or
 * undefined while waiting may still help. Every replica must have been tried: those not
 * reached must be on nodes the cluster counts down (one back before the cluster saw it is
 * reached), and with too few of the others to elect a leader (fewer than a majority of the
 * placement), each must have answered knowing none. A stale read needs just one replica.
 */
export function cannotAnswer(a: ReplicaAttempts): string | undefined {
  const down = a.replicas.filter((r) => a.unreached.has(r) && a.isDown(r));
  if (a.replicas.length > 0 && down.length === a.replicas.length) return `has no live replica: the cluster counts every node it is on down (${down.join(', ')}); it answers again once one of them is back`;
  if (a.stale || down.length === 0) return undefined;
  const live = a.replicas.filter((r) => !down.includes(r));
  if (!live.every((r) => a.leaderless.has(r)) || 2 * live.length > a.replicas.length) return undefined;
  return `has no leader and cannot elect one: the cluster counts ${down.join(', ')} down, and ${live.join(', ')} (${live.length} of ${a.replicas.length} replicas, no majority) ${live.length === 1 ? 'knows' : 'know'} no leader; it elects one once a majority is back (reads meanwhile: consistency stale)`;
}

export abstract class ShardHost<R extends HostedReplica, O> implements GroupHost {
  abstract readonly prefix: string;
  protected readonly o: ShardHostOptions;
  protected readonly replicas = new Map<string, R>();
  /** The last node that answered as leader, per group. */
  readonly #leaderHints = new Map<string, string>();
  /** Snapshot transfers tried per group, to take the next source on a retry. */
  readonly #pullAttempts = new Map<string, number>();
  /** Replicas opened whose group is still starting; not in `replicas` (not routed to) yet. */
  readonly #starting = new Map<string, StartingReplica<R>>();
  readonly #stepFailures = new RepeatedFailures(REPEATED_FAILURE_LOG_MS);
  /** Groups the metadata deleted that this node learned of by asking (its own copy is stale): never hosted again. */
  readonly #deleted = new Set<string>();
  /** Groups with a whole replica on this node's disk when it started (`RocksLog.intactGroups`), until dropped. */
  #storedAtStart = new Set<string>();
  /** Snapshot transfers failing now (a success clears them), per group: for /health. */
  readonly #loadFailures = new Map<string, { attempts: number; lastError: string }>();
  /** Replicas placed here that failed to open or start (hosting one clears it), per group. */
  readonly #openFailures = new Map<string, { attempts: number; lastError: string; sinceMs: number }>();
  /** Hosted replicas that knew no leader at a membership round, since when (for /health). */
  readonly #leaderless = new Map<string, number>();
  /**
   * Followers that heard from no leader at a membership round, since when: no leader known, or
   * one named but silent for two election timeouts while the group is not quiesced (a replica
   * catching up never campaigns, so it keeps naming the leader it last heard).
   */
  readonly #unheard = new Map<string, number>();
  /** Replicas of groups this node leads that answer nothing while their node is up (for /health). */
  readonly #silent = new SilentReplicas();
  /** When an unheard replica last asked its group whether it is still a member (`#checkOutOfGroup`). */
  readonly #askedMembership = new Map<string, number>();
  /** Hosting passes failed in a row (a step other than one replica's open or start). */
  #failedPasses = 0;
  #reopenTimer: NodeJS.Timeout | undefined;
  #reconciling: Promise<void> = Promise.resolve();
  #closed = false;
  #confLoop: NodeJS.Timeout | undefined;
  /** Groups with a membership step or a removal check under way. */
  readonly #busy = new Set<string>();
  /** When leader balancing last handed a group over (the next waits for fresh counts). */
  #lastTransferMs = 0;

  protected constructor(o: ShardHostOptions) {
    this.o = o;
    if (o.registry !== undefined) registerGauge(o.registry, this as unknown as ShardHost<HostedReplica, unknown>);
  }

  /** The placements of this kind in the metadata: every shard group, with its owner. */
  protected abstract placements(state: MetaState): WantedReplica<O>[];
  /** Whether a metadata command may change this kind's placements. */
  protected abstract concerns(type: string): boolean;
  /** Open the replica of `shard` placed on this node (its state machine and Raft group). */
  protected abstract open(owner: O, shard: ShardPlacement): Promise<R>;
  /** Close a replica and remove its data (its Raft log last, so a crash leaves it findable). */
  protected abstract dropData(group: string, replica: R): Promise<void>;
  /** Stop a replica's background work before its group closes. */
  protected abstract stopReplica(replica: R): void;
  /** Close a replica at shutdown, keeping its data. */
  protected abstract closeReplica(replica: R): Promise<void>;
  /** The kind's own calls (`<prefix>.<method>`, other than `status` and `conf`). */
  protected abstract answerOwn(from: string, method: string, req: Record<string, unknown> & { g: string }): Promise<Uint8Array>;
  /** Periodic housekeeping of the kind (the membership loop's tick). */
  protected housekeeping(): void {}

  /** Attach to the member and open what is placed here; call once from the subclass's start. */
  protected async begin(): Promise<void> {
    const { member } = this.o;
    this.#storedAtStart = new Set(await RocksLog.intactGroups(this.o.store));
    member.attachGroups(this);
    member.fsm.listen((state, cmd) => {
      if (cmd === undefined || this.concerns(cmd.type)) this.#reconcile(state);
    });
    this.#reconcile(member.state);
    await this.#reconciling;
    await this.#awaitStarting(STARTUP_WAIT_MS);
    this.#confLoop = setInterval(() => this.#confRound(), Math.max(50, member.timings.nodeHeartbeatMs));
  }

  /** Resolves once the hosting passes queued so far ran. */
  protected settled(): Promise<void> {
    return this.#reconciling;
  }

  /** Waits (bounded) for the groups starting now; the ones still loading are logged. */
  async #awaitStarting(maxMs: number): Promise<void> {
    if (this.#starting.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, maxMs)));
    await Promise.race([Promise.all([...this.#starting.values()].map((s) => s.done)), timeout]);
    clearTimeout(timer);
    if (this.#starting.size > 0) {
      this.o.log.warn({ groups: [...this.#starting.keys()] }, `serving while ${this.#starting.size} shard replica(s) still load their snapshot: ${[...this.#starting.keys()].join(', ')}`);
    }
  }

  /** Groups with a whole replica stored here at start and not dropped since (`RocksLog.intactGroups`). */
  protected storedGroups(): ReadonlySet<string> {
    return this.#storedAtStart;
  }

  /** The groups whose data this node holds: hosted, or opened and still starting. */
  protected heldGroups(): Set<string> {
    return new Set([...this.replicas.keys(), ...this.#starting.keys()]);
  }

  /** For /health: replicas still loading a snapshot, and groups stopped by a storage failure. */
  health(): HealthReport {
    const problems: string[] = [];
    let failing = false;
    const now = Date.now();
    const tried = (group: string) => {
      const f = this.#loadFailures.get(group);
      return f === undefined ? '' : `, ${f.attempts} failed attempt(s), last: ${f.lastError}`;
    };
    for (const [group, s] of this.#starting) {
      problems.push(`shard replica ${group} is loading its snapshot from another replica (for ${Math.round((now - s.sinceMs) / 1000)} s${tried(group)}); it serves nothing until then`);
    }
    for (const [group, f] of this.#openFailures) {
      if (this.replicas.has(group) || this.#starting.has(group)) continue;
      problems.push(`shard replica ${group} could not be opened here (${f.attempts} attempt(s) in ${Math.round((now - f.sinceMs) / 1000)} s, last: ${f.lastError}); retrying`);
    }
    for (const [group, r] of this.replicas) {
      if (r.group.failure !== undefined) {
        failing = true;
        problems.push(`shard replica ${group} stopped: ${r.group.failure.message}`);
      } else if (this.#loadFailures.has(group)) {
        problems.push(`shard replica ${group} is behind and cannot load a snapshot from another replica yet${tried(group)}`);
      } else if (r.group.core.catchingUp) {
        problems.push(`shard replica ${group} opened empty and is catching up from its leader; it neither votes nor campaigns until then`);
      }
      const leaderlessMs = now - (this.#leaderless.get(group) ?? now);
      if (r.group.core.leader === null && leaderlessMs >= this.#leaderlessReportMs()) {
        const voters = r.group.core.confState().voters;
        const live = voters.filter((v) => v === this.me || this.o.member.peerAlive(v));
        problems.push(`shard replica ${group} has had no leader for ${Math.round(leaderlessMs / 1000)} s (voters ${voters.join(', ') || 'none known'}; live ${live.join(', ') || 'none'}): a group whose voters lost a majority of their disks for good waits for ever; see firkin recover (docs/raft.md, Forced recovery)`);
      }
    }
    for (const { group, peer, ms } of this.#silent.silentFor(this.#leaderlessReportMs(), now)) {
      problems.push(`shard replica ${group} on ${peer} has not answered its leader (this node) for ${Math.round(ms / 1000)} s while ${peer} is up: the group has one replica fewer; ${peer}'s /health says why (a failed store stops a replica)`);
    }
    return { status: failing ? 'failing' : problems.length > 0 ? 'degraded' : 'ok', ...(problems.length > 0 ? { problems } : {}) };
  }

  /** A group without a leader this long is no election under way any more: /health says so. */
  #leaderlessReportMs(): number {
    return reportAfterMs(this.o.member.timings);
  }

  /** A replica's snapshot transfer failed and will be retried: logged, and kept for /health. */
  protected snapshotLoadFailed(group: string, err: unknown, attempt: number, delayMs: number): void {
    this.#loadFailures.set(group, { attempts: attempt, lastError: (err as Error).message });
    this.o.log.warn({ group, attempt, delayMs, err: (err as Error).message }, `loading shard replica ${group} from a snapshot failed; retrying`);
  }

  protected get me(): string {
    return this.o.member.name;
  }

  /**
   * What a replica's status adds for an operator chasing a replica that does not catch up:
   * why its group stopped, if it did; and, on a leader, each other member's progress (`match`,
   * `state`) and this node's link to it (`none`: not dialled, so nothing reaches it).
   */
  protected replicaDiagnostics(r: R): ReplicaDiagnostics {
    const core = r.group.core;
    const stopped = r.group.failure?.message ?? null;
    if (core.role !== 'leader') return { stopped };
    const followers = [...core.progress]
      .filter(([node]) => node !== this.me)
      .map(([node, pr]) => {
        const link = this.o.member.linkState(node);
        return { node, match: pr.match, state: pr.state, link: link.state, queued: link.queued };
      });
    return { stopped, followers };
  }

  protected get closed(): boolean {
    return this.#closed;
  }

  hostedReplicas(): Iterable<R> {
    return this.replicas.values();
  }

  hosted(): number {
    return this.replicas.size;
  }

  hostedGroups(): string[] {
    return [...this.replicas.keys(), ...this.#starting.keys()];
  }

  dropDeleted(groups: ReadonlySet<string>, why: string): Promise<void> {
    return this.#queue(async () => {
      for (const g of groups) this.#deleted.add(g);
      for (const [group, r] of [...this.replicas]) if (groups.has(group)) await this.#drop(group, r, why);
      for (const [group, s] of this.#starting) {
        if (!groups.has(group) || s.dropped) continue;
        s.dropped = true;
        this.stopReplica(s.replica);
      }
    });
  }

  ledGroups(): number {
    let n = 0;
    for (const r of this.replicas.values()) if (r.group.core.role === 'leader') n++;
    return n;
  }

  /** The groups of this kind the metadata places on this node now. */
  protected placedHere(state: MetaState): Set<string> {
    const out = new Set<string>();
    for (const w of this.placements(state)) if (w.shard.replicas.includes(this.me)) out.add(w.shard.group);
    return out;
  }

  step(m: Message): void {
    // A group not opened yet (its placement is not applied here yet): Raft resends.
    this.replicas.get(m.group)?.group.step(m);
  }

  // ---- hosting -------------------------------------------------------------------------------

  #reconcile(state: MetaState): void {
    void this.#queue(() => this.#reconcileNow(state));
  }

  async #reconcileNow(state: MetaState): Promise<void> {
    if (this.#closed) return;
    const all = this.placements(state);
    const wanted = new Map<string, WantedReplica<O>>();
    for (const w of all) {
      const group = w.shard.group;
      // A group known deleted stays dropped, though this node's stale metadata still places it.
      if (this.#deleted.has(group)) continue;
      // A replica moved off this node while it was down is opened again from its data: it may
      // still be a voter, and serves until its group removed it (#confRound), as one moved away
      // while running does. Left closed, two such voters of three could stop their group for good.
      if (w.shard.replicas.includes(this.me) || this.#storedAtStart.has(group)) wanted.set(group, w);
    }
    const existing = new Map(all.map((w) => [w.shard.group, w.shard]));
    for (const [group, replica] of this.replicas) {
      if (wanted.has(group)) continue;
      // Moved off this node: it keeps serving until its group has removed it (#confRound).
      if (existing.has(group)) continue;
      await this.#drop(group, replica, 'its owner was deleted');
    }
    for (const [group, s] of this.#starting) {
      if (existing.has(group) || s.dropped) continue;
      // Its transfer gives up at its next attempt; the start's end drops the data.
      s.dropped = true;
      this.stopReplica(s.replica);
    }
    for (const r of [...this.replicas.values(), ...[...this.#starting.values()].map((s) => s.replica)]) {
      r.placement = existing.get(r.placement.group) ?? r.placement;
    }
    for (const group of this.#openFailures.keys()) if (!wanted.has(group)) this.#openFailures.delete(group);
    for (const [group, w] of wanted) {
      if (this.replicas.has(group) || this.#starting.has(group)) continue;
      if (this.#closed) return;
      let replica: R;
      try {
        replica = await this.open(w.owner, w.shard);
      } catch (err) {
        // One replica that cannot open holds up none of the others.
        this.#openFailed(group, 'open', err as Error);
        continue;
      }
      if (this.#closed) {
        await replica.group.close();
        await this.closeReplica(replica);
        return;
      }
      this.#start(group, replica);
    }
  }

  /** Start an opened replica's group on its own; it is hosted (routed to) once started. */
  #start(group: string, replica: R): void {
    const s: StartingReplica<R> = { replica, sinceMs: Date.now(), done: Promise.resolve(), dropped: false };
    this.#starting.set(group, s);
    s.done = replica.group.start().then(
      () => this.#queue(() => this.#started(group, s, undefined)),
      (err: unknown) => this.#queue(() => this.#started(group, s, err as Error)),
    );
  }

  /** Runs `step` in the hosting queue (after the passes queued before it); never rejects. */
  #queue(step: () => Promise<void>): Promise<void> {
    this.#reconciling = this.#reconciling.then(step).then(
      () => void (this.#failedPasses = 0),
      (err: unknown) => {
        this.#failedPasses++;
        this.o.log.error({ err, attempt: this.#failedPasses }, 'opening or closing shard replicas failed; retrying');
        this.#scheduleReopen();
      },
    );
    return this.#reconciling;
  }

  async #started(group: string, s: StartingReplica<R>, err: Error | undefined): Promise<void> {
    this.#starting.delete(group);
    if (err !== undefined) this.#loadFailures.delete(group);
    const r = s.replica;
    if (err === undefined && !this.#closed && !s.dropped) {
      this.replicas.set(group, r);
      this.#openFailures.delete(group);
      this.o.log.info({ group, replicas: r.placement.replicas, startMs: Date.now() - s.sinceMs }, `hosting shard replica ${group}`);
      return;
    }
    await r.group.close();
    if (s.dropped && !this.#closed) {
      this.#storedAtStart.delete(group);
      await RocksLog.markDropping(this.o.store, group);
      await this.dropData(group, r);
      await this.o.store.clearRange('raft', RocksLog.groupRange(group));
      this.o.log.info({ group }, `shard replica ${group} closed while it started and its data removed (its owner was deleted)`);
      return;
    }
    await this.closeReplica(r);
    if (err !== undefined && !this.#closed) this.#openFailed(group, 'start', err);
  }

  /** A replica placed here failed to open or start: kept for /health, and tried again later. */
  #openFailed(group: string, what: 'open' | 'start', err: Error): void {
    const before = this.#openFailures.get(group);
    const attempts = (before?.attempts ?? 0) + 1;
    this.#openFailures.set(group, { attempts, lastError: err.message, sinceMs: before?.sinceMs ?? Date.now() });
    const delayMs = this.#scheduleReopen();
    this.o.log.error({ group, attempt: attempts, delayMs, err: err.message }, `shard replica ${group} did not ${what}; retrying in ${delayMs} ms`);
  }

  /**
   * One timer for every failure: the next hosting pass (after the delay of the failure with the
   * fewest attempts) opens the replicas still missing. Returns that delay.
   */
  #scheduleReopen(): number | undefined {
    const failed = [...[...this.#openFailures.values()].map((f) => f.attempts), ...(this.#failedPasses > 0 ? [this.#failedPasses] : [])];
    if (this.#closed || failed.length === 0) return undefined;
    const delayMs = nominalDelayMs(Math.min(...failed), REOPEN_BACKOFF);
    clearTimeout(this.#reopenTimer);
    this.#reopenTimer = setTimeout(() => {
      this.#reopenTimer = undefined;
      this.#reconcile(this.o.member.state);
    }, delayMs);
    this.#reopenTimer.unref();
    return delayMs;
  }

  async #drop(group: string, replica: R, why: string): Promise<void> {
    this.replicas.delete(group);
    this.#storedAtStart.delete(group);
    this.#loadFailures.delete(group);
    this.stopReplica(replica);
    await replica.group.close();
    await RocksLog.markDropping(this.o.store, group);
    await this.dropData(group, replica);
    await this.o.store.clearRange('raft', RocksLog.groupRange(group));
    this.o.log.info({ group }, `shard replica ${group} closed and its data removed (${why})`);
  }

  /** A Raft group for a replica of `placement` with `fsm` as its state machine (not started: the host starts it). */
  protected async raftGroup(placement: ShardPlacement, fsm: StateMachine, appliedIndex: () => number, compactFloor?: () => number | undefined): Promise<RaftGroup> {
    const { store, member } = this.o;
    // The replicas it was created on bootstrap the same initial membership (themselves as
    // voters); a replica placed later (repair, leave, a node joined again) starts empty and is
    // added by the leader.
    const raftLog = await RocksLog.open(store, placement.group, bootstrapConf(member.state, placement, this.me, member.incarnation));
    const t = member.timings;
    const group = new RaftGroup({
      id: this.me,
      group: placement.group,
      log: raftLog,
      fsm,
      send: (ms) => member.sendRaft(ms),
      rand: this.o.rand,
      ticker: member.ticker,
      electionTicks: t.electionTicks,
      heartbeatTicks: t.heartbeatTicks,
      quiesceAfterTicks: t.quiesceTicks,
      peerAlive: (node) => member.peerAlive(node),
      linkLost: (node) => member.peerLinkLost(node),
      vouching: () => member.vouching(),
      appliedIndex,
      proposalTimeoutMs: t.proposalTimeoutMs,
      snapshotEveryEntries: t.snapshotEntries,
      retainEntries: t.retainEntries,
      ...(compactFloor === undefined ? {} : { compactFloor }),
      onFailure: (err) => this.o.log.error({ group: placement.group, err: err.message }, `shard replica ${placement.group} stopped: ${err.message}`),
    });
    return group;
  }

  // ---- membership ----------------------------------------------------------------------------

  #confRound(): void {
    if (this.#closed) return;
    this.housekeeping();
    const nowMs = Date.now();
    for (const [group, r] of this.replicas) {
      sinceWhile(this.#leaderless, group, r.group.core.leader === null, nowMs);
      sinceWhile(this.#unheard, group, this.#hearsNoLeader(r), nowMs);
      this.#silent.look(group, r.group.core, this.me, (node) => this.o.member.peerAlive(node), nowMs);
    }
    for (const map of [this.#leaderless, this.#unheard, this.#askedMembership]) {
      for (const group of [...map.keys()]) if (!this.replicas.has(group)) map.delete(group);
    }
    this.#silent.retain((group) => this.replicas.has(group));
    const steady: LedGroup[] = [];
    // A leaving node is soon out of the metadata group, and then its placements are stale: its
    // replicas moving away stay placed here in its eyes. It asks each group's leader instead
    // (else it hosted them for good, and its leave never ended: found by the chaos runner's
    // `replace`, two nodes leaving one after the other).
    const leaving = this.o.member.isLeaving();
    for (const [group, r] of this.replicas) {
      if (this.#busy.has(group)) continue;
      const core = r.group.core;
      const desired = r.placement.replicas;
      // A leaving node hands the groups it leads to another voter: one whose placements are
      // fresh drives the move of this replica (this node's may be stale, as above).
      if (leaving && core.role === 'leader') {
        const voters = core.confState().voters.filter((v) => v !== this.me);
        const to = voters.find((v) => core.isCaughtUp(v, 0)) ?? voters[0];
        if (to !== undefined && r.group.transferLeadership(to)) {
          this.o.log.info({ group, to }, `${group}: handing leadership to ${to} (${this.me} is leaving)`);
          continue;
        }
      }
      // Moved off this node: a follower waits to be removed; a leader still drives the move
      // (and hands leadership over before it removes itself).
      if ((!desired.includes(this.me) || leaving) && core.role !== 'leader') {
        this.#busy.add(group);
        void this.#checkRemoved(group, r).finally(() => this.#busy.delete(group));
        continue;
      }
      if (core.role !== 'leader') {
        const askEveryMs = this.#leaderlessReportMs();
        const since = this.#unheard.get(group);
        if (since !== undefined && core.log.lastIndex() > 0 && nowMs - since >= askEveryMs && nowMs - (this.#askedMembership.get(group) ?? 0) >= askEveryMs) {
          this.#askedMembership.set(group, nowMs);
          this.#busy.add(group);
          void this.#checkOutOfGroup(group, r).finally(() => this.#busy.delete(group));
        }
        continue;
      }
      const caughtUp = new Set(core.confState().learners.filter((l) => core.isCaughtUp(l, CAUGHT_UP_LAG)));
      const step = planShardConf({ conf: core.confState(), desired, caughtUp, leader: this.me });
      if (step === undefined) {
        const voters = core.confState().voters;
        steady.push({ group, voters, caughtUp: new Set(voters.filter((v) => core.isCaughtUp(v, 0))) });
        continue;
      }
      this.#busy.add(group);
      const run = async () => {
        this.o.log.info({ group, step }, step.kind === 'transfer' ? `${group}: handing leadership to ${step.to} (${step.why})` : `${group}: ${step.change.type} ${step.change.node} (${step.why})`);
        if (step.kind === 'transfer') r.group.transferLeadership(step.to);
        else await r.group.proposeConfChange(step.change);
      };
      void run()
        // Failing every round (a replica's node cut off): one line per REPEATED_FAILURE_LOG_MS.
        .catch((err: unknown) => this.#stepFailures.logFailure(this.o.log, group, Date.now(), { group, err: (err as Error).message }, 'shard membership step failed; retrying'))
        .finally(() => this.#busy.delete(group));
    }
    this.#balanceLeaders(steady);
  }

  /**
   * Leader balancing (`leader-balance.ts`): hand one steady group to a caught-up voter that
   * leads two fewer groups of this kind, at most once per cooldown, so the counts the next
   * decision reads (link heartbeats) have caught up with this one.
   */
  #balanceLeaders(steady: LedGroup[]): void {
    const { member } = this.o;
    if (!member.timings.leaderBalance || steady.length === 0) return;
    const now = Date.now();
    if (now - this.#lastTransferMs < Math.max(1_000, 4 * member.timings.nodeHeartbeatMs)) return;
    const nodes = member.state.nodes;
    if (nodes[this.me]?.status !== 'up') return;
    const peerLeads = new Map<string, number>();
    for (const g of steady) {
      for (const v of g.voters) {
        const n = v === this.me ? undefined : member.peerLeads(v, this.prefix);
        if (n !== undefined) peerLeads.set(v, n);
      }
    }
    const transfer = planLeaderTransfer({
      me: this.me,
      leads: this.ledGroups(),
      movable: steady,
      peerLeads,
      eligible: (node) => nodes[node]?.status === 'up' && member.peerAlive(node),
    });
    if (transfer === undefined) return;
    const r = this.replicas.get(transfer.group);
    if (r === undefined || !r.group.transferLeadership(transfer.to)) return;
    this.#lastTransferMs = now;
    if (this.o.registry !== undefined) transferCounter(this.o.registry).inc({ kind: this.prefix });
    this.o.log.info({ group: transfer.group, to: transfer.to }, `${transfer.group}: handing leadership to ${transfer.to} to balance leaders (${transfer.why})`);
  }

  /** A replica the metadata moved away: drop it once its group's conf (as its leader says) no longer has this node. */
  async #checkRemoved(group: string, r: R): Promise<void> {
    const own = r.group.core.confState();
    if ([...own.voters, ...own.learners].includes(this.me)) {
      const conf = await this.#groupConf(r);
      if (conf === undefined || conf.members.includes(this.me)) return;
    }
    if (this.replicas.get(group) === r) await this.#drop(group, r, 'it moved to another node');
  }

  /** The group's conf as its leader says (`<kind>.conf`); undefined: no leader reachable now (ask again later). */
  async #groupConf(r: R): Promise<{ voters: string[]; members: string[]; placed: boolean | undefined } | undefined> {
    try {
      const reply = await this.leaderCall(r.placement, `${this.prefix}.conf`, {});
      const voters = reply.voters as string[];
      return { voters, members: [...voters, ...(reply.learners as string[])], placed: typeof reply.placed === 'boolean' ? reply.placed : undefined };
    } catch {
      return undefined;
    }
  }

  /**
   * A replica not leading that knows no leader, or whose leader has been silent for two
   * election timeouts while its group is not quiesced.
   */
  #hearsNoLeader(r: R): boolean {
    const core = r.group.core;
    return core.role !== 'leader' && (core.leader === null || (!core.quiesced && core.electionElapsed >= 2 * this.o.member.timings.electionTicks));
  }

  /**
   * A follower that has heard from no leader for a while (`#unheard`) asks its group whether it
   * still belongs to it. A leader sends only to its configuration, so a replica removed while its
   * node was down or cut off never hears of it; and when this node's own placement is stale
   * (back from the dead, its metadata still catching up) `#checkRemoved` does not run either.
   * The group's leader answers with its configuration and whether its own placement puts a
   * replica here: neither, and the replica's data is dropped. (CI, test/chaos/short-data.test.ts:
   * n3 back 3 s after its vs0 replica moved to n4, removed from vs0 52 ms after it opened that
   * replica again, then sat behind for good in no one's configuration.) A leader that places it
   * here adds it back as a learner instead: nothing to do. If this node's own placement still
   * puts it here, the hosting pass opens it again, empty (a leader whose metadata lags may add
   * it back later, and it catches up from scratch); an empty replica is never asked about, so
   * that does not repeat.
   */
  async #checkOutOfGroup(group: string, r: R): Promise<void> {
    const conf = await this.#groupConf(r);
    // `placed` is absent from nodes before this check existed: they cannot say, so keep it.
    if (conf === undefined || conf.members.includes(this.me) || conf.placed !== false) return;
    // Heard from a leader since it asked (added back meanwhile): it is a member again.
    if (!this.#hearsNoLeader(r) || this.replicas.get(group) !== r) return;
    await this.#drop(group, r, `its group's leader no longer counts this node (voters ${conf.voters.join(', ')}) nor places a replica here`);
    this.#reconcile(this.o.member.state);
  }

  // ---- answering -----------------------------------------------------------------------------

  protected hostedReplica(group: string): R {
    const r = this.replicas.get(group);
    if (r === undefined) throw new FirkinError('not_leader', `${this.me} holds no replica of ${group}`, { details: { leader: null } });
    return r;
  }

  /**
   * A replica to answer a stale read: any hosted one, but not one that opened empty and has not
   * caught up (it would answer "not found" for what exists: chaos seed 80's final reads on a
   * node whose new replicas never found a leader). The caller tries the next replica.
   */
  protected staleReplica(group: string): R {
    const r = this.hostedReplica(group);
    if (r.group.core.catchingUp) throw new FirkinError('not_leader', `${this.me}'s replica of ${group} opened empty and is still catching up from its leader`, { details: { leader: r.group.core.leader } });
    return r;
  }

  protected leading(group: string): R {
    const r = this.hostedReplica(group);
    if (r.group.core.role !== 'leader') throw new FirkinError('not_leader', `${this.me} does not lead ${group}`, { details: { leader: r.group.core.leader } });
    return r;
  }

  /**
   * A write held up on a broken link arrives after its caller gave up (and answered 503):
   * refuse it rather than commit a write the client was told failed. This narrows, but cannot
   * close, the window of a timed-out write that still commits (it assumes the nodes' clocks
   * agree to well within the deadline).
   */
  protected checkDeadline(req: Record<string, unknown>): void {
    if (typeof req.dl === 'number' && Date.now() > req.dl) throw new FirkinError('timeout', `the write reached ${this.me} after its deadline`);
  }

  async answer(from: string, method: string, body: Buffer | Uint8Array): Promise<Uint8Array> {
    const req = decodeCbor(body) as Record<string, unknown> & { g?: unknown };
    if (typeof req.g !== 'string') throw new FirkinError('bad_request', 'shard call without a group');
    const g = req as Record<string, unknown> & { g: string };
    switch (method.slice(this.prefix.length + 1)) {
      case 'status': {
        const r = this.leading(g.g);
        const core = r.group.core;
        const conf = core.confState();
        const matches: Record<string, number | null> = {};
        for (const n of [...conf.voters, ...conf.learners]) matches[n] = n === this.me ? core.log.lastIndex() : (core.progress.get(n)?.match ?? null);
        return encodeCbor({ leader: this.me, term: core.term, last: core.log.lastIndex(), commit: core.log.committed, applied: core.log.applied, voters: conf.voters, learners: conf.learners, matches });
      }
      case 'conf': {
        const conf = this.leading(g.g).group.core.confState();
        // `placed`: whether this leader's metadata puts a replica of the group on the asker.
        const placement = this.placements(this.o.member.state).find((w) => w.shard.group === g.g);
        return encodeCbor({ voters: conf.voters, learners: conf.learners, placed: placement?.shard.replicas.includes(from) ?? false });
      }
      default:
        return this.answerOwn(from, method, g);
    }
  }

  /**
   * Each shard as its leader sees it: desired replicas, the group's voters and learners, and
   * each member's lag in log entries (null: not known to the leader yet). A shard with no
   * reachable leader says so instead. `down`: the replicas on nodes the cluster counts down (or
   * gone) now: their lag is the leader's last word on them, not a sign they are in sync.
   */
  protected shardStatuses(shards: readonly ShardPlacement[]): Promise<(GroupView & { readonly shard: number; readonly down: readonly string[] } & Record<string, unknown>)[]> {
    const nodes = this.o.member.state.nodes;
    return Promise.all(
      shards.map(async (s, i) => {
        const base = { shard: i, group: s.group, replicas: s.replicas, down: s.replicas.filter((r) => isDownOrGone(nodes[r])) };
        try {
          const st = await this.leaderCall(s, `${this.prefix}.status`, {});
          const last = st.last as number;
          const lag = Object.fromEntries(Object.entries(st.matches as Record<string, number | null>).map(([n, m]) => [n, m === null ? null : last - m]));
          return { ...base, leader: st.leader as string, term: st.term, commit: st.commit, voters: st.voters as string[], learners: st.learners as string[], lag };
        } catch (err) {
          return { ...base, leader: null, error: isFirkinError(err) ? err.code : 'error', message: (err as Error).message };
        }
      }),
    );
  }

  /** Why one of this kind's groups may still count `node` as a member (`stillCounted`); undefined: none does. */
  async stillCounts(node: string): Promise<string | undefined> {
    return stillCounted(node, await this.shardStatuses(this.placements(this.o.member.state).map((w) => w.shard)));
  }

  /** What removing `node` now would put at risk in this kind's groups (`removal-risk.ts`). */
  async removalRisks(node: string): Promise<string[]> {
    return removalRisks(node, await this.shardStatuses(this.placements(this.o.member.state).map((w) => w.shard)));
  }

  // ---- routing (from any node) ---------------------------------------------------------------

  /**
   * The replica to stream `group`'s state from for a snapshot: the leader first, then, on each
   * retry, the next replica of the group's current placement. `opened` is the placement the
   * replica was opened with: a replica restores its stored snapshot while it is being opened
   * (a restart after a crash mid-transfer), before it is in `replicas`, and must still find a
   * source then (it found none, and the node never finished starting).
   */
  protected snapshotSource(opened: ShardPlacement): string {
    const group = opened.group;
    const placement = this.placements(this.o.member.state).find((w) => w.shard.group === group)?.shard ?? this.replicas.get(group)?.placement ?? opened;
    const leader = this.knownLeader(group) ?? null;
    const others = placement.replicas.filter((n) => n !== this.me && n !== leader);
    const candidates = [...(leader === null || leader === this.me ? [] : [leader]), ...others];
    const attempt = this.#pullAttempts.get(group) ?? 0;
    this.#pullAttempts.set(group, attempt + 1);
    const source = candidates[attempt % Math.max(1, candidates.length)];
    if (source === undefined) throw new FirkinError('unavailable', `no replica of ${group} to stream a snapshot from`);
    return source;
  }

  /** A transfer of `group` succeeded: the next one starts from the leader again. */
  protected snapshotLoaded(group: string): void {
    this.#pullAttempts.delete(group);
    this.#loadFailures.delete(group);
  }

  /** The leader this node knows for a group: its own replica's view, then the last that answered. */
  knownLeader(group: string): string | undefined {
    return this.replicas.get(group)?.group.core.leader ?? this.#leaderHints.get(group) ?? undefined;
  }

  /**
   * Send a call to the shard's leader (or, for a stale read, `s: true`, to any replica, this
   * node's first), following what this node's own replica knows, then the last leader that
   * answered, then each replica in turn, until the deadline. Each attempt waits at most a
   * third of the deadline, so a leader cut off from its majority (still believing it leads)
   * does not use up the whole budget. A write retried after an attempt timed out carries the
   * same request id, and a shard applies a request id once.
   */
  async leaderCall(shard: ShardPlacement, method: string, payload: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { member } = this.o;
    // Out of the cluster (it left, or was removed while down): no link to any replica; say so
    // at once rather than after the deadline.
    if (member.memberState() === 'left') throw new FirkinError('unavailable', `node ${this.me} is out of its cluster (it left, or an operator removed it): ask a member for ${shard.group}`);
    const timeoutMs = member.timings.proposalTimeoutMs;
    const attemptMs = Math.max(200, Math.floor(timeoutMs / 3));
    const deadline = Date.now() + timeoutMs;
    const body = encodeCbor({ g: shard.group, dl: deadline, ...payload });
    const replicas = shard.replicas;
    const stale = payload.s === true;
    const known = () => this.replicas.get(shard.group)?.group.core.leader ?? undefined;
    let target = stale && this.replicas.has(shard.group) ? this.me : (known() ?? this.#leaderHints.get(shard.group) ?? replicas[0]!);
    // The leader this node's own replica named when last asked: followed again only once it
    // names another. A replica cut off from its group (removed while its node was down, never
    // told) names an old leader for good; going back to it after every other replica's refusal
    // asked it and the replica after it in turn, never the real leader (CI, the short chaos test).
    let followed = known();
    let waitMs = 10;
    let last = 'no replica answered';
    let maybeCommitted = false;
    /** Replicas an attempt of this call could not be sent to (no link). */
    const unreached = new Set<string>();
    /** Replicas that answered an attempt of this call with a refusal naming no leader. */
    const leaderless = new Set<string>();
    const isWrite = method.endsWith('.propose');
    const tail = () => (maybeCommitted && isWrite ? '; an attempt timed out after it was sent, so the write may still commit' : '');
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.#closed) {
        throw new FirkinError('no_quorum', `shard ${shard.group} (replicas ${replicas.join(', ')}) has no ${stale ? 'replica' : 'leader'} reachable from ${this.me} within ${timeoutMs} ms (${last})${tail()}`);
      }
      try {
        const reply = target === this.me ? await this.answer(this.me, method, body) : await member.callPeer(target, method, body, Math.min(remaining, attemptMs));
        if (!stale) this.#leaderHints.set(shard.group, target);
        return decodeCbor(reply) as Record<string, unknown>;
      } catch (err) {
        last = `${target}: ${(err as Error).message}`;
        const code = isFirkinError(err) ? err.code : undefined;
        if (!(wasNotSent(err) || code === 'not_leader' || code === 'unavailable' || code === 'timeout' || code === 'no_quorum')) throw err;
        if (code === 'timeout' && !wasNotSent(err)) maybeCommitted = true;
        // A read of a group the metadata has deleted since the caller took its map (a reshard,
        // split or merge switched and cleaned up): no replica will answer again, so say at once
        // that the map moved, and the caller routes again on the new one, rather than waiting
        // out the deadline for a 503 (found by the vector route fuzzer on a one-node cluster).
        // Not a write: one may have committed before the group went, so it keeps its own path.
        if (!isWrite && deletedGroups(member.state, [shard.group]).length > 0) {
          throw new FirkinError('stale_epoch', `shard ${shard.group} no longer exists (the shard map moved on: a reshard, split or merge replaced it); route again on the current map`);
        }
        this.#leaderHints.delete(shard.group);
        // A replica's word on who leads is followed even to a node this placement does not name:
        // this node's placement may be stale (out of the metadata group, or behind it), and
        // then the group's leader is just where it would not look (chaos seed 129).
        const hinted = !stale && isFirkinError(err) && typeof err.details?.leader === 'string' && err.details.leader !== target ? err.details.leader : undefined;
        if (wasNotSent(err)) unreached.add(target);
        else if (hinted === undefined && (code === 'not_leader' || code === 'unavailable')) leaderless.add(target);
        // Say at once what waiting cannot change (every request to a replica_factor 1 shard whose
        // node was down, or to a replica_factor 2 one with a node down, waited out the deadline).
        const nodes = member.state.nodes;
        const why = cannotAnswer({ replicas, unreached, leaderless, stale, isDown: (r) => isDownOrGone(nodes[r]) });
        if (why !== undefined) throw new FirkinError('no_quorum', `shard ${shard.group} ${why} (${last})${tail()}`);
        const fresh = stale ? undefined : known();
        const follow = fresh !== undefined && fresh !== target && fresh !== followed;
        if (follow) followed = fresh;
        target = hinted ?? (follow ? fresh : replicas[(replicas.indexOf(target) + 1) % replicas.length]!);
        await new Promise((r) => setTimeout(r, Math.min(waitMs, Math.max(1, deadline - Date.now()))));
        waitMs = Math.min(waitMs * 2, 200);
      }
    }
  }

  /**
   * Before a stop (a rolling restart), the groups this node leads go to a caught-up voter that
   * is up, as the metadata leader's does: otherwise each waits for its followers to notice and
   * elect. Writes have stopped (HTTP closes first), so a transfer only waits for the target to
   * hold what the leader holds. Bounded: a stop waits at most HAND_OVER_WAIT_MS for them.
   */
  async #handOverLed(): Promise<void> {
    const handed: { group: string; replica: R }[] = [];
    for (const [group, r] of this.replicas) {
      const core = r.group.core;
      if (core.role !== 'leader') continue;
      const to = core
        .confState()
        .voters.find((v) => v !== this.me && core.isCaughtUp(v, 0) && this.o.member.peerAlive(v));
      if (to !== undefined && r.group.transferLeadership(to)) handed.push({ group, replica: r });
    }
    if (handed.length === 0) return;
    const until = Date.now() + HAND_OVER_WAIT_MS;
    const leading = () => handed.filter((h) => h.replica.group.core.role === 'leader');
    while (leading().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    const kept = leading().map((h) => h.group);
    this.o.log.info({ handed: handed.length - kept.length, kept }, `handed leadership of ${handed.length - kept.length} of ${handed.length} ${this.prefix} groups over before stopping`);
  }

  /** Stop hosting: close every replica, keeping its data. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#confLoop);
    clearTimeout(this.#reopenTimer);
    await this.#handOverLed();
    // A transfer under way gives up; each start's end closes its replica, keeping its data.
    const starting = [...this.#starting.values()];
    for (const s of starting) this.stopReplica(s.replica);
    await Promise.all(starting.map((s) => s.done));
    await this.#reconciling;
    for (const r of this.replicas.values()) this.stopReplica(r);
    for (const r of this.replicas.values()) {
      await r.group.close();
      await this.closeReplica(r);
    }
    this.replicas.clear();
  }
}
