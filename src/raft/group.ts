// The driver of one Raft group: the only code that does I/O around the pure core. It ticks
// on a timer, and drains Ready in the contract's order: send the early messages -> persist
// (synced) -> send -> restore / apply -> advance. Proposals resolve when applied here, or reject (not_leader / timeout).
import type { Rand } from '../core/rand.js';
import { FirkinError } from '../core/errors.js';
import { DEFAULT_RAFT_OPTIONS, RaftCore, type ProposeResult } from './core.js';
import type { RocksLog } from './rocks-log.js';
import type { Ticker } from './ticker.js';
import type { ConfChange, Entry, GroupId, Message, NodeId, Ready, SoftState } from './types.js';

export interface StateMachine {
  /** Apply one committed entry (noop and conf entries included, in log order). */
  apply(entry: Entry): unknown;
  snapshot(): Uint8Array | Promise<Uint8Array>;
  restore(data: Uint8Array): void | Promise<void>;
}

export interface RaftGroupOptions {
  id: NodeId;
  group: GroupId;
  log: RocksLog;
  fsm: StateMachine;
  /** Hands messages to the transport (called only after they are safe to send). */
  send(messages: readonly Message[]): void;
  rand: Rand;
  /** The node's one clock for all its groups. */
  ticker: Ticker;
  electionTicks: number;
  heartbeatTicks: number;
  /** Idle ticks before the leader quiesces the group (0 or absent: never; needs `peerAlive`). */
  quiesceAfterTicks?: number;
  /** A node-level liveness signal: a quiesced follower wakes when its leader's node looks dead. */
  peerAlive?(node: NodeId): boolean;
  /**
   * The transport's link to `node` was up and broke (a killed process refuses at once): a
   * follower that has also missed a heartbeat forgets that leader and campaigns early.
   */
  linkLost?(node: NodeId): boolean;
  proposalTimeoutMs: number;
  /**
   * The state machine's durable applied index (read after the stored snapshot is restored):
   * committed entries up to it are not handed to `apply` again after a restart. Only for a
   * state machine that persists its data with the index; an in-memory one replays.
   */
  appliedIndex?(): number;
  /** Take a snapshot and compact once this many entries were applied since the last one. */
  snapshotEveryEntries: number;
  retainEntries: number;
  /** An index the log must not be compacted past (entries after it are still to be read), if any. */
  compactFloor?(): number | undefined;
  onSoftState?(state: SoftState): void;
  /** The group stopped on a failed write or apply (`failure`): called once, for the log. */
  onFailure?(err: Error): void;
  /** Whether every member speaks the vouch protocol (`RaftOptions.vouching`; default yes). */
  vouching?(): boolean;
}

interface Waiter {
  term: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/** A caller of `readBarrier`, waiting for its round. */
interface ReadBarrierWaiter {
  resolve(): void;
  reject(err: unknown): void;
}

export class RaftGroup {
  readonly core: RaftCore;
  readonly #o: RaftGroupOptions;
  #untick: (() => void) | undefined;
  #draining = false;
  #again = false;
  #closed = false;
  #waiters = new Map<number, Waiter>();
  /** ReadIndex rounds asked of the core, by ctx; `term` and `leader` as they were when asked. */
  #reads = new Map<string, { index: number | undefined; term: number; leader: NodeId | null; resolve(): void; reject(err: unknown): void; timer: NodeJS.Timeout }>();
  #readSeq = 0;
  /** Barriers waiting for the next ReadIndex round (`readBarrier`), and whether one runs now. */
  #nextReadRound: ReadBarrierWaiter[] | undefined;
  #readRoundRunning = false;
  #idle: (() => void)[] = [];
  /** Failure of the persistence path: fatal, the group stops. */
  failure: Error | undefined;

  constructor(o: RaftGroupOptions) {
    this.#o = o;
    this.core = new RaftCore({
      ...DEFAULT_RAFT_OPTIONS,
      id: o.id,
      group: o.group,
      storage: o.log.mem,
      rand: o.rand,
      electionTicks: o.electionTicks,
      heartbeatTicks: o.heartbeatTicks,
      quiesceAfterTicks: o.peerAlive === undefined ? 0 : (o.quiesceAfterTicks ?? 0),
      fresh: o.log.fresh,
      ...(o.vouching === undefined ? {} : { vouching: () => o.vouching!() }),
      ...(o.peerAlive === undefined ? {} : { peerAlive: (node: NodeId) => o.peerAlive!(node) }),
    });
  }

