// The pure Raft core (etcd-io/raft raft.go + rawnode.go, simplified). It only computes:
// no I/O, timers, clocks or randomness of its own (`rand` is injected). The caller drives it
// with tick/step/propose and drains it with ready()/advance() (contract on `Ready`).
//
// Membership: one change at a time. A change takes effect on a node when the node learns it
// is committed; a leader accepts a new change only once the previous one is committed, and a
// new leader only after committing an entry of its own term (Ongaro, single-server changes).
import type { Rand } from '../core/rand.js';
import { committedIndex, hasQuorum, voteResult } from './quorum.js';
import { Progress } from './progress.js';
import { RaftLog } from './log.js';
import type { LogReader } from './storage.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  EntryPayload,
  GroupId,
  HardState,
  Message,
  NodeId,
  ReadState,
  Ready,
  Role,
  SoftState,
} from './types.js';
import { unreachable } from '../core/unreachable.js';
import { applyConfChange } from './conf.js';

export interface RaftOptions {
  readonly id: NodeId;
  readonly group: GroupId;
  readonly storage: LogReader;
  readonly rand: Rand;
  /** Base election timeout; the effective one is drawn from [electionTicks, 2 * electionTicks). */
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  /** Bound on unacknowledged appends per follower in the replicate state. */
  readonly inflightMax: number;
  /** Bound on entries per append message. */
  readonly appendEntriesMax: number;
  /**
   * Quiescence: a leader whose group has been idle (everything committed and replicated to
   * every member, nothing pending) for this many ticks tells its followers so and goes silent:
   * no heartbeats, no election ticks. 0 = never. The driver must then watch the leader's node
   * by other means (a node-level heartbeat) and call `wake()` when it looks dead.
   */
  readonly quiesceAfterTicks: number;
  /**
   * The incarnation of a replica that started with an empty log and is not vouched for yet
   * (default: one drawn from `rand` when its storage is empty now). It grants no vote and
   * counts for no quorum until a committed entry vouches for it (`catchingUp`); the driver
   * persists it across restarts until then.
   */
  readonly fresh?: string;
  /**
   * Whether every member speaks the vouch protocol (default: yes). While not (a rolling
   * upgrade), leaders count fresh replicas and vouch for none, and a fresh replica stops
   * catching up once it holds what the first leader it heard showed it (the rule before).
   */
  readonly vouching?: () => boolean;
  /**
   * The driver's node-level liveness (link heartbeats), for quiescence: a quiesced follower
   * wakes when its leader's node looks dead, and a leader quiesces only while the nodes of a
   * majority of its voters look alive (`shouldWake`). Absent: the driver wakes replicas itself.
   */
  readonly peerAlive?: (node: NodeId) => boolean;
}

export const DEFAULT_RAFT_OPTIONS = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  inflightMax: 64,
  appendEntriesMax: 256,
  quiesceAfterTicks: 0,
} as const;

export type ProposeResult = { readonly ok: true; readonly index: number; readonly term: number } | { readonly ok: false; readonly reason: 'not_leader' | 'transferring' | 'conf_pending' | 'invalid'; readonly leader: NodeId | null };

type MessageBody = Message extends infer M ? (M extends Message ? Omit<M, 'group' | 'from' | 'to' | 'term'> : never) : never;

interface PendingRead {
  readonly ctx: string;
  readonly from: NodeId;
  readonly index: number;
  readonly seq: number;
  readonly acks: Set<NodeId>;
}

export class RaftCore {
  readonly id: NodeId;
  readonly group: GroupId;
  readonly log: RaftLog;
  readonly #opts: RaftOptions;

  term = 0;
  vote: NodeId | null = null;
  role: Role = 'follower';
  leader: NodeId | null = null;

  voters = new Set<NodeId>();
  learners = new Set<NodeId>();
  /** (index, membership after that index), ascending; covers every committed change after the snapshot. */
  #confHistory: { index: number; conf: ConfState }[] = [];

  /** Leader only: per-member progress (including our own). */
  readonly progress = new Map<NodeId, Progress>();
  #votes = new Map<NodeId, boolean>();
  /** Ticks since the last election timeout reset (followers) / check-quorum round (leader). */
  electionElapsed = 0;
  #heartbeatElapsed = 0;
  #randomizedElectionTicks = 0;
  /** Leader: index of the last conf change appended; a new one waits until it is committed. */
  #pendingConfIndex = 0;
  leadTransferee: NodeId | null = null;
  /** The group is idle and silent; any message (or `wake()`) brings it back. */
  quiesced = false;
  #idleTicks = 0;

  #msgs: Message[] = [];
  #readStates: ReadState[] = [];
  #readSeq = 0;
  #pendingReads: PendingRead[] = [];
  /** Reads that arrived before this leader committed an entry of its term. */
  #deferredReads: { ctx: string; from: NodeId }[] = [];

  /** Leader: proposals appended since the last Ready; one broadcast covers them all (batching). */
  #bcastPending = false;
  /** While `catchingUp`: this replica's incarnation, which a committed `vouch` entry must name. */
  #fresh: string | undefined;
  /**
   * Without vouching (`RaftOptions.vouching`): the first index above 0 a leader showed this
   * replica (an append's previous index or commit, a heartbeat's commit, a snapshot's index),
   * Infinity before any; undefined once the log reached it.
   */
  #catchUpTo: number | undefined;
  #prevHardState: HardState;
  #prevSoftState: SoftState;
  #readyOutstanding = false;

