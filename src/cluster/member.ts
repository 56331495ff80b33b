// A node's cluster side: the gRPC transport, the metadata Raft group every node follows, join
// through seeds, the leader's reconciler (failure detector, voter set, leave jobs) and the
// views the HTTP API and /health show. The decisions are pure functions
// (`meta-state.ts`, `failure-detector.ts`, `voters.ts`); this file does the I/O around them.
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { HealthViewer } from '../core/health.js';
import type { Clock } from '../core/hlc.js';
import { FirkinError, committedNotApplied, isFirkinError } from '../core/errors.js';
import { RaftGroup, type RaftGroupOptions } from '../raft/group.js';
import { RocksLog } from '../raft/rocks-log.js';
import { RaftTicker } from '../raft/ticker.js';
import type { Message } from '../raft/types.js';
import { nominalDelayMs } from '../core/backoff.js';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import type { Rand } from '../core/rand.js';
import { REPEATED_FAILURE_LOG_MS, RepeatedFailures } from '../core/repeated-failures.js';
import type { Store } from '../storage/db.js';
import type { ClusterStatus, VectorCluster } from '../vector/cluster.js';
import { type DetectorOptions, type Observation, observe, statusChanges } from './failure-detector.js';
import { PENDING_REPAIR_PROTOCOL, PROTOCOL, VOUCH_PROTOCOL, mixedVersionsProblem, protocolShortfall } from './versions.js';
import { switchRollbackProblems } from './switch-bound.js';
import { peerChanges } from './peer-sync.js';
import { leftProbeTarget } from './left-probe.js';
import { type Job, META_COMMAND_PROTOCOL, type MetaCommand, type MetaState, type NodeAddress, type NodeRecord, canonicalMeta, checkMetaCommand, deletedGroups, isLive, placedNodes } from './meta-state.js';
import { type Applied, META_GROUP, MetaFsm } from './metadata.js';
import { SilentReplicas, reportAfterMs } from './silent-replicas.js';
import { describeOneWay, oneWayPeers } from './one-way-links.js';
import { wasNotSent } from './not-sent.js';
import { type SeedAnswer, normaliseSeeds, seedAnswerOf, shouldBootstrapFromSeeds } from './seed-bootstrap.js';
import type { LinkState, Transport } from './transport.js';
import { describeShortfalls, describeStranded, leaveBlockers, planRepairs, replicaShortfalls, strandedReplicas } from './shard-repair.js';
import { planVoters } from './voters.js';

/** The cluster settings the member runs by (docs/configuration.md). */
export type ClusterTimings = Pick<
  Config['cluster'],
  | 'tickMs'
  | 'electionTicks'
  | 'heartbeatTicks'
  | 'quiesceTicks'
  | 'snapshotEntries'
  | 'retainEntries'
  | 'nodeHeartbeatMs'
  | 'detector'
  | 'deadVoterGraceMs'
  | 'replicaRepairGraceMs'
  | 'leaderBalance'
  | 'joinTimeoutMs'
  | 'proposalTimeoutMs'
  | 'keyFreshnessMs'
>;

export interface ClusterOptions {
  store: Store;
  log: Logger;
  clock: Clock;
  rand: Rand;
  registry: Registry;
  nodeName: string;
  httpUrl: string;
  /** host:port the gRPC server binds. */
  grpcListen: string;
  /** host:port the other nodes dial. */
  grpcAdvertise: string;
  zone: string;
  /** The Firkin version this node runs (recorded in its node record; tests give another). */
  version: string;
  /** The cluster protocol it speaks (default PROTOCOL; tests of a mixed cluster give an older one). */
  protocol?: number;
  /** Peers dialled at these addresses instead of their advertised ones (fault proxies in chaos tests). */
  dialMap?: Readonly<Record<string, string>>;
  seeds: readonly string[];
  /** With no seeds and an empty log: start a new cluster (else wait for POST /_cluster/join). */
  bootstrap: boolean;
  cookie: string;
  maxVoters: number;
  timings: ClusterTimings;
  /** Joining failed for good (wrong cookie, no seed): the process should exit non-zero. */
  onFatal(message: string): void;
}

export type MemberState = 'joining' | 'member' | 'left';

/** Where a member hands the traffic of the Raft groups it does not run itself. */
export interface GroupHost {
  /** Calls `<prefix>.*` are answered by `answer`. */
  readonly prefix: string;
  step(m: Message): void;
  answer(from: string, method: string, body: Buffer): Promise<Uint8Array>;
  /** How many replicas this node still hosts (a leaving node stays until they moved away). */
  hosted(): number;
  /** How many of its groups this node leads now (its link heartbeats say it, for leader balancing). */
  ledGroups(): number;
  /** The groups it hosts or is starting. */
  hostedGroups(): string[];
  /** Why one of its kind's groups may still count `node` (asked of their leaders); undefined: none does. */
  stillCounts(node: string): Promise<string | undefined>;
  /** Drop these replicas (the metadata deleted their groups) and never host them again. */
  dropDeleted(groups: ReadonlySet<string>, why: string): Promise<void>;
  /** Stop hosting, keeping the data: the node is out of its cluster. */
  close(): Promise<void>;
}



/** The admin view of one node. */
export interface NodeView {
  name: string;
  http: string;
  grpc: string;
  zone: string;
  /** What the node recorded when it joined or last restarted; `null` for a node older than this field. */
  version: string | null;
  status: NodeRecord['status'];
  role: 'voter' | 'learner' | 'none';
  joined_at: number;
  last_heartbeat_ms_ago: number | null;
  /** This node's own link to it (its Raft messages ride on it): null for this node itself. */
  link: LinkState | null;
  /** Shard groups (vector and VDB) it leads: its own count exact, a peer's as its last link heartbeat said; null: not heard, or its link is down. */
  shard_leaders: number | null;
}

const INCARNATION_KEY = Buffer.from('cluster\u0000incarnation');
/** The node name the data directory's cluster data was made under (kept since it had an incarnation). */
const NAME_KEY = Buffer.from('cluster\u0000name');
/**
 * Whose cluster data a data directory holds: the node name it was made under, `''` for data
 * made before names were kept, undefined for a directory that never ran a cluster.
 */
export async function clusterDataOf(store: Store): Promise<string | undefined> {
  if ((await store.get('system', INCARNATION_KEY)) === undefined) return undefined;
  return (await store.get('system', NAME_KEY))?.toString('utf8') ?? '';
}

/** A learner within this many entries of the leader's last index may vote. */
const CAUGHT_UP_LAG = 16;

/** Pauses between on-demand freshness barriers that were refused at once (no leader known). */
const FRESHNESS_RETRY = { baseMs: 10, capMs: 100 } as const;