  /** Restore the state machine from the stored snapshot, then start ticking. */
  async start(): Promise<void> {
    const snap = this.#o.log.mem.snapshot();
    if (snap.meta.index > 0) await this.#o.fsm.restore(snap.data);
    if (this.#closed) return; // closed while the snapshot loaded
    const durable = Math.min(this.#o.appliedIndex?.() ?? 0, this.core.log.committed);
    if (durable > this.core.log.applied) this.core.log.applied = this.core.log.applying = durable;
    this.#untick = this.#o.ticker.register(() => this.#tick());
    this.#kick();
  }

  #tick(): void {
    const core = this.core;
    if (core.quiesced) {
      // Silent and idle: nothing to do unless the leader's node stopped answering, or, leading,
      // a majority of the voters' nodes did (`shouldWake`).
      if (!core.shouldWake()) return;
      core.wake();
    }
    core.tick();
    const leader = core.leader;
    if (core.role === 'follower' && leader !== null && core.electionElapsed > this.#o.heartbeatTicks && this.#o.linkLost?.(leader) === true) {
      core.forgetLeader();
    }
    this.#kick();
  }

  /** Leave quiescence now (a caller about to need the group). */
  wake(): void {
    if (!this.core.quiesced) return;
    this.core.wake();
    this.#kick();
  }

  step(m: Message): void {
    if (this.#closed) return;
    this.core.step(m);
    this.#kick();
  }

  /** `catching_up`: this replica opened empty and neither votes nor campaigns until it holds what a leader showed it. */
  status(): { role: string; term: number; leader: NodeId | null; commit: number; applied: number; lastIndex: number; quiesced: boolean; catching_up: boolean } {
    const c = this.core;
    return { role: c.role, term: c.term, leader: c.leader, commit: c.log.committed, applied: c.log.applied, lastIndex: c.log.lastIndex(), quiesced: c.quiesced, catching_up: c.catchingUp };
  }

  /** Resolves with the state machine's result for this entry once applied on this node. */
  propose(data: Uint8Array): Promise<unknown> {
    return this.#wait(this.core.propose(data));
  }

  proposeConfChange(change: ConfChange): Promise<unknown> {
    return this.#wait(this.core.proposeConfChange(change));
  }

  transferLeadership(to: NodeId): boolean {
    const ok = this.core.transferLeadership(to);
    this.#kick();
    return ok;
  }

  /**
   * A linearizable read barrier: resolves once this node applied everything committed before the
   * call. Barriers share ReadIndex rounds, as etcd's read loop does: one round at a time; the
   * barriers asked while it runs wait for the next, started when it ends. Each barrier of a round
   * was asked before the round began, so the round's index covers every write acknowledged before
   * it was asked; and a stream of concurrent reads costs one heartbeat round per round trip, not
   * one each.
   */
  readBarrier(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      (this.#nextReadRound ??= []).push({ resolve, reject });
      if (!this.#readRoundRunning) this.#startReadRound();
    });
  }

  #startReadRound(): void {
    const barriers = this.#nextReadRound ?? [];
    this.#nextReadRound = undefined;
    this.#readRoundRunning = true;
    // The next round starts before this one's barriers resume: a barrier asked after one of
    // them resolved finds no round running, and starts one (or joins the one just started).
    const end = (settle: (b: ReadBarrierWaiter) => void) => {
      this.#readRoundRunning = false;
      if (this.#nextReadRound !== undefined) this.#startReadRound();
      for (const b of barriers) settle(b);
    };
    this.#readRound().then(
      () => end((b) => b.resolve()),
      (err: unknown) => end((b) => b.reject(err)),
    );
  }

  /** One ReadIndex round: resolves once this node applied the index the quorum confirmed. */
  #readRound(): Promise<void> {
    if (this.#closed) return Promise.reject(new FirkinError('unavailable', 'raft group closed'));
    const ctx = `${this.#o.id}:${++this.#readSeq}`;
    if (!this.core.readIndex(ctx)) return Promise.reject(this.#notLeader());
    this.#kick();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#reads.delete(ctx);
        reject(new FirkinError('timeout', 'read was not confirmed by a quorum in time'));
      }, this.#o.proposalTimeoutMs);
      this.#reads.set(ctx, { index: undefined, term: this.core.term, leader: this.core.leader, resolve, reject, timer });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#untick?.();
    if (this.#draining) await new Promise<void>((r) => this.#idle.push(r));
    const err = new FirkinError('unavailable', 'raft group closed');
    for (const w of this.#waiters.values()) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    for (const r of this.#reads.values()) {
      clearTimeout(r.timer);
      r.reject(err);
    }
    this.#waiters.clear();
    this.#reads.clear();
  }

  #notLeader(): FirkinError {
    const leader = this.core.leader;
    return new FirkinError('not_leader', leader === null ? 'no leader is known' : `the leader is ${leader}`, { details: { leader } });
  }

  #wait(r: ProposeResult): Promise<unknown> {
    if (!r.ok) {
      if (r.reason === 'not_leader' || r.reason === 'transferring') return Promise.reject(this.#notLeader());
      return Promise.reject(new FirkinError('conflict', `proposal refused: ${r.reason}`));
    }
    this.#kick();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(r.index);
        reject(new FirkinError('timeout', `entry ${r.index} was not applied in time (it may still commit)`));
      }, this.#o.proposalTimeoutMs);
      this.#waiters.set(r.index, { term: r.term, resolve, reject, timer });
    });
  }

  #kick(): void {
    if (this.#closed && !this.#draining) return;
    if (this.#draining) {
      this.#again = true;
      return;
    }
    this.#draining = true;
    setImmediate(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    try {
      do {
        this.#again = false;
        for (let rd = this.core.ready(); rd !== undefined; rd = this.core.ready()) await this.#handle(rd);
      } while (this.#again && !this.#closed);
    } catch (err) {
      // A failed synced write leaves us unsure what is durable: stop rather than guess.
      this.failure = err as Error;
      this.#closed = true;
      this.#untick?.();
      this.#o.onFailure?.(this.failure);
    } finally {
      this.#draining = false;
      for (const r of this.#idle.splice(0)) r();
    }
  }

  async #handle(rd: Ready): Promise<void> {
    const o = this.#o;
    if (rd.earlyMessages.length > 0) o.send(rd.earlyMessages); // a leader's appends overlap its fsync
    await o.log.save(rd); // durable first
    if (o.log.fresh !== undefined && !this.core.catchingUp) await o.log.clearFresh(); // the vouch it holds is durable now
    if (rd.messages.length > 0) o.send(rd.messages); // then talk
    if (rd.snapshot !== undefined) await o.fsm.restore(rd.snapshot.data);
    for (const e of rd.committed) {
      const result = await o.fsm.apply(e); // then apply, in order
      const w = this.#waiters.get(e.index);
      if (w === undefined) continue;
      this.#waiters.delete(e.index);
      clearTimeout(w.timer);
      if (w.term === e.term) w.resolve(result);
      else w.reject(new FirkinError('not_leader', `entry ${e.index} was overwritten by a newer leader`, { details: { leader: this.core.leader } }));
    }
    this.core.advance(rd);
    if (rd.softState.role !== 'leader') {
      // Proposals whose slot was already taken by another leader's entry can never apply.
      for (const [index, w] of this.#waiters) {
        const term = this.core.log.term(index);
        if (term !== undefined && term !== w.term) {
          this.#waiters.delete(index);
          clearTimeout(w.timer);
          w.reject(new FirkinError('not_leader', `entry ${index} was overwritten by a newer leader`, { details: { leader: this.core.leader } }));
        }
      }
    }
    for (const rs of rd.readStates) {
      const r = this.#reads.get(rs.ctx);
      if (r !== undefined) r.index = rs.index;
    }
    const applied = this.core.log.applied;
    for (const [ctx, r] of this.#reads) {
      const confirmed = r.index !== undefined;
      // A round not confirmed yet when the leader it went to changed (a transfer, a step-down,
      // an election) never will be: the core dropped it. Refuse it now, so the caller asks the
      // new leader, rather than at its timeout.
      const lost = !confirmed && (this.core.term !== r.term || this.core.leader !== r.leader);
      if (!lost && !(confirmed && r.index! <= applied)) continue;
      this.#reads.delete(ctx);
      clearTimeout(r.timer);
      if (lost) r.reject(this.#notLeader());
      else r.resolve();
    }
    o.onSoftState?.(rd.softState);
    if (applied - o.log.mem.snapshot().meta.index >= o.snapshotEveryEntries) {
      const data = await o.fsm.snapshot();
      const floor = o.compactFloor?.();
      const retain = floor === undefined ? o.retainEntries : Math.max(o.retainEntries, applied - floor);
      await o.log.createSnapshot({ index: applied, conf: this.core.confStateAt(applied) }, data, retain);
      this.core.compactConfHistory(applied);
    }
  }
}