  constructor(opts: RaftOptions) {
    this.#opts = opts;
    this.id = opts.id;
    this.group = opts.group;
    this.log = new RaftLog(opts.storage);
    const { hardState, conf } = opts.storage.initialState();
    this.term = hardState.term;
    this.vote = hardState.vote;
    const snapIndex = opts.storage.snapshot().meta.index;
    this.#fresh = opts.fresh ?? (this.log.lastIndex() === 0 ? `r${opts.rand.int(2 ** 31)}` : undefined);
    if (this.#fresh !== undefined) this.#catchUpTo = Infinity;
    this.#setConf(conf);
    this.#confHistory = [{ index: snapIndex, conf }];
    // Committed membership changes (and vouches) after the snapshot are final: take them now.
    this.#applyCommitted(snapIndex, this.log.committed);
    this.#prevHardState = this.hardState();
    this.becomeFollower(this.term, null);
    this.#prevSoftState = this.softState();
  }

  /**
   * Started empty and not vouched for yet. Such a replica is a new one (a learner, or a voter
   * whose data was lost: a node back under its name on an empty data directory). Its old
   * self's votes and acknowledgements are gone with its disk, so it stands for nothing: it
   * grants no vote, never campaigns, and a leader counts it toward no quorum (commit,
   * check-quorum, reads) until a `vouch` entry naming its incarnation is committed by a
   * quorum of the others, then holds that entry: its log now has everything committed before
   * it (Raft's lost-disk hazard; docs/raft.md).
   */
  get catchingUp(): boolean {
    return this.#fresh !== undefined;
  }

  /** The incarnation a vouch must name while `catchingUp`. */
  get freshIncarnation(): string | undefined {
    return this.#fresh;
  }

  /**
   * Leader: `id` holds the log up to within `lag` entries of ours and counts for quorums (not
   * a fresh replica awaiting its vouch): fit to be promoted, or handed leadership (lag 0).
   */
  isCaughtUp(id: NodeId, lag: number): boolean {
    const pr = this.progress.get(id);
    return pr !== undefined && pr.match > 0 && this.log.lastIndex() - pr.match <= lag && this.#counts(id);
  }

  // ---- public API --------------------------------------------------------------------------

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  softState(): SoftState {
    return { role: this.role, leader: this.leader, term: this.term };
  }

  confState(): ConfState {
    return { voters: [...this.voters].sort(), learners: [...this.learners].sort() };
  }

  /** Membership as of `index` (must be >= the snapshot index and <= committed). */
  confStateAt(index: number): ConfState {
    let conf = this.#confHistory[0]!.conf;
    for (const h of this.#confHistory) if (h.index <= index) conf = h.conf;
    return conf;
  }

  /** Drop membership history below a new snapshot (the driver calls it after compacting). */
  compactConfHistory(index: number): void {
    while (this.#confHistory.length > 1 && this.#confHistory[1]!.index <= index) this.#confHistory.shift();
  }

  isPromotable(): boolean {
    // A replica catching up from empty stands for nothing: its log may lack acknowledged entries.
    return this.voters.has(this.id) && !this.catchingUp;
  }

  tick(): void {
    if (this.quiesced) return;
    if (this.role === 'leader') this.#tickLeader();
    else this.#tickElection();
  }

  /**
   * Leave quiescence (the driver's failure detector suspects the leader, or a local request
   * needs the group). A follower asks the leader to resume heartbeats and starts counting its
   * election timeout again, so a dead leader is replaced within one timeout.
   */
  wake(): void {
    if (this.quiesced) this.#unquiesce(null);
  }

  /**
   * Whether a quiesced replica should wake, by the driver's `peerAlive`: a follower when its
   * leader's node looks dead (it must elect another); a leader when the nodes of a majority of
   * its voters do. A quiesced leader does not tick, so checkQuorum never runs: without this it
   * would call itself leader for ever after losing its majority (and a survivor's /health would
   * name no leaderless group). Awake, it does not quiesce again while that lasts, and
   * checkQuorum steps it down. With a majority live it stays quiet.
   */
  shouldWake(): boolean {
    const peerAlive = this.#opts.peerAlive;
    if (!this.quiesced || peerAlive === undefined) return false;
    if (this.role === 'leader') return !this.#votersMostlyAlive(peerAlive);
    return this.leader !== null && !peerAlive(this.leader);
  }

  /** The voters whose nodes look alive, this one included, are a quorum. */
  #votersMostlyAlive(peerAlive: (node: NodeId) => boolean): boolean {
    const live = new Set<NodeId>([this.id]);
    for (const v of this.voters) if (v !== this.id && peerAlive(v)) live.add(v);
    return hasQuorum([...this.voters], live);
  }

  /**
   * The driver has strong evidence that the leader is gone: the link to its node broke and a
   * heartbeat was missed since. Forget it, as etcd's ForgetLeader does: this follower no longer
   * holds the check-quorum lease for it, so it grants (pre-)votes at once, and it campaigns
   * within half an election timeout instead of one to two. Timing is not part of safety; a
   * live leader's next message restores it here, and a pre-vote cannot unseat it while another
   * voter of a quorum still hears from it.
   */
  forgetLeader(): void {
    if (this.role !== 'follower' || this.leader === null) return;
    this.wake(); // a silent group must tick to campaign
    this.leader = null;
    const withinTicks = Math.max(1, Math.floor(this.#opts.electionTicks / 2));
    this.#randomizedElectionTicks = this.electionElapsed + 1 + this.#opts.rand.int(withinTicks);
  }

  /** Start an election now (tests, operator). */
  campaign(): void {
    if (!this.isPromotable() || this.role === 'leader') return;
    this.#campaign(this.#opts.preVote ? 'preVote' : 'vote', false);
  }

  propose(data: Uint8Array): ProposeResult {
    return this.#proposeEntry({ kind: 'normal', data });
  }

  proposeConfChange(change: ConfChange): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'not_leader', leader: this.leader };
    if (this.#pendingConfIndex > this.log.committed) return { ok: false, reason: 'conf_pending', leader: this.leader };
    const isVoter = this.voters.has(change.node);
    const isLearner = this.learners.has(change.node);
    switch (change.type) {
      case 'addVoter':
        if (isVoter) return { ok: false, reason: 'invalid', leader: this.leader };
        break;
      case 'addLearner':
        if (isVoter || isLearner) return { ok: false, reason: 'invalid', leader: this.leader };
        break;
      case 'removeNode':
        if (!isVoter && !isLearner) return { ok: false, reason: 'invalid', leader: this.leader };
        if (isVoter && this.voters.size === 1) return { ok: false, reason: 'invalid', leader: this.leader };
        break;
      default:
        unreachable(change.type);
    }
    const result = this.#proposeEntry({ kind: 'conf', change });
    if (result.ok) this.#pendingConfIndex = result.index;
    return result;
  }

  /** Ask the leader to hand leadership to `to`. Returns false if this node cannot do it. */
  transferLeadership(to: NodeId): boolean {
    if (this.role !== 'leader' || to === this.id || !this.voters.has(to)) return false;
    this.wake();
    if (this.leadTransferee === to) return true;
    this.leadTransferee = to;
    this.electionElapsed = 0; // the transfer must finish within one election timeout
    const pr = this.progress.get(to)!;
    if (pr.match === this.log.lastIndex()) this.#send(to, { kind: 'timeoutNow' });
    else this.#sendAppend(to, true);
    return true;
  }

  /**
   * Request a linearizable read. When confirmed, a ReadState {ctx, index} appears in a Ready:
   * the read may be served once the applied index reaches `index`. Returns false when no
   * leader is known (the caller retries or fails the read).
   */
  readIndex(ctx: string): boolean {
    if (this.role === 'leader') {
      this.#leaderReadIndex(ctx, this.id);
      return true;
    }
    if (this.leader === null) return false;
    this.#send(this.leader, { kind: 'readIndex', ctx });
    return true;
  }

  hasReady(): boolean {
    return (
      this.#msgs.length > 0 ||
      this.#readStates.length > 0 ||
      this.log.unstable.length > 0 ||
      this.log.unstableSnapshot !== undefined ||
      this.log.committed > this.log.applying ||
      !sameHardState(this.hardState(), this.#prevHardState) ||
      !sameSoftState(this.softState(), this.#prevSoftState)
    );
  }

  ready(): Ready | undefined {
    if (this.#readyOutstanding) throw new Error('raft: ready() called before advance() of the previous Ready');
    if (this.#bcastPending) {
      this.#bcastPending = false;
      if (this.role === 'leader') this.#bcastAppend();
    }
    if (!this.hasReady()) return undefined;
    const hs = this.hardState();
    const hardState = sameHardState(hs, this.#prevHardState) ? undefined : hs;
    const snapshot = this.log.unstableSnapshot;
    let committed: Entry[] = [];
    if (snapshot !== undefined) {
      this.log.applying = Math.max(this.log.applying, snapshot.meta.index);
    } else if (this.log.committed > this.log.applying) {
      committed = this.log.slice(this.log.applying + 1, this.log.committed + 1)!;
      this.log.applying = this.log.committed;
    }
    const entries = [...this.log.unstable];
    const termChanged = hardState !== undefined && (hardState.term !== this.#prevHardState.term || hardState.vote !== this.#prevHardState.vote);
    const mustSync = entries.length > 0 || snapshot !== undefined || termChanged;
    // A leader's appends need none of this Ready's state on its disk (thesis §10.2.1): it
    // counts itself only once its entries are persisted (`advance`), and its term is durable
    // unless this very Ready changes it (a leader elected alone, in one step, may not send
    // entries of a term it could forget).
    const sendEarly = this.role === 'leader' && !termChanged;
    const earlyMessages = sendEarly ? this.#msgs.filter((m) => m.kind === 'append') : [];
    const rd: Ready = {
      softState: this.softState(),
      hardState,
      entries,
      snapshot,
      earlyMessages,
      messages: sendEarly ? this.#msgs.filter((m) => m.kind !== 'append') : this.#msgs,
      committed,
      readStates: this.#readStates,
      mustSync,
    };
    this.#msgs = [];
    this.#readStates = [];
    this.#prevHardState = hs;
    this.#prevSoftState = rd.softState;
    this.#readyOutstanding = true;
    return rd;
  }

  advance(rd: Ready): void {
    this.#readyOutstanding = false;
    const last = rd.entries[rd.entries.length - 1];
    if (last !== undefined) this.log.stableTo(last.index, last.term);
    if (rd.snapshot !== undefined) {
      this.log.stableSnapTo(rd.snapshot.meta.index);
      this.log.applied = Math.max(this.log.applied, rd.snapshot.meta.index);
    }
    const lastCommitted = rd.committed[rd.committed.length - 1];
    if (lastCommitted !== undefined) this.log.applied = Math.max(this.log.applied, lastCommitted.index);
    // The leader's own acknowledgement (etcd's self MsgAppResp): what is now on its disk.
    if (this.role === 'leader' && this.#ackSelf()) this.#bcastAppend();
  }

  step(m: Message): void {
    if (m.group !== this.group) throw new Error(`raft: message for group ${m.group} stepped into ${this.group}`);
    if (m.to !== this.id) return;
    if (this.quiesced && !(m.kind === 'heartbeat' && m.quiesce === true && m.from === this.leader)) this.#unquiesce(m.from);
    if (m.term > this.term) {
      if (m.kind === 'preVote' || m.kind === 'vote') {
        // Check-quorum lease: while we hear from a leader, ignore would-be disruptors.
        const inLease = this.#opts.checkQuorum && this.leader !== null && this.electionElapsed < this.#opts.electionTicks;
        if (!m.force && inLease) return;
      }
      if (m.kind === 'preVote' || (m.kind === 'preVoteResp' && !m.reject)) {
        // A pre-vote never changes terms.
      } else if (m.kind === 'append' || m.kind === 'heartbeat' || m.kind === 'snapshot') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, null);
      }
    } else if (m.term < this.term) {
      if ((this.#opts.checkQuorum || this.#opts.preVote) && (m.kind === 'append' || m.kind === 'heartbeat')) {
        // A stale leader: our higher term in the answer makes it step down.
        this.#send(m.from, { kind: 'appendResp', index: 0, reject: false, rejectHint: 0 });
      } else if (m.kind === 'preVote') {
        this.#send(m.from, { kind: 'preVoteResp', reject: true });
      }
      return;
    }

    if (isElection(m)) {
      // A commit index is only ever a committed one: holding the sender's entry there, our log
      // up to it is the same (log matching), so committed. Without it, after a leader removed
      // itself, voters that had not seen the removal committed count the removed node, whose
      // log is longer than theirs, and none is elected while another voter is down or lost its
      // disk (the simulation: SIM_SEED=472991558, 1921035788). The removed node's rejection
      // carries what it knows.
      const { commit, commitTerm } = m;
      if (commit !== undefined && commit > this.log.committed && commit <= this.log.lastIndex() && this.log.term(commit) === commitTerm) this.#commitTo(commit);
    }

    if (m.kind === 'preVote' || m.kind === 'vote') {
      const canVote =
        this.vote === m.from || (this.vote === null && this.leader === null) || (m.kind === 'preVote' && m.term > this.term);
      // A replica catching up from empty, or with an empty log, votes for no one (`catchingUp`).
      const grant = canVote && !this.catchingUp && this.log.lastIndex() > 0 && this.log.isUpToDate(m.lastIndex, m.lastTerm);
      if (m.kind === 'vote') {
        if (grant) {
          this.electionElapsed = 0;
          this.vote = m.from;
        }
        this.#send(m.from, { kind: 'voteResp', reject: !grant });
      } else {
        // Granted pre-votes carry the candidate's future term so it counts them.
        this.#sendWithTerm(m.from, grant ? m.term : this.term, { kind: 'preVoteResp', reject: !grant });
      }
      return;
    }

    switch (this.role) {
      case 'leader':
        this.#stepLeader(m);
        return;
      case 'candidate':
      case 'preCandidate':
        this.#stepCandidate(m);
        return;
      case 'follower':
        this.#stepFollower(m);
        return;
      default:
        unreachable(this.role);
    }
  }

  // ---- roles -------------------------------------------------------------------------------

  becomeFollower(term: number, leader: NodeId | null): void {
    if (term !== this.term) {
      this.term = term;
      this.vote = null;
    }
    this.role = 'follower';
    this.leader = leader;
    this.#reset();
  }

  #becomePreCandidate(): void {
    this.role = 'preCandidate';
    this.leader = null;
    this.#votes = new Map();
    this.electionElapsed = 0;
    this.#resetRandomizedElectionTicks();
  }

  #becomeCandidate(): void {
    this.term += 1;
    this.vote = this.id;
    this.role = 'candidate';
    this.leader = null;
    this.#reset();
  }

  #becomeLeader(): void {
    this.role = 'leader';
    this.leader = this.id;
    this.#reset();
    const next = this.log.lastIndex() + 1;
    for (const id of [...this.voters, ...this.learners]) {
      this.progress.set(id, new Progress(next, this.#opts.inflightMax, this.learners.has(id)));
    }
    this.progress.get(this.id)?.becomeReplicate();
    this.#ackSelf();
    this.#appendEntries([{ kind: 'noop' }]);
    this.#pendingConfIndex = this.log.lastIndex();
    this.#bcastAppend();
  }

  #reset(): void {
    this.quiesced = false;
    this.#idleTicks = 0;
    this.electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    this.#resetRandomizedElectionTicks();
    this.#votes = new Map();
    this.progress.clear();
    this.leadTransferee = null;
    this.#pendingReads = [];
    this.#deferredReads = [];
  }

  #resetRandomizedElectionTicks(): void {
    this.#randomizedElectionTicks = this.#opts.electionTicks + this.#opts.rand.int(this.#opts.electionTicks);
  }

  #tickElection(): void {
    this.electionElapsed++;
    if (this.isPromotable() && this.electionElapsed >= this.#randomizedElectionTicks) {
      this.electionElapsed = 0;
      this.#campaign(this.#opts.preVote ? 'preVote' : 'vote', false);
    }
  }

  #tickLeader(): void {
    this.#heartbeatElapsed++;
    this.electionElapsed++;
    for (const pr of this.progress.values()) {
      if (pr.state !== 'snapshot') continue;
      // A lost snapshot would otherwise stall this follower forever.
      if (++pr.snapshotTicks > 2 * this.#opts.electionTicks) pr.becomeProbe();
    }
    if (this.electionElapsed >= this.#opts.electionTicks) {
      this.electionElapsed = 0;
      if (this.#opts.checkQuorum) {
        const active = new Set<NodeId>([this.id]);
        for (const [id, pr] of this.progress) {
          if (pr.recentActive && this.#counts(id)) active.add(id);
          if (id !== this.id) pr.recentActive = false;
        }
        if (!hasQuorum([...this.voters], active)) {
          this.becomeFollower(this.term, null);
          return;
        }
      }
      if (this.leadTransferee !== null) this.leadTransferee = null; // transfer timed out
    }
    const peerAlive = this.#opts.peerAlive;
    if (this.#opts.quiesceAfterTicks > 0 && this.#isIdle() && (peerAlive === undefined || this.#votersMostlyAlive(peerAlive))) {
      if (++this.#idleTicks >= this.#opts.quiesceAfterTicks) {
        this.#quiesce();
        return;
      }
    } else {
      this.#idleTicks = 0;
    }
    if (this.#heartbeatElapsed >= this.#opts.heartbeatTicks) {
      this.#heartbeatElapsed = 0;
      this.#bcastHeartbeat();
    }
  }

  /** Leader: nothing to replicate, commit, read, transfer or change, and every member caught up. */
  #isIdle(): boolean {
    const last = this.log.lastIndex();
    if (this.log.committed !== last || this.leadTransferee !== null || this.#pendingConfIndex > this.log.committed) return false;
    if (this.#pendingReads.length > 0 || this.#deferredReads.length > 0 || this.#bcastPending) return false;
    for (const pr of this.progress.values()) if (pr.match !== last || pr.fresh !== undefined) return false;
    return true;
  }

  #quiesce(): void {
    this.quiesced = true;
    this.#idleTicks = 0;
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      this.#send(id, { kind: 'heartbeat', commit: Math.min(pr.match, this.log.committed), readSeq: this.#readSeq, quiesce: true });
    }
  }

  #unquiesce(from: NodeId | null): void {
    this.quiesced = false;
    this.#idleTicks = 0;
    if (this.role === 'leader') {
      // Heartbeat at once: woken followers reset their election timers before they time out.
      this.electionElapsed = 0;
      for (const pr of this.progress.values()) pr.recentActive = true;
      this.#heartbeatElapsed = 0;
      this.#bcastHeartbeat();
      return;
    }
    this.electionElapsed = 0;
    if (this.leader !== null && from !== this.leader) this.#send(this.leader, { kind: 'heartbeatResp', readSeq: 0, wake: true });
  }

  #campaign(kind: 'preVote' | 'vote', force: boolean): void {
    if (kind === 'preVote') this.#becomePreCandidate();
    else this.#becomeCandidate();
    const term = kind === 'preVote' ? this.term + 1 : this.term;
    this.#votes.set(this.id, true);
    if (voteResult([...this.voters], this.#votes) === 'won') {
      if (kind === 'preVote') this.#campaign('vote', force);
      else this.#becomeLeader();
      return;
    }
    for (const id of this.voters) {
      if (id === this.id) continue;
      this.#sendWithTerm(id, term, { kind, lastIndex: this.log.lastIndex(), lastTerm: this.log.lastTerm(), force });
    }
  }

  #stepCandidate(m: Message): void {
    switch (m.kind) {
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        this.becomeFollower(m.term, m.from);
        this.#stepFollower(m);
        return;
      case 'preVoteResp':
      case 'voteResp': {
        if ((m.kind === 'preVoteResp') !== (this.role === 'preCandidate')) return;
        this.#votes.set(m.from, !m.reject);
        const result = voteResult([...this.voters], this.#votes);
        if (result === 'won') {
          if (this.role === 'preCandidate') this.#campaign('vote', false);
          else this.#becomeLeader();
        } else if (result === 'lost') {
          this.becomeFollower(this.term, null);
        }
        return;
      }
      case 'appendResp':
      case 'heartbeatResp':
      case 'timeoutNow':
      case 'readIndex':
      case 'readIndexResp':
      case 'preVote':
      case 'vote':
        return;
      default:
        unreachable(m);
    }
  }

  /** A leader speaks in our term: after `forgetLeader` its short timeout is undone. */
  #heardFromLeader(from: NodeId): void {
    if (this.leader === null) this.#resetRandomizedElectionTicks();
    this.electionElapsed = 0;
    this.leader = from;
  }

  #stepFollower(m: Message): void {
    switch (m.kind) {
      case 'append':
        this.#heardFromLeader(m.from);
        this.#handleAppend(m);
        this.#shownByLeader(Math.max(m.prevIndex, m.commit));
        return;
      case 'heartbeat':
        this.#heardFromLeader(m.from);
        // The leader sends min(match, commit), so this never passes our matched prefix... unless
        // that match is our old self's: a fresh replica takes its commit from appends alone,
        // which check the log (a deposed leader may have filled it with other entries).
        if (m.commit > this.log.committed && !this.catchingUp) this.#commitTo(Math.min(m.commit, this.log.lastIndex()));
        // ...unless this log lost what it acknowledged (a new data directory under this id): say
        // so as a rejection, which an idle leader would otherwise never get.
        if (m.commit > this.log.lastIndex()) this.#send(m.from, { kind: 'appendResp', index: m.commit, reject: true, rejectHint: this.log.lastIndex() });
        this.#shownByLeader(m.commit);
        if (m.quiesce === true) {
          // No answer: an answer would wake the leader. A follower that is not caught up stays
          // awake, times out and wakes the group through its election messages.
          if (this.log.committed >= m.commit) this.quiesced = true;
          return;
        }
        this.#send(m.from, { kind: 'heartbeatResp', readSeq: m.readSeq });
        return;
      case 'snapshot':
        this.#heardFromLeader(m.from);
        this.#handleSnapshot(m);
        this.#shownByLeader(m.snapshot.meta.index);
        return;
      case 'timeoutNow':
        if (this.isPromotable()) this.#campaign('vote', true);
        return;
      case 'readIndexResp':
        if (!m.reject) this.#readStates.push({ ctx: m.ctx, index: m.index });
        return;
      case 'readIndex':
        if (this.leader !== null) this.#send(m.from, { kind: 'readIndexResp', ctx: m.ctx, index: 0, reject: true });
        return;
      case 'appendResp':
      case 'heartbeatResp':
      case 'preVoteResp':
      case 'voteResp':
      case 'preVote':
      case 'vote':
        return;
      default:
        unreachable(m);
    }
  }

  #stepLeader(m: Message): void {
    switch (m.kind) {
      case 'appendResp': {
        const pr = this.progress.get(m.from);
        if (pr === undefined) return;
        pr.recentActive = true;
        this.#noteFresh(m.from, pr, m.fresh);
        if (m.reject) {
          // A follower rejects with hint 0 only while its log is empty: after it acknowledged
          // entries, it lost them (a new data directory under its id). Probing from the old
          // match, which it rejects for ever, it would never catch up: start from scratch (it
          // votes only once caught up, `catchingUp`).
          if (m.rejectHint === 0 && pr.match > 0) {
            pr.match = 0;
            pr.becomeProbe();
            this.#sendAppend(m.from, false);
            return;
          }
          if (pr.maybeDecrTo(m.index, m.rejectHint)) {
            if (pr.state === 'replicate') pr.becomeProbe();
            this.#sendAppend(m.from, false);
          }
          return;
        }
        const wasPaused = pr.isPaused();
        if (pr.maybeUpdate(m.index)) {
          if (pr.state === 'probe') pr.becomeReplicate();
          else if (pr.state === 'snapshot' && pr.match >= pr.pendingSnapshot) pr.becomeReplicate();
          else if (pr.state === 'replicate') pr.freeInflightTo(m.index);
          if (this.#maybeCommit()) {
            this.#bcastAppend();
          } else if (wasPaused) {
            this.#sendAppend(m.from, false);
          }
          // Fill the window while there is more to send.
          while (this.role === 'leader' && this.progress.get(m.from) === pr && this.#sendAppend(m.from, false)) {
            /* keep sending */
          }
          if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.#send(m.from, { kind: 'timeoutNow' });
        }
        return;
      }
      case 'heartbeatResp': {
        const pr = this.progress.get(m.from);
        if (pr === undefined) return;
        pr.recentActive = true;
        pr.probeSent = false;
        this.#noteFresh(m.from, pr, m.fresh);
        // Lost appends would keep a full window full forever: free a slot per heartbeat reply.
        if (pr.state === 'replicate' && pr.inflight.length >= pr.inflightMax) pr.inflight.shift();
        // Even an empty append: a follower that lost appends answers with a rejection and
        // the leader falls back to probing. A fresh one learns the commit (of its vouch) so.
        if (pr.match < this.log.lastIndex() || pr.fresh !== undefined) this.#sendAppend(m.from, true);
        this.#ackReads(m.from, m.readSeq);
        return;
      }
      case 'readIndex':
        if (!this.progress.has(m.from)) return;
        this.#leaderReadIndex(m.ctx, m.from);
        return;
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        // Same term, two leaders: impossible (one vote per term).
        throw new Error(`raft: leader ${this.id} got ${m.kind} from ${m.from} in its own term ${this.term}`);
      case 'timeoutNow':
      case 'readIndexResp':
      case 'preVoteResp':
      case 'voteResp':
      case 'preVote':
      case 'vote':
        return;
      default:
        unreachable(m);
    }
  }