/** Waits for `p` up to `ms`: undefined when it resolved, the error's message when it failed, 'timed out' otherwise. */
async function withinMs(p: Promise<void>, ms: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<string>((r) => (timer = setTimeout(() => r('timed out'), ms)));
  try {
    return await Promise.race([p.then(() => undefined, (err: unknown) => (err as Error).message), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** The vector API's cluster view (reshard is the vector shards' own: `VectorShards.startReshard`). */
export class ClusterMember implements Omit<VectorCluster, 'reshard' | 'reshardStatus' | 'cancelReshard'> {
  readonly #o: ClusterOptions;
  readonly #fsm: MetaFsm;
  readonly #transport: Transport;
  #group!: RaftGroup;
  #incarnation = '';
  #loop: NodeJS.Timeout | undefined;
  #closed = false;
  #left = false;
  #joining: Promise<void> | undefined;
  /** Inside `#joinSeeds`: the seeds it asks to take this node in (normalised). */
  #seekingSeeds: readonly string[] | undefined;
  /** How the metadata group was made (an all-seeded start makes it again, bootstrapped). */
  #groupOptions!: RaftGroupOptions;
  /** Per unreachable leaving node: why its leave waits, as last logged. */
  readonly #leaveWaits = new Map<string, string>();
  /** `vouching()` as of the metadata applied index `#vouchingAt`. */
  #vouching = true;
  #vouchingAt = -1;
  /** Leader only: per-peer observations and when this term's watching began. */
  #observations = new Map<string, Observation>();
  #watchingSinceMs = 0;
  #wasLeader = false;
  #inFlight = new Set<string>();
  #lastLeader: string | null = null;
  #httpUrl: string;
  /** Monotonic start time of the last completed read barrier (freshness of the local copy). */
  #freshSinceMs = Number.NEGATIVE_INFINITY;
  /** A write acknowledged as committed that this node had not applied: not fresh until it has. */
  #mustApply = 0;
  /** The freshness barrier under way, shared by the background refresh and waiting requests. */
  #freshnessBarrier: Promise<void> | undefined;
  /** Which member a leaving node asks next whether it has left (when it knows no leader). */
  #leftProbe = 0;
  /**
   * A member said this node is leaving, which its own copy may not know: out of the metadata
   * group (removed while it was down, and asked to leave before it was added back), the copy
   * stays stale, and the replicas it hosts would never be asked whether they moved (chaos
   * seed 129). Never reset: a leave ends in `left`.
   */
  #toldLeaving = false;
  readonly #metrics: ReturnType<typeof clusterMetrics>;
  /** Data groups (replicated shards) hosted on this node: their messages and calls go there. */
  readonly #hosts: GroupHost[] = [];
  /** Answerers of other node-level calls, by method prefix (`handleCalls`). */
  readonly #callHandlers = new Map<string, (from: string, method: string, body: Buffer) => Promise<Uint8Array>>();
  /** The one clock of every Raft group on this node (metadata and shards). */
  readonly ticker: RaftTicker;

  /** `transport`: the gRPC transport's class, imported by `start` (a standalone node never loads gRPC). */
  private constructor(o: ClusterOptions, transport: typeof Transport) {
    this.#o = o;
    this.#httpUrl = o.httpUrl;
    this.ticker = new RaftTicker(o.timings.tickMs);
    this.#fsm = new MetaFsm((index, err) => o.log.error({ index, err }, 'undecodable metadata entry skipped'));
    this.#fsm.listen((state, cmd) => {
      this.#syncPeers(state);
      if (cmd === undefined) o.log.info({ applied: this.#fsm.applied, nodes: Object.keys(state.nodes).length }, `restored the metadata from a snapshot at index ${this.#fsm.applied}`);
    });
    this.#transport = new transport({
      nodeId: o.nodeName,
      cookie: o.cookie,
      listen: o.grpcListen,
      peers: new Map(),
      heartbeatIntervalMs: o.timings.nodeHeartbeatMs,
      leadCounts: () => this.#leadCounts(),
      onMessages: (ms) => {
        for (const m of ms) {
          if (m.group === META_GROUP) this.#group?.step(m);
          else for (const h of this.#hosts) h.step(m);
        }
      },
      onRequest: (from, method, body) => this.#answer(from, method, body),
      log: (line) => o.log.warn({ mod: 'transport' }, line),
    });
    this.#metrics = clusterMetrics(o.registry, this);
  }

  static async start(o: ClusterOptions): Promise<ClusterMember> {
    const { Transport } = await import('./transport.js');
    const m = new ClusterMember(o, Transport);
    await m.#start();
    return m;
  }

  get fsm(): MetaFsm {
    return this.#fsm;
  }

  get state(): MetaState {
    return this.#fsm.state;
  }

  get name(): string {
    return this.#o.nodeName;
  }

  async #start(): Promise<void> {
    const o = this.#o;
    // A data directory serves one node name: its votes, log and records are that node's.
    // Started under another name (the default name follows the host's name, which a new
    // container changes), the node would dial itself as its old name and serve nothing.
    const madeAs = (await o.store.get('system', NAME_KEY))?.toString('utf8');
    if (madeAs !== undefined && madeAs !== o.nodeName) {
      throw new FirkinError(
        'conflict',
        `the data directory holds the cluster data of node ${JSON.stringify(madeAs)}, not of ${JSON.stringify(o.nodeName)}: start it with SERVICE_NODE_NAME=${madeAs}, or on an empty data directory to join the cluster as a new node`,
      );
    }
    const stored = await o.store.get('system', INCARNATION_KEY);
    if (stored === undefined) {
      this.#incarnation = randomBytes(8).toString('hex');
      await o.store.put('system', INCARNATION_KEY, Buffer.from(this.#incarnation), { sync: true });
    } else this.#incarnation = stored.toString('utf8');
    // Made before names were kept: it takes this start's name (nothing here says another).
    if (madeAs === undefined) await o.store.put('system', NAME_KEY, Buffer.from(o.nodeName), { sync: true });

    // Nothing stored and no seed to join through: this node starts a new cluster.
    const log = await RocksLog.open(o.store, META_GROUP, () => (o.seeds.length === 0 && o.bootstrap ? { voters: [o.nodeName], learners: [] } : undefined));
    if (log.bootstrapped) o.log.info({ node: o.nodeName }, 'bootstrapping a new cluster with this node as its first voter');
    const empty = log.mem.lastIndex() === 0 && log.mem.snapshot().meta.index === 0;
    const groupOptions: RaftGroupOptions = {
      id: o.nodeName,
      group: META_GROUP,
      log,
      fsm: this.#fsm,
      send: (ms) => this.#transport.send(ms),
      rand: o.rand,
      ticker: this.ticker,
      electionTicks: o.timings.electionTicks,
      heartbeatTicks: o.timings.heartbeatTicks,
      proposalTimeoutMs: o.timings.proposalTimeoutMs,
      snapshotEveryEntries: o.timings.snapshotEntries,
      retainEntries: o.timings.retainEntries,
      linkLost: (node) => this.#transport.linkLost(node),
      onSoftState: (s) => this.#onSoftState(s.leader),
      onFailure: (err) => o.log.error({ err: err.message }, `metadata group stopped: ${err.message}`),
      vouching: () => this.vouching(),
    };
    this.#groupOptions = groupOptions;
    this.#group = new RaftGroup(groupOptions);
    await this.#transport.start();
    await this.#group.start();
    const roundMs = Math.max(50, Math.floor(o.timings.nodeHeartbeatMs));
    this.#loop = setInterval(() => void this.#round(), roundMs);
    if (empty && o.seeds.length > 0) this.#joining = this.#joinSeeds(o.seeds, o.bootstrap);
  }

  /** Route the messages of every other Raft group, and calls whose method starts with `prefix.`, to `host` (one host per data kind). */
  attachGroups(host: GroupHost): void {
    this.#hosts.push(host);
  }

  /** Answer the calls `<prefix>.*` from other members with `handler` (node-level services, such as the tasks list). */
  handleCalls(prefix: string, handler: (from: string, method: string, body: Buffer) => Promise<Uint8Array>): void {
    this.#callHandlers.set(prefix, handler);
  }

  /** Hand Raft messages of a data group to the transport (after they are safe to send). */
  sendRaft(messages: readonly Message[]): void {
    this.#transport.send(messages);
  }

  /** A call to a peer over the authenticated cluster link. */
  callPeer(peer: string, method: string, body: Uint8Array, timeoutMs: number): Promise<Buffer> {
    return this.#transport.call(peer, method, body, timeoutMs);
  }

  /**
   * Node-level liveness for quiesced groups: the cluster link to `node` is up and carried a
   * frame (its link heartbeats included) within one election timeout.
   */
  peerAlive(node: string): boolean {
    return this.#transport.isConnected(node) && this.#heardLately(node);
  }

  /** This node's own link to `node` (what its Raft messages to it ride on). */
  linkState(node: string): { state: LinkState; queued: number } {
    return this.#transport.linkState(node);
  }

  /** A frame from `node` arrived within the liveness window (on any link, its own included). */
  #heardLately(node: string): boolean {
    const seen = this.#transport.lastSeenMs(node);
    return seen !== undefined && Date.now() - seen < this.#heardWithinMs();
  }

  /** A peer heard from within this long is alive, if this node's link to it is up. */
  #heardWithinMs(): number {
    const t = this.#o.timings;
    return Math.max(t.electionTicks * t.tickMs, 3 * t.nodeHeartbeatMs);
  }

  /** Shard groups of kind `prefix` that `node` leads, as its last link heartbeat said (undefined: not heard). */
  peerLeads(node: string, prefix: string): number | undefined {
    return this.#transport.peerLeads(node, prefix);
  }

  /** The cluster link to `node` was up and broke (its process is likely gone: see `RaftGroup`'s `linkLost`). */
  peerLinkLost(node: string): boolean {
    return this.#transport.linkLost(node);
  }

  /** This data directory's random id (a node joined again on an empty one is a new member). */
  get incarnation(): string {
    return this.#incarnation;
  }

  get timings(): ClusterTimings {
    return this.#o.timings;
  }

  /** The HTTP URL once the listener is up (port 0 resolves then); the record follows. */
  setHttpUrl(url: string): void {
    this.#httpUrl = url;
  }

  // ---- views ---------------------------------------------------------------------------------

  /** Whether this node is leaving: its own copy says so, or a member did (`#checkLeft`). */
  isLeaving(): boolean {
    return this.#toldLeaving || this.#fsm.state.nodes[this.#o.nodeName]?.status === 'leaving';
  }

  memberState(): MemberState {
    if (this.#left) return 'left';
    const me = this.#fsm.state.nodes[this.#o.nodeName];
    const conf = this.#group.core.confState();
    const inGroup = conf.voters.includes(this.#o.nodeName) || conf.learners.includes(this.#o.nodeName);
    if (me?.status === 'left') return 'left';
    return me !== undefined && me.incarnation === this.#incarnation && inGroup ? 'member' : 'joining';
  }

  leader(): string | null {
    return this.#group.core.leader;
  }

  isLeader(): boolean {
    return this.#group.core.role === 'leader';
  }

  /** Every member speaks the vouch protocol (versions.ts `VOUCH_PROTOCOL`): read by every group's core, so cached per applied index. */
  vouching(): boolean {
    const at = this.#fsm.applied;
    if (this.#vouchingAt !== at) {
      this.#vouchingAt = at;
      this.#vouching = Object.values(this.#fsm.state.nodes).every((n) => !isLive(n) || (n.protocol ?? 0) >= VOUCH_PROTOCOL);
    }
    return this.#vouching;
  }

  liveNodes(): NodeRecord[] {
    return Object.values(this.#fsm.state.nodes)
      .filter(isLive)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  status(): ClusterStatus {
    const state = this.memberState();
    const nodes = this.liveNodes();
    return {
      state: state === 'member' ? 'member' : state,
      is_leader: this.isLeader(),
      leader: this.leader(),
      node: this.#o.nodeName,
      nodes: nodes.map((n) => n.name),
      healthy_nodes: nodes.filter((n) => n.status === 'up').map((n) => n.name),
    };
  }

  nodes(): string[] {
    return this.liveNodes().map((n) => n.name);
  }

  /** SHA-256 of the canonical metadata state with the index it reflects: replicas compare these. */
  digest(): { applied: number; digest: string } {
    return { applied: this.#fsm.applied, digest: createHash('sha256').update(encodeCbor(canonicalMeta(this.#fsm.state))).digest('hex') };
  }

  /** The metadata's jobs; a leave that cannot end until a node joins says why (`waiting`). */
  jobs(): (Job & { waiting?: string })[] {
    const state = this.#fsm.state;
    return Object.values(state.jobs).map((job) => {
      if (job.kind !== 'leave' || state.nodes[job.target]?.status !== 'leaving') return job;
      const blockers = leaveBlockers(state, job.target);
      return blockers.length === 0 ? job : { ...job, waiting: `a node must join: ${blockers.join('; ')}` };
    });
  }

  groupStatus(): ReturnType<RaftGroup['status']> {
    return this.#group.status();
  }

  nodeViews(): NodeView[] {
    const conf = this.#group.core.confState();
    const now = this.#o.clock.nowMs();
    return Object.values(this.#fsm.state.nodes)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((n) => {
        const seen = n.name === this.#o.nodeName ? now : this.#transport.lastSeenMs(n.name);
        return {
          name: n.name,
          http: n.http,
          grpc: n.grpc,
          zone: n.zone,
          version: n.version ?? null,
          status: n.status,
          role: conf.voters.includes(n.name) ? 'voter' : conf.learners.includes(n.name) ? 'learner' : 'none',
          joined_at: n.joinedAtMs,
          last_heartbeat_ms_ago: seen === undefined ? null : Math.max(0, now - seen),
          link: n.name === this.#o.nodeName ? null : this.#transport.linkState(n.name).state,
          shard_leaders: this.#shardLeaders(n.name),
        };
      });
  }

  /** The shard groups this node leads, by kind (its link heartbeats carry them). */
  #leadCounts(): Record<string, number> {
    return Object.fromEntries(this.#hosts.map((h) => [h.prefix, h.ledGroups()]));
  }

  /** Shard groups `node` leads (all kinds): exact for this node, else as heard while its link is alive. */
  #shardLeaders(node: string): number | null {
    if (node === this.#o.nodeName) return Object.values(this.#leadCounts()).reduce((sum, n) => sum + n, 0);
    if (!this.peerAlive(node)) return null;
    const heard = this.#hosts.map((h) => this.#transport.peerLeads(node, h.prefix));
    return heard.includes(undefined) ? null : (heard as number[]).reduce((sum, n) => sum + n, 0);
  }

  /** For /health: what is wrong, if anything; VDBs named only to a viewer who may read them. */
  health(viewer: HealthViewer): { status: 'ok' | 'degraded' | 'failing'; [k: string]: unknown } {
    const problems: string[] = [];
    const state = this.memberState();
    if (this.#group.failure !== undefined) problems.push(`metadata group stopped: ${this.#group.failure.message}`);
    if (state === 'joining') {
      const failures = [...this.#joinFailures].map(([seed, why]) => `${seed}: ${why}`).join('; ');
      problems.push(failures === '' ? 'not a member yet (joining)' : `not a member yet (joining); the seeds' last answers: ${failures}`);
      const joined = this.#joinedVia;
      const waitedMs = joined === undefined ? 0 : this.#o.clock.nowMs() - joined.atMs;
      if (joined !== undefined && this.leader() === null && waitedMs >= reportAfterMs(this.#o.timings)) {
        problems.push(
          `${joined.seed} took this node's join ${Math.round(waitedMs / 1000)} s ago, but no leader has reached it since: the other nodes dial it at ${this.#o.grpcAdvertise} (SERVICE_GRPC_ADVERTISE); check they can`,
        );
      }
    }
    if (this.#group.core.catchingUp) problems.push('the metadata replica opened empty and is catching up from the leader; it neither votes nor campaigns until then');
    // Still up and answering, but for nothing of the cluster's: a load balancer's operator should see why.
    if (state === 'left') problems.push(`node ${this.#o.nodeName} is out of its cluster (it left, or an operator removed it): it answers for its own databases only; to serve the cluster again, start it on an empty data directory (it joins as a new node)`);
    if (state !== 'left' && this.leader() === null) problems.push('no metadata leader known');
    const byStatus: Record<string, number> = {};
    for (const n of this.liveNodes()) {
      byStatus[n.status] = (byStatus[n.status] ?? 0) + 1;
      if (n.status === 'suspect' || n.status === 'down') problems.push(`node ${n.name} is ${n.status}`);
    }
    const peers = this.liveNodes()
      .filter((n) => n.name !== this.#o.nodeName)
      .map((n) => ({ name: n.name, heardMs: this.#transport.lastSeenMs(n.name), failure: this.#transport.dialFailure(n.name) }));
    for (const p of oneWayPeers(peers, { nowMs: Date.now(), heardWithinMs: this.#heardWithinMs(), reportAfterMs: reportAfterMs(this.#o.timings) })) problems.push(describeOneWay(p));
    for (const { peer, ms } of this.#silent.silentFor(reportAfterMs(this.#o.timings), this.#o.clock.nowMs())) {
      problems.push(`the metadata replica on ${peer} has not answered its leader (this node) for ${Math.round(ms / 1000)} s while ${peer} is up: the metadata group has one replica fewer; ${peer}'s /health says why (a failed store stops a replica)`);
    }
    const mixed = mixedVersionsProblem(this.liveNodes());
    if (mixed !== undefined) problems.push(mixed);
    if (state === 'member') problems.push(...describeShortfalls(replicaShortfalls(this.#fsm.state), (kind, owner) => kind === 'collection' || viewer.mayRead(owner)));
    if (state === 'member') problems.push(...switchRollbackProblems(this.#fsm.state.jobs, (vdb) => viewer.mayRead(vdb)));
    const failing = this.#group.failure !== undefined || (state === 'member' && this.leader() === null);
    return {
      status: failing ? 'failing' : problems.length > 0 ? 'degraded' : 'ok',
      state,
      node: this.#o.nodeName,
      leader: this.leader(),
      is_leader: this.isLeader(),
      nodes: byStatus,
      group: this.#group.status(),
      ...(problems.length > 0 ? { problems } : {}),
    };
  }

  // ---- writes --------------------------------------------------------------------------------

  /**
   * Propose a metadata command through the leader (forwarded when this node does not lead) and
   * resolve once it is applied HERE too, so a write is visible to the next local read.
   * A refused command (name clash, unknown id…) rejects with its FirkinError.
   */
  async propose(cmd: MetaCommand): Promise<void> {
    const started = process.hrtime.bigint();
    const applied = await this.#proposeApplied(cmd);
    this.#metrics.proposalSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    if (!applied.result.ok) throw new FirkinError(applied.result.code, applied.result.message);
  }

  async #proposeApplied(cmd: MetaCommand): Promise<Applied> {
    // 503 as for its shards (a client or balancer retries on another node), not a client's error.
    if (this.#left) throw new FirkinError('unavailable', `node ${this.#o.nodeName} is out of its cluster (it left, or an operator removed it): ask a member`);
    // Not proposed while a member could not read it (the leader checks again with its view).
    const unreadable = this.#unreadableBy(cmd);
    if (unreadable !== undefined) throw new FirkinError('unavailable', unreadable);
    const deadline = this.#o.clock.nowMs() + this.#o.timings.proposalTimeoutMs;
    const bytes = encodeCbor(cmd);
    let waitMs = 20;
    for (;;) {
      const remaining = deadline - this.#o.clock.nowMs();
      if (remaining <= 0) {
        throw new FirkinError('no_quorum', `no metadata leader accepted the write within ${this.#o.timings.proposalTimeoutMs} ms (no quorum reachable from ${this.#o.nodeName}?)`);
      }
      const leader = this.leader();
      try {
        if (leader === this.#o.nodeName && this.isLeader()) return (await this.#group.propose(bytes).catch(noQuorum)) as Applied;
        if (leader !== null) {
          const reply = await this.#transport.call(leader, 'meta.propose', bytes, remaining).catch((err: unknown) => {
            if (wasNotSent(err) || (isFirkinError(err) && err.code === 'not_leader')) throw err;
            // Sent, then no answer: the leader may have committed it, or lost its majority.
            throw new FirkinError('no_quorum', `the metadata leader ${leader} did not confirm the write (${(err as Error).message}); it may still commit`);
          });
          const applied = decodeCbor(reply) as Applied;
          try {
            await this.#waitApplied(applied.index, deadline);
          } catch (err) {
            // A refusal changed nothing: its answer needs no local apply.
            if (!applied.result.ok) return applied;
            throw err;
          }
          return applied;
        }
      } catch (err) {
        // Refused before it entered the log (or overwritten): safe to try again. Anything else
        // (a timeout) may still commit, so it is the caller's to see.
        if (!(wasNotSent(err) || (isFirkinError(err) && err.code === 'not_leader'))) throw err;
      }
      await new Promise((r) => setTimeout(r, Math.min(waitMs, Math.max(1, remaining))));
      waitMs = Math.min(waitMs * 2, 200);
    }
  }

  /**
   * Wait until this node has applied `index`. Past the deadline the write is still committed
   * (the leader applied it): the 504 says so in `committed: true`, so a caller whose answer
   * needs no local read (a key's secret) can still give it.
   */
  async #waitApplied(index: number, deadline: number): Promise<void> {
    while (this.#fsm.applied < index) {
      if (this.#o.clock.nowMs() > deadline) {
        this.#mustApply = Math.max(this.#mustApply, index);
        throw committedNotApplied(this.#o.nodeName, index);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** A linearizable read barrier on the metadata: this node has applied all that was committed. */
  async readBarrier(): Promise<void> {
    const started = performance.now();
    await this.#group.readBarrier();
    this.#freshSinceMs = Math.max(this.#freshSinceMs, started);
  }

  /**
   * Resolves once this node has applied everything the metadata committed before the call, so
   * what its copy still lacks does not exist (a node that just joined, or lags, answers a
   * lookup of a collection or VDB only after this). Tries for the proposal timeout, at least a
   * second, then 503 no_quorum: this node cannot tell.
   */
  async catchUp(): Promise<void> {
    const deadline = performance.now() + Math.max(this.#o.timings.proposalTimeoutMs, 1_000);
    let lastError = 'no leader is known';
    for (let attempt = 1; !this.#closed; attempt++) {
      try {
        await this.readBarrier();
        return;
      } catch (err) {
        lastError = (err as Error).message;
      }
      const left = deadline - performance.now();
      if (left <= 0) break;
      await new Promise((r) => setTimeout(r, Math.min(nominalDelayMs(attempt, FRESHNESS_RETRY), left)));
    }
    throw new FirkinError('no_quorum', `node ${this.#o.nodeName} could not bring its copy of the cluster's metadata up to date with a majority (${lastError}), so it cannot tell whether that exists; ask another node`);
  }

  /** The local copy reflects every write acknowledged more than `keyFreshnessMs` ago. */
  isFresh(): boolean {
    return this.#fsm.applied >= this.#mustApply && performance.now() - this.#freshSinceMs <= this.#o.timings.keyFreshnessMs;
  }

  /**
   * Resolves once the local copy is fresh: at once when the background barrier is recent,
   * otherwise after confirming it with a metadata majority on demand (a busy event loop can
   * delay the background one past the window with nothing wrong). Tries for the freshness
   * window, at least a second, then answers 503 no_quorum: this node is cut off.
   */
  async confirmFresh(): Promise<void> {
    if (this.isFresh()) return;
    const windowMs = this.#o.timings.keyFreshnessMs;
    const deadline = performance.now() + Math.max(windowMs, 1_000);
    let lastError = 'no leader is known';
    for (let attempt = 1; this.memberState() === 'member' && !this.#closed; attempt++) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      const outcome = await withinMs(this.#sharedFreshnessBarrier(), left);
      if (this.isFresh()) return;
      if (outcome !== undefined) lastError = outcome;
      // Refused at once (no leader known yet): a short pause before asking again.
      if (outcome !== undefined) await new Promise((r) => setTimeout(r, Math.min(nominalDelayMs(attempt, FRESHNESS_RETRY), Math.max(0, deadline - performance.now()))));
    }
    throw new FirkinError('no_quorum', `node ${this.#o.nodeName} could not confirm the cluster's keys with a metadata majority (${lastError}); cluster keys cannot be checked here (node-local keys still work)`);
  }

  /** Propose a revocation; acknowledge only once no node can still accept what it revokes. */
  async proposeRevocation(cmd: MetaCommand): Promise<void> {
    await this.propose(cmd);
    await new Promise((r) => setTimeout(r, this.#o.timings.keyFreshnessMs + 1));
  }

  #refreshFreshness(): void {
    if (this.memberState() !== 'member') return;
    if (performance.now() - this.#freshSinceMs < this.#o.timings.keyFreshnessMs / 4) return;
    // No leader or no quorum: freshness lapses, which is the point.
    this.#sharedFreshnessBarrier().catch(() => undefined);
  }

  /** One read barrier at a time for freshness, however many requests wait on it. */
  #sharedFreshnessBarrier(): Promise<void> {
    this.#freshnessBarrier ??= this.readBarrier().finally(() => (this.#freshnessBarrier = undefined));
    return this.#freshnessBarrier;
  }

  // ---- join, leave, remove -------------------------------------------------------------------

  #address(): NodeAddress {
    return { name: this.#o.nodeName, incarnation: this.#incarnation, http: this.#httpUrl, grpc: this.#o.grpcAdvertise, zone: this.#o.zone, version: this.#o.version, protocol: this.#o.protocol ?? PROTOCOL };
  }

  /** POST /_cluster/join: join through `seed` (a node started without seeds and without bootstrap). */
  async joinVia(seed: string): Promise<{ status: 'joining' | 'member'; node: string }> {
    const state = this.memberState();
    if (state === 'member') throw new FirkinError('already_member', `node ${this.#o.nodeName} is already a member`);
    if (state === 'left') throw new FirkinError('conflict', `node ${this.#o.nodeName} left its cluster; it can join again only as a new node with a fresh data directory`);
    const log = this.#group.core.log;
    if (log.lastIndex() > 0 && this.#joining === undefined) throw new FirkinError('already_member', `node ${this.#o.nodeName} already belongs to a cluster`);
    this.#joining ??= this.#joinSeeds([seed], false);
    return { status: 'joining', node: this.#o.nodeName };
  }

  /** Metadata replicas that answer nothing while their node is up, when this node leads (for /health). */
  readonly #silent = new SilentReplicas();

  /** Why each seed refused or did not answer the join, while joining (for /health). */
  readonly #joinFailures = new Map<string, string>();
  /** The seed that took this node's join, and when (for /health while no leader reaches it). */
  #joinedVia: { seed: string; atMs: number } | undefined;

  /** `mayStart`: nodes that all name each other may start the cluster (seed-bootstrap.ts). */
  async #joinSeeds(seeds: readonly string[], mayStart: boolean): Promise<void> {
    this.#seekingSeeds = normaliseSeeds(seeds);
    try {
      await this.#joinThroughSeeds(seeds, mayStart);
    } finally {
      this.#seekingSeeds = undefined;
    }
  }

  /**
   * The all-seeded start (seed-bootstrap.ts): this node's metadata group, open as a fresh
   * replica with nothing in it, is made again as a new cluster's first voter. False (and the
   * group as it was) when its log is no longer empty: something reached it meanwhile.
   */
  async #startClusterHere(): Promise<boolean> {
    const o = this.#o;
    await this.#group.close();
    const log = await RocksLog.open(o.store, META_GROUP, { voters: [o.nodeName], learners: [] });
    this.#groupOptions = { ...this.#groupOptions, log };
    this.#group = new RaftGroup(this.#groupOptions);
    await this.#group.start();
    return log.bootstrapped;
  }

  async #joinThroughSeeds(seeds: readonly string[], mayStart: boolean): Promise<void> {
    const o = this.#o;
    const deadline = o.clock.nowMs() + o.timings.joinTimeoutMs;
    const reasons = this.#joinFailures;
    reasons.clear();
    let attempt = 0;
    /** Seeds that answered as this node: a seed list that names every node names it too. */
    const own = new Set<string>();
    /**
     * Seeds that said they are looking for a cluster themselves, and answered nothing else
     * since (not reaching one since does not count: it may have given up first).
     */
    const joiningToo = new Set<string>();
    /** Each seed's last answer, for the all-seeded start. */
    const answers = new Map<string, SeedAnswer>();
    while (!this.#closed) {
      for (const seed of seeds) {
        if (own.has(seed)) continue;
        try {
          const reply = await this.#transport.callAddress(seed, 'meta.join', encodeCbor(this.#address()), 5_000);
          const { nodes } = decodeCbor(reply.body) as { nodes: { name: string; grpc: string }[] };
          this.#transport.setPeer(reply.node, this.#dialAddress(reply.node, seed));
          for (const n of nodes) this.#transport.setPeer(n.name, this.#dialAddress(n.name, n.grpc));
          o.log.info({ seed, via: reply.node }, `joined the cluster through seed ${seed} (${reply.node}); catching up`);
          this.#joinedVia = { seed: `${seed} (${reply.node})`, atMs: o.clock.nowMs() };
          reasons.clear();
          return;
        } catch (err) {
          const why = (err as Error).message;
          const details = isFirkinError(err) ? err.details : undefined;
          const answer = seedAnswerOf(details);
          answers.set(seed.trim(), answer);
          if (details?.joining === true) joiningToo.add(seed);
          else if (!(isFirkinError(err) && err.code === 'unavailable')) joiningToo.delete(seed);
          if (answer.kind === 'self') {
            // Skipped from now on; it stays among the reasons, should no other seed answer.
            o.log.info({ seed }, `seed ${seed} is this node itself: skipped`);
            own.add(seed);
            reasons.set(seed, `this node itself (skipped)`);
            continue;
          }
          if (reasons.get(seed) !== why) o.log.warn({ seed, err: why }, `join through seed ${seed} failed: ${why}`);
          reasons.set(seed, why);
          // A clash of names is final: retrying cannot fix it.
          if (isFirkinError(err) && err.code === 'conflict') {
            o.onFatal(`cannot join: ${why}`);
            return;
          }
        }
      }
      if (mayStart && !this.#closed && shouldBootstrapFromSeeds(seeds, answers)) {
        o.log.info({ seeds: normaliseSeeds(seeds) }, 'every other seed is a node looking for a cluster with this same seed list, and this node has the lowest address: starting the cluster here (the others join it)');
        if (await this.#startClusterHere()) {
          o.log.info({ node: o.nodeName }, 'bootstrapping a new cluster with this node as its first voter');
          reasons.clear();
          return;
        }
        o.log.warn('the metadata log was no longer empty: not starting a cluster; joining as before');
      }
      // Only itself to join through: no other node can be asked, now or later.
      const onlyOwn = own.size > 0 && own.size === new Set(seeds).size;
      if (onlyOwn || o.clock.nowMs() > deadline) {
        const summary = [...reasons].map(([s, why]) => `${s}: ${why}`).join('; ');
        // Every other seed is a node like this one, started with seeds and no cluster: nobody
        // starts one (a cluster starts on a node with no seeds), so waiting longer cannot help.
        const noneMember = !onlyOwn && new Set(seeds).size === own.size + joiningToo.size;
        o.onFatal(
          onlyOwn
            ? `cannot join: every seed is this node's own address (${summary}); list another member's gRPC address in SERVICE_SEED_NODES, or none to start a new cluster`
            : noneMember
              ? `cannot join: no seed is a member of a cluster yet: ${[...joiningToo].join(', ')} ${joiningToo.size === 1 ? 'is' : 'are'} joining one too (${summary}); start one node without SERVICE_SEED_NODES: it starts the cluster, and the others join through it`
              : `cannot join any seed within ${o.timings.joinTimeoutMs} ms (${summary})`,
        );
        return;
      }
      await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt++, 1_000)));
    }
  }

  async leave(): Promise<{ status: 'leaving'; node: string }> {
    const name = this.#o.nodeName;
    if (this.memberState() !== 'member') throw new FirkinError('not_member', `node ${name} is not a member of a cluster`);
    const conf = this.#group.core.confState();
    const others = this.liveNodes().filter((n) => n.name !== name && n.status !== 'leaving');
    if (others.length === 0 || (conf.voters.length === 1 && conf.voters[0] === name && conf.learners.length === 0)) {
      throw new FirkinError('conflict', `node ${name} is the last member: a cluster cannot lose its last node`);
    }
    // Refused rather than left waiting with no end in sight: its replicas need somewhere to go.
    const stranded = strandedReplicas(this.#fsm.state, name);
    if (stranded.length > 0) throw new FirkinError('conflict', `node ${name} cannot leave now: ${describeStranded(name, stranded)}`);
    await this.propose({ type: 'node.leave', name, jobId: randomBytes(8).toString('hex'), atMs: this.#o.clock.nowMs() });
    this.#o.log.info({ node: name }, 'leaving the cluster: handing over, then leaving the voter set');
    return { status: 'leaving', node: name };
  }

  /** An operator removes a node that is down for good. */
  async remove(name: string): Promise<{ node: string; status: 'removed' }> {
    const node = this.#fsm.state.nodes[name];
    if (node === undefined) throw new FirkinError('not_found', `no node ${JSON.stringify(name)} in this cluster`);
    await this.propose({ type: 'node.remove', name, atMs: this.#o.clock.nowMs() });
    return { node: name, status: 'removed' };
  }

  // ---- answering peers -----------------------------------------------------------------------

  /**
   * Why this leader will not log a forwarded command (undefined: it will). Logged, a command
   * this build cannot read would stop the metadata group on this node and on every member of
   * its build; one a live member's protocol predates, on that member.
   */
  #logRefusal(body: Buffer): string | undefined {
    let cmd: MetaCommand;
    try {
      cmd = checkMetaCommand(decodeCbor(body));
    } catch (err) {
      return `the metadata leader ${this.#o.nodeName} (cluster protocol ${PROTOCOL}) cannot read the command (${(err as Error).message}): it runs an older Firkin than the proposer; finish the rolling upgrade`;
    }
    return this.#unreadableBy(cmd);
  }

  /** Why a live member could not read `cmd` (undefined: every one can). */
  #unreadableBy(cmd: MetaCommand): string | undefined {
    return protocolShortfall(this.liveNodes(), META_COMMAND_PROTOCOL[cmd.type], `the metadata command ${cmd.type}`);
  }

  async #answer(from: string, method: string, body: Buffer): Promise<Uint8Array> {
    switch (method) {
      case 'meta.propose': {
        if (!this.isLeader()) throw new FirkinError('not_leader', `${this.#o.nodeName} does not lead the metadata group`, { details: { leader: this.leader() } });
        const refusal = this.#logRefusal(body);
        // Refused before the log: index 0, which the proposer has applied already.
        if (refusal !== undefined) return encodeCbor({ result: { ok: false, code: 'unavailable', message: refusal }, index: 0 } satisfies Applied);
        return encodeCbor(await this.#group.propose(body).catch(noQuorum));
      }
      case 'meta.join': {
        const node = decodeCbor(body) as Partial<NodeAddress> | null;
        if (typeof node?.name !== 'string' || node.name !== from || typeof node.grpc !== 'string' || typeof node.incarnation !== 'string') {
          throw new FirkinError('bad_request', 'malformed join request');
        }
        // Looking for a cluster itself, with nothing of one yet: no leader will take the join
        // here (the proposal would only wait out its timeout). Said at once, and why.
        if (this.#seekingSeeds !== undefined && this.#group.core.log.lastIndex() === 0) {
          throw new FirkinError('not_member', `${this.#o.nodeName} is joining a cluster itself (it has no cluster yet)`, { details: { joining: true, seeds: this.#seekingSeeds } });
        }
        this.#o.log.info({ node: node.name, grpc: node.grpc }, `node ${node.name} asks to join`);
        // The joiner learns every address from the answer, ours included: register first.
        const me = this.#fsm.state.nodes[this.#o.nodeName];
        if (me === undefined || me.grpc !== this.#o.grpcAdvertise) await this.propose({ type: 'node.join', node: this.#address(), atMs: this.#o.clock.nowMs() });
        // An older joiner sends neither.
        const version = { ...(typeof node.version === 'string' ? { version: node.version } : {}), ...(typeof node.protocol === 'number' ? { protocol: node.protocol } : {}) };
        await this.propose({ type: 'node.join', node: { name: node.name, incarnation: node.incarnation, http: String(node.http), grpc: node.grpc, zone: String(node.zone), ...version }, atMs: this.#o.clock.nowMs() });
        const nodes = this.liveNodes().map((n) => ({ name: n.name, grpc: n.grpc }));
        return encodeCbor({ nodes });
      }
      case 'meta.hosted':
        return encodeCbor({ hosted: this.#hosts.reduce((n, h) => n + h.hosted(), 0) });
      case 'meta.node': {
        // `groups` (a leaving node's hosted groups): which of them this node's metadata deleted.
        const { name, groups } = decodeCbor(body) as { name: string; groups?: unknown };
        const asked = Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [];
        // `nodes`: where the live members are, for an asker whose copy is stale (see #checkLeft).
        const nodes = this.liveNodes().map((n) => ({ name: n.name, grpc: n.grpc }));
        return encodeCbor({ node: this.#fsm.state.nodes[name] ?? null, leader: this.leader(), gone: deletedGroups(this.#fsm.state, asked), nodes });
      }
      default: {
        for (const h of this.#hosts) if (method.startsWith(`${h.prefix}.`)) return h.answer(from, method, body);
        const handler = this.#callHandlers.get(method.slice(0, method.indexOf('.')));
        if (handler !== undefined) return handler(from, method, body);
        throw new FirkinError('not_found', `unknown cluster call ${method}`);
      }
    }
  }

  // ---- the reconciler ------------------------------------------------------------------------

  #syncPeers(state: MetaState, dial = true): void {
    const { set, remove, heardLeft, missing } = peerChanges(Object.values(state.nodes), {
      self: this.#o.nodeName,
      // The group exists once the node started (a snapshot restored before that knows no leader).
      leader: (this.#group as RaftGroup | undefined)?.core.leader ?? null,
      connected: (peer) => this.#transport.isConnected(peer),
      hasLink: (peer) => this.#transport.hasPeer(peer),
      heard: (peer) => this.#heardLately(peer),
      address: (peer, advertised) => this.#dialAddress(peer, advertised),
    });
    if (dial) for (const [peer, address] of set) this.#transport.setPeer(peer, address);
    else {
      // A member with no link hears nothing from this node: dial it, and say so (no known path
      // leads here; the line tells where to look if one does).
      for (const [peer, address] of missing) {
        this.#transport.setPeer(peer, address);
        this.#o.log.warn({ peer, address }, `no link to member ${peer} though this node's copy of the metadata records it as ${state.nodes[peer]?.status}: dialling it again`);
      }
    }
    for (const peer of remove) if (this.#transport.removePeer(peer)) this.#o.log.info({ peer }, `no more link to ${peer}: it left the cluster`);
    // Only where the link is gone: an existing link's address may be fresher than this copy's.
    for (const [peer, address] of heardLeft) {
      if (this.#transport.hasPeer(peer)) continue;
      this.#transport.setPeer(peer, address);
      this.#o.log.info({ peer, address }, `link to ${peer} again: this node's copy of the metadata says it left, but it is talking to this node`);
    }
  }

  #dialAddress(name: string, advertised: string): string {
    return this.#o.dialMap?.[name] ?? advertised;
  }

  #onSoftState(leader: string | null): void {
    if (leader !== this.#lastLeader) {
      if (leader !== null) this.#metrics.leaderChanges.inc();
      this.#o.log.info({ leader, term: this.#group?.core.term }, leader === null ? 'metadata group has no leader' : `metadata leader is ${leader}`);
      this.#lastLeader = leader;
    }
  }

  readonly #stepFailures = new RepeatedFailures(REPEATED_FAILURE_LOG_MS);

  /** Fire one proposal per key at a time; errors are logged, the next round retries. */
  #once(key: string, run: () => Promise<unknown>): void {
    if (this.#inFlight.has(key)) return;
    this.#inFlight.add(key);
    run()
      // A step failing every round (a node cut off) is reported once per REPEATED_FAILURE_LOG_MS.
      .catch((err: unknown) => this.#stepFailures.logFailure(this.#o.log, key, this.#o.clock.nowMs(), { err: (err as Error).message, key }, 'cluster step failed; retrying next round'))
      .finally(() => this.#inFlight.delete(key));
  }

  async #round(): Promise<void> {
    if (this.#closed || this.#group.failure !== undefined) return;
    const o = this.#o;
    const now = o.clock.nowMs();
    this.#silent.look(META_GROUP, this.#group.core, o.nodeName, (node) => this.peerAlive(node), now);
    const me = this.#fsm.state.nodes[o.nodeName];
    const conf = this.#group.core.confState();
    const inGroup = conf.voters.includes(o.nodeName) || conf.learners.includes(o.nodeName);

    // Left (by leave or by an operator's remove): stop the cluster side.
    if (!this.#left && me?.status === 'left' && me.incarnation === this.#incarnation) {
      void this.#stopAfterLeaving();
      return;
    }
    // A left peer whose link was up at its `left` entry goes once the link is down (the round
    // only drops: the addresses come with applied entries, or from a member when this copy is
    // stale, and a stale copy's would undo the fresher ones).
    if (!this.#left) this.#syncPeers(this.#fsm.state, false);
    // A leaving node may miss its `left` entry, and a node removed while it was down comes back
    // believing it is a member, with no leader it can reach: both ask the others.
    if ((me?.status === 'leaving' || this.leader() === null) && !this.isLeader()) this.#once('left?', () => this.#checkLeft());
    this.#refreshFreshness();

    // Our own record: written when missing or stale (first start of a bootstrap node, a restart
    // at new addresses). A joining node is registered by the leader that accepted it.
    const want = this.#address();
    const stale = me === undefined || me.http !== want.http || me.grpc !== want.grpc || me.zone !== want.zone || me.version !== want.version || me.protocol !== want.protocol;
    if (inGroup && this.leader() !== null && stale && (me === undefined || me.incarnation === this.#incarnation)) {
      this.#once('self', () => this.propose({ type: 'node.join', node: want, atMs: now }));
    }

    if (!this.isLeader()) {
      this.#wasLeader = false;
      return;
    }
    if (!this.#wasLeader) {
      this.#wasLeader = true;
      this.#watchingSinceMs = now;
      this.#observations.clear();
    }
    const nodes = Object.values(this.#fsm.state.nodes);
    for (const n of nodes) {
      if (n.name !== o.nodeName) this.#observations.set(n.name, observe(this.#observations.get(n.name), this.#transport.lastSeenMs(n.name), now, o.timings.detector));
    }
    for (const change of statusChanges(nodes, this.#observations, o.nodeName, now, this.#watchingSinceMs, o.timings.detector)) {
      this.#once(`status:${change.name}`, async () => {
        await this.propose({ type: 'node.status', name: change.name, status: change.status, atMs: o.clock.nowMs() });
        o.log.warn({ node: change.name, status: change.status }, `node ${change.name} is ${change.status}`);
      });
    }

    // Shard replicas on nodes down past the grace period, leaving or gone: move them (the
    // shard's leader then adds the new replica, lets it catch up, and removes the old one).
    const pending = protocolShortfall(this.liveNodes(), PENDING_REPAIR_PROTOCOL, 'moving the replicas of pending groups') === undefined;
    for (const move of planRepairs(this.#fsm.state, now, o.timings.replicaRepairGraceMs, { pending })) {
      this.#once(`repair:${move.group}`, async () => {
        await this.propose({ type: move.pending ? 'shard.replace.pending' : 'shard.replace', ...(move.kind === 'vdb' ? { kind: 'vdb' as const } : {}), collection: move.collection, group: move.group, from: move.from, to: move.to });
        o.log.warn({ ...move }, `moving the replica of ${move.group} (${move.collection}) from ${move.from} to ${move.to}: ${move.why}`);
      });
    }

    // Nodes recorded as up but not in the group yet (a join whose learner step was lost).
    for (const n of nodes) {
      if (n.status === 'up' && !conf.voters.includes(n.name) && !conf.learners.includes(n.name)) {
        this.#once('conf', async () => {
          await this.#group.proposeConfChange({ type: 'addLearner', node: n.name });
          o.log.info({ node: n.name }, `added ${n.name} to the metadata group as a learner`);
        });
        return;
      }
    }
    // Leaving nodes that are out of the group and hold no shard replica any more: done.
    // Only a leaving node's placements matter here (and to planVoters): walk the shards then only.
    const placed = nodes.some((n) => n.status === 'leaving') ? placedNodes(this.#fsm.state) : new Set<string>();
    for (const n of nodes) {
      if (n.status !== 'leaving' || conf.voters.includes(n.name) || conf.learners.includes(n.name)) continue;
      // Done when no placement holds it and it hosts no replica any more (its shard groups
      // removed it): asked of the node itself, since only it knows. Unreachable: done once no
      // group's leader counts it any more (its disk may hold a vote a group still needs).
      if (placed.has(n.name)) continue;
      this.#once(`left:${n.name}`, async () => {
        const hosted = await this.#transport.call(n.name, 'meta.hosted', encodeCbor({}), 2_000).then(
          (reply) => (decodeCbor(reply) as { hosted?: number }).hosted ?? 0,
          (err: unknown) => {
            if (wasNotSent(err)) return undefined;
            throw err;
          },
        );
        if (hosted === undefined) {
          const why = (await Promise.all(this.#hosts.map((h) => h.stillCounts(n.name)))).find((w) => w !== undefined);
          if (why !== undefined) {
            if (this.#leaveWaits.get(n.name) !== why) o.log.warn({ node: n.name, why }, `leaving node ${n.name} does not answer, and its leave waits: ${why}`);
            this.#leaveWaits.set(n.name, why);
            return;
          }
        } else if (hosted > 0) {
          return;
        }
        this.#leaveWaits.delete(n.name);
        await this.propose({ type: 'node.left', name: n.name, atMs: o.clock.nowMs() });
      });
    }
    const core = this.#group.core;
    const caughtUp = new Set(conf.learners.filter((l) => core.isCaughtUp(l, CAUGHT_UP_LAG)));
    const step = planVoters({ conf, nodes: this.#fsm.state.nodes, caughtUp, leader: o.nodeName, placed, maxVoters: o.maxVoters, deadVoterGraceMs: o.timings.deadVoterGraceMs, nowMs: now });
    if (step === undefined) return;
    if (step.kind === 'transfer') {
      this.#once('transfer', async () => {
        o.log.info({ to: step.to, why: step.why }, `handing metadata leadership to ${step.to}: ${step.why}`);
        this.#group.transferLeadership(step.to);
      });
    } else {
      this.#once('conf', async () => {
        await this.#group.proposeConfChange(step.change);
        o.log.info({ change: step.change, why: step.why }, `metadata group: ${step.change.type} ${step.change.node} (${step.why})`);
      });
    }
  }

  /**
   * A leaving node cut off from the group may never see its `left` entry, and a node removed
   * while it was down never will: ask the leader, or any other member.
   */
  async #checkLeft(): Promise<void> {
    // Out of the group, this node may not know the leader any more: any other member can
    // answer from its applied copy (a `left` it has applied is committed).
    const ask = leftProbeTarget(this.leader(), this.#o.nodeName, this.liveNodes().map((n) => n.name), this.#leftProbe++);
    if (ask === undefined) return;
    const groups = this.#hosts.flatMap((h) => h.hostedGroups());
    const reply = decodeCbor(await this.#transport.call(ask, 'meta.node', encodeCbor({ name: this.#o.nodeName, groups }), 2_000)) as { node: NodeRecord | null; gone?: string[]; nodes?: { name: string; grpc: string }[] };
    // This process's own record only: a node of the same name that joined again since is another.
    if (reply.node?.status === 'left' && reply.node.incarnation === this.#incarnation) return this.#stopAfterLeaving();
    if (reply.node?.status === 'leaving' && reply.node.incarnation === this.#incarnation && !this.isLeaving()) {
      this.#toldLeaving = true;
      this.#o.log.warn({ node: this.#o.nodeName, told: ask }, `a member says this node is leaving (${ask}), which its own metadata does not know yet: its shard replicas ask their groups whether they moved`);
    }
    // Members this node's stale copy lacks, or has at an old address (one that joined again
    // while it was down, perhaps the leader now): dial them. The failure detector hears a node
    // only on links the node dials itself, so a leader this node does not know would never hear
    // it, never mark it up, never add it back to the metadata group it was removed from while
    // down, and its copy would stay stale for good (chaos, the `remove` nemesis, seed 9).
    const peers = this.#transport.peers();
    for (const n of reply.nodes ?? []) {
      const address = this.#dialAddress(n.name, n.grpc);
      if (n.name !== this.#o.nodeName && peers.get(n.name) !== address) this.#transport.setPeer(n.name, address);
    }
    // Groups deleted while this node could not see it (out of the metadata group, lagging): their
    // leaders are gone too, so no group can say it was removed, and hosting one holds up the
    // leave. A member's applied deletion is committed; shard numbers are never reused.
    const gone = new Set(reply.gone ?? []);
    if (gone.size > 0) for (const h of this.#hosts) await h.dropDeleted(gone, `the metadata deleted its group, as ${ask} says`);
  }

  async #stopAfterLeaving(): Promise<void> {
    if (this.#left) return;
    this.#left = true;
    this.#o.log.warn({ node: this.#o.nodeName }, 'this node is out of its cluster (it left, or an operator removed it while it was down): cluster side stopped, shard replicas closed with their data kept; to join again it needs a fresh data directory');
    await this.#shutdown();
    // A node removed while down still hosted replicas; a node that left has none left.
    for (const h of this.#hosts) await h.close();
  }

  async #shutdown(): Promise<void> {
    if (this.#loop !== undefined) clearInterval(this.#loop);
    await this.#group.close();
    await this.#transport.close();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#left) return;
    // A leader steps aside first, so the others need not wait out an election timeout.
    if (this.isLeader()) {
      const to = this.#group.core.confState().voters.find((v) => v !== this.#o.nodeName && this.#fsm.state.nodes[v]?.status === 'up');
      if (to !== undefined && this.#group.transferLeadership(to)) {
        const until = this.#o.clock.nowMs() + 1_000;
        while (this.isLeader() && this.#o.clock.nowMs() < until) await new Promise((r) => setTimeout(r, 10));
      }
    }
    await this.#shutdown();
  }
}

/** A leader whose entry did not commit in time has lost its majority (or is about to notice). */
function noQuorum(err: unknown): never {
  if (isFirkinError(err) && err.code === 'timeout') {
    throw new FirkinError('no_quorum', `the metadata write was not committed by a majority in time (${err.message}); it will still commit if the majority returns`);
  }
  throw err;
}

function clusterMetrics(registry: Registry, m: ClusterMember) {
  new Gauge({
    name: 'firkin_cluster_nodes',
    help: 'Cluster nodes by status (as this node has applied the metadata)',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const n of Object.values(m.state.nodes)) this.inc({ status: n.status });
    },
  });
  new Gauge({
    name: 'firkin_cluster_under_replicated_shard_groups',
    help: 'Shard groups (collections and VDBs) with a placed replica on a node that is not live (as this node has applied the metadata)',
    registers: [registry],
    collect() {
      this.set(replicaShortfalls(m.state).length);
    },
  });
  const raft = (name: string, help: string, pick: (s: ReturnType<ClusterMember['groupStatus']>) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['group'] as const,
      registers: [registry],
      collect() {
        this.set({ group: META_GROUP }, pick(m.groupStatus()));
      },
    });
  raft('firkin_raft_term', 'Current Raft term', (s) => s.term);
  raft('firkin_raft_commit_index', 'Raft commit index', (s) => s.commit);
  raft('firkin_raft_applied_index', 'Raft applied index', (s) => s.applied);
  raft('firkin_raft_is_leader', '1 when this node leads the group', (s) => (s.role === 'leader' ? 1 : 0));
  const leaderChanges = new Counter({ name: 'firkin_raft_leader_changes_total', help: 'Leader changes seen by this node', labelNames: ['group'] as const, registers: [registry] }).labels({ group: META_GROUP });
  const proposalSeconds = new Histogram({
    name: 'firkin_raft_proposal_seconds',
    help: 'Metadata proposal latency, forwarding and local apply included',
    labelNames: ['group'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  }).labels({ group: META_GROUP });
  return { leaderChanges, proposalSeconds };
}