  // ---- replication -------------------------------------------------------------------------

  #shownByLeader(index: number): void {
    if (this.#catchUpTo !== undefined) {
      // Fixed at the first sight: a target that followed the leader would never be reached under load.
      if (this.#catchUpTo === Infinity && index > 0) this.#catchUpTo = index;
      if (this.log.lastIndex() >= this.#catchUpTo) this.#catchUpTo = undefined;
    }
    // The rule before vouches (a rolling upgrade): caught up with that target is enough.
    if (this.#catchUpTo === undefined && this.#fresh !== undefined && !this.#vouching()) this.#fresh = undefined;
  }

  #vouching(): boolean {
    return this.#opts.vouching?.() ?? true;
  }

  /**
   * Leader: whether `id`'s acknowledgements count toward quorums. A fresh replica's do not:
   * a deposed leader could otherwise catch it up on its own shorter log and commit with it
   * what its successor overwrote. With two voters or fewer they do: no other leader can have
   * been elected behind this one's back (it would have needed this one's vote), and a fresh
   * replica of the two could never be vouched for without its own count.
   */
  #counts(id: NodeId): boolean {
    return id === this.id || this.voters.size <= 2 || !this.#vouching() || this.progress.get(id)?.fresh === undefined;
  }

  /**
   * Leader: what a member's answer says of its incarnation. A new fresh one: the match we knew
   * was its old self's (its log may differ below it, filled by a deposed leader), so probe
   * again from our last index down, by its rejections. A fresh one this leader has not vouched
   * for yet: propose a vouch (once per incarnation and leader; a refused proposal, while
   * transferring, is asked again at the next answer).
   */
  #noteFresh(id: NodeId, pr: Progress, fresh: string | undefined): void {
    if (fresh !== undefined && fresh !== pr.fresh) {
      pr.match = 0;
      pr.becomeProbe();
      pr.next = this.log.lastIndex() + 1;
    }
    pr.fresh = fresh;
    if (fresh === undefined || pr.vouchFor === fresh || !this.#vouching()) return;
    const r = this.#proposeEntry({ kind: 'vouch', node: id, incarnation: fresh });
    if (!r.ok) return;
    pr.vouchFor = fresh;
    pr.vouchIndex = r.index;
  }

  #handleAppend(m: Extract<Message, { kind: 'append' }>): void {
    if (m.prevIndex < this.log.committed) {
      this.#send(m.from, { kind: 'appendResp', index: this.log.committed, reject: false, rejectHint: 0 });
      return;
    }
    if (!this.log.matchTerm(m.prevIndex, m.prevTerm)) {
      const hint = this.log.findConflictByTerm(m.prevIndex, m.prevTerm);
      this.#send(m.from, { kind: 'appendResp', index: m.prevIndex, reject: true, rejectHint: hint });
      return;
    }
    const conflict = this.log.findConflict(m.entries);
    if (conflict !== 0) this.log.append(m.entries.slice(conflict - m.entries[0]!.index));
    const lastNew = m.prevIndex + m.entries.length;
    this.#commitTo(Math.min(m.commit, lastNew));
    this.#send(m.from, { kind: 'appendResp', index: lastNew, reject: false, rejectHint: 0 });
  }

  #handleSnapshot(m: Extract<Message, { kind: 'snapshot' }>): void {
    const snap = m.snapshot;
    const { index, term } = snap.meta;
    // Whatever the case below, this replica holds the snapshot's state once it answers.
    if (m.vouch !== undefined && m.vouch === this.#fresh) this.#vouched();
    if (index <= this.log.committed) {
      this.#send(m.from, { kind: 'appendResp', index: this.log.committed, reject: false, rejectHint: 0 });
      return;
    }
    if (this.log.matchTerm(index, term)) {
      // We already hold the snapshot's last entry: just fast-forward the commit.
      this.#commitTo(index);
      this.#send(m.from, { kind: 'appendResp', index: this.log.committed, reject: false, rejectHint: 0 });
      return;
    }
    this.log.restore(snap);
    this.#setConf(snap.meta.conf);
    this.#confHistory = [{ index, conf: snap.meta.conf }];
    this.#send(m.from, { kind: 'appendResp', index: this.log.lastIndex(), reject: false, rejectHint: 0 });
  }

  /** Send an append (or a snapshot when the needed entries are compacted). True if sent. */
  #sendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || to === this.id || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const last = this.log.lastIndex();
    const entries = prevTerm === undefined ? undefined : this.log.slice(pr.next, Math.min(last + 1, pr.next + this.#opts.appendEntriesMax));
    if (prevTerm === undefined || entries === undefined) {
      if (!pr.recentActive) return false;
      const snapshot = this.log.snapshot();
      pr.becomeSnapshot(snapshot.meta.index);
      // The vouch for it is inside (committed, applied, compacted): say so, it will not see the entry.
      const covered = pr.fresh !== undefined && pr.vouchFor === pr.fresh && snapshot.meta.index >= pr.vouchIndex;
      this.#send(to, covered ? { kind: 'snapshot', snapshot, vouch: pr.fresh } : { kind: 'snapshot', snapshot });
      return true;
    }
    if (entries.length === 0 && !sendIfEmpty && pr.state === 'replicate') return false;
    this.#send(to, { kind: 'append', prevIndex, prevTerm, entries, commit: this.log.committed });
    if (entries.length > 0) pr.sentEntries(entries[entries.length - 1]!.index);
    else if (pr.state === 'probe') pr.probeSent = true;
    return true;
  }

  #bcastAppend(): void {
    for (const id of this.progress.keys()) if (id !== this.id) this.#sendAppend(id, true);
  }

  #bcastHeartbeat(): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      this.#send(id, { kind: 'heartbeat', commit: Math.min(pr.match, this.log.committed), readSeq: this.#readSeq });
    }
  }

  #appendEntries(payloads: readonly EntryPayload[]): { index: number; term: number } {
    let index = this.log.lastIndex();
    const entries = payloads.map((p) => ({ ...p, index: ++index, term: this.term }) as Entry);
    // Not counted for our own match yet: only once persisted (`advance`).
    this.log.append(entries);
    return { index, term: this.term };
  }

  /**
   * Leader: raise our own match to the end of the persisted prefix of our log (every index
   * below the unstable tail is on disk and matches it; nothing is while a received snapshot
   * is unpersisted). True when that committed something.
   */
  #ackSelf(): boolean {
    const pr = this.progress.get(this.id);
    if (pr === undefined || this.log.unstableSnapshot !== undefined) return false;
    return pr.maybeUpdate(this.log.offset - 1) && this.#maybeCommit();
  }

  #proposeEntry(payload: EntryPayload): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'not_leader', leader: this.leader };
    if (this.leadTransferee !== null) return { ok: false, reason: 'transferring', leader: this.leader };
    this.wake();
    const { index, term } = this.#appendEntries([payload]);
    this.#bcastPending = true;
    return { ok: true, index, term };
  }

  /** Commit by counting, and only entries of the current term (Raft §5.4.2). */
  #maybeCommit(): boolean {
    const voters = [...this.voters];
    const index = committedIndex(voters, (id) => (this.#counts(id) ? (this.progress.get(id)?.match ?? 0) : 0));
    if (index <= this.log.committed || this.log.term(index) !== this.term) return false;
    this.#commitTo(index);
    return true;
  }

  #commitTo(index: number): void {
    if (index <= this.log.committed) return;
    const from = this.log.committed;
    const wasCommittedInTerm = this.role === 'leader' && this.log.term(from) === this.term;
    this.log.commitTo(index);
    this.#applyCommitted(from, index);
    if (this.role === 'leader' && !wasCommittedInTerm && this.log.term(this.log.committed) === this.term) {
      const deferred = this.#deferredReads;
      this.#deferredReads = [];
      for (const r of deferred) this.#leaderReadIndex(r.ctx, r.from);
    }
  }

  // ---- membership --------------------------------------------------------------------------

  #setConf(conf: ConfState): void {
    this.voters = new Set(conf.voters);
    this.learners = new Set(conf.learners);
  }

  #applyCommitted(from: number, to: number): void {
    if (to <= from) return;
    const entries = this.log.slice(from + 1, to + 1);
    if (entries === undefined) return;
    for (const e of entries) {
      if (e.kind === 'conf') this.#applyConfChange(e.index, e.change);
      else if (e.kind === 'vouch' && e.node === this.id && e.incarnation === this.#fresh) this.#vouched();
    }
  }

  /**
   * A committed vouch for this incarnation: it stands for its acknowledgements again. No vote
   * in this term (whatever the old self granted in it is lost), so none is granted until the next.
   */
  #vouched(): void {
    this.#fresh = undefined;
    this.#catchUpTo = undefined;
    if (this.vote === null) this.vote = this.id;
  }

  #applyConfChange(index: number, change: ConfChange): void {
    const conf = applyConfChange(this.confState(), change);
    this.#setConf(conf);
    this.#confHistory.push({ index, conf });
    if (this.role !== 'leader') return;
    for (const id of [...this.voters, ...this.learners]) {
      const pr = this.progress.get(id);
      if (pr === undefined) this.progress.set(id, new Progress(this.log.lastIndex() + 1, this.#opts.inflightMax, this.learners.has(id)));
      else pr.isLearner = this.learners.has(id);
    }
    for (const id of [...this.progress.keys()]) if (!this.voters.has(id) && !this.learners.has(id)) this.progress.delete(id);
    if (this.leadTransferee !== null && !this.voters.has(this.leadTransferee)) this.leadTransferee = null;
    if (!this.voters.has(this.id)) {
      // Removed ourselves: tell the others the commit, then step down.
      this.#bcastAppend();
      this.becomeFollower(this.term, null);
      return;
    }
    // The quorum may have shrunk.
    if (this.#maybeCommit()) this.#bcastAppend();
  }

  // ---- reads -------------------------------------------------------------------------------

  #leaderReadIndex(ctx: string, from: NodeId): void {
    this.wake();
    if (this.log.term(this.log.committed) !== this.term) {
      this.#deferredReads.push({ ctx, from });
      return;
    }
    const index = this.log.committed;
    if (this.voters.size === 1 && this.voters.has(this.id)) {
      this.#releaseRead({ ctx, from, index, seq: 0, acks: new Set() });
      return;
    }
    const seq = ++this.#readSeq;
    this.#pendingReads.push({ ctx, from, index, seq, acks: new Set([this.id]) });
    this.#bcastHeartbeat();
  }

  #ackReads(from: NodeId, seq: number): void {
    if (this.#pendingReads.length === 0 || !this.voters.has(from) || !this.#counts(from)) return;
    for (const r of this.#pendingReads) if (r.seq <= seq) r.acks.add(from);
    const voters = [...this.voters];
    while (this.#pendingReads.length > 0 && hasQuorum(voters, this.#pendingReads[0]!.acks)) {
      this.#releaseRead(this.#pendingReads.shift()!);
    }
  }

  #releaseRead(r: PendingRead): void {
    if (r.from === this.id) this.#readStates.push({ ctx: r.ctx, index: r.index });
    else this.#send(r.from, { kind: 'readIndexResp', ctx: r.ctx, index: r.index, reject: false });
  }

  // ---- messages ----------------------------------------------------------------------------

  #send(to: NodeId, body: MessageBody): void {
    this.#sendWithTerm(to, this.term, body);
  }

  #sendWithTerm(to: NodeId, term: number, body: MessageBody): void {
    let extra: { fresh: string } | { commit: number; commitTerm: number } | undefined;
    if (body.kind === 'appendResp' || body.kind === 'heartbeatResp') {
      if (this.#fresh !== undefined) extra = { fresh: this.#fresh };
    } else if (isElection(body)) {
      // Only election messages carry the commit (rare): every append and heartbeat goes through here.
      const commitTerm = this.log.term(this.log.committed);
      if (commitTerm !== undefined) extra = { commit: this.log.committed, commitTerm };
    }
    this.#msgs.push({ ...body, ...extra, group: this.group, from: this.id, to, term } as Message);
  }
}

/** Pre-votes, votes and their answers: the messages that carry the sender's commit. */
function isElection<M extends { readonly kind: Message['kind'] }>(m: M): m is Extract<M, { readonly kind: 'preVote' | 'vote' | 'preVoteResp' | 'voteResp' }> {
  return m.kind === 'preVote' || m.kind === 'vote' || m.kind === 'preVoteResp' || m.kind === 'voteResp';
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

function sameSoftState(a: SoftState, b: SoftState): boolean {
  return a.role === b.role && a.leader === b.leader && a.term === b.term;
}
