// Deterministic simulation of N pure Raft cores over a simulated network (TigerBeetle VOPR
// style). One seed picks the options (swarm testing) and every fault; rerunning a seed replays
// the run exactly. Safety is checked after every tick, liveness once the network heals.
import { RaftCore, DEFAULT_RAFT_OPTIONS } from '../../../src/raft/core.js';
import { MemoryStorage } from '../../../src/raft/storage.js';
import type { ConfChange, Entry, Message, NodeId, Ready } from '../../../src/raft/types.js';
import { SeededRand } from './rand.js';

export interface SimOptions {
  nodeCount: number;
  /** Extra nodes that start with an empty log and no membership; they can only join as learners. */
  spareCount: number;
  ticks: number;
  dropRate: number;
  duplicateRate: number;
  delayTicksMax: number;
  /** Probability per tick that the partition changes. */
  partitionRate: number;
  /** Probability per tick that an up node crashes (losing what it had not persisted). */
  crashRate: number;
  downTicksMax: number;
  /**
   * Probability that a crash also loses the disk: the node comes back under its id on an empty
   * log (Raft's lost-disk hazard; core.ts `catchingUp`), after at least `WIPED_DOWN_TICKS` (a
   * new machine), and only while no other replica awaits its vouch (one lost disk at a time).
   */
  wipeRate: number;
  proposeRate: number;
  /** Probability per tick that the leader proposes a membership change. */
  confChangeRate: number;
  transferRate: number;
  /** Per node: probability that it ticks in a given simulated tick (clock skew). */
  tickRates: number[];
  compactEvery: number;
  retainEntries: number;
  electionTicks: number;
  appendEntriesMax: number;
  inflightMax: number;
  /** 0: never quiesce; else idle ticks before the leader silences the group (woken by node liveness). */
  quiesceAfterTicks: number;
  /**
   * A synced Ready reaches the disk 0..this many ticks after it is handed out; its early
   * messages (a leader's appends) go at once, the rest once it is on disk, and a crash meanwhile
   * loses it. Models `RaftGroup`, whose steps interleave with a running fsync.
   */
  persistDelayTicksMax: number;
  /**
   * A follower forgets its leader once its own link to the leader is gone and a heartbeat was
   * missed (`RaftGroup`'s `linkLost`), and so campaigns early: more elections, same safety.
   */
  forgetLostLeader: boolean;
}

const GROUP = 'g1';
/** A lost disk comes back no sooner: longer than any candidacy (two election timeouts) and its delayed messages. */
const WIPED_DOWN_TICKS = 40;
const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

export function swarmOptions(rand: SeededRand, ticks: number): SimOptions {
  const nodeCount = rand.chance(0.5) ? 3 : 5;
  return {
    nodeCount,
    spareCount: rand.pick([0, 0, 1]),
    ticks,
    dropRate: rand.pick([0, 0.01, 0.05, 0.2]),
    duplicateRate: rand.pick([0, 0.02, 0.1]),
    delayTicksMax: rand.pick([0, 1, 3, 8]),
    partitionRate: rand.pick([0, 0.005, 0.02]),
    crashRate: rand.pick([0, 0.002, 0.01]),
    downTicksMax: rand.pick([5, 30, 100]),
    wipeRate: rand.pick([0, 0, 0.3]),
    proposeRate: rand.pick([0.02, 0.1, 0.5, 1]),
    confChangeRate: rand.pick([0, 0, 0.01]),
    transferRate: rand.pick([0, 0, 0.005]),
    tickRates: Array.from({ length: nodeCount + 1 }, () => rand.pick([1, 1, 0.8, 0.5])),
    compactEvery: rand.pick([10, 40, 1_000_000]),
    retainEntries: rand.pick([0, 5]),
    electionTicks: 10,
    // Small appends let an old-term entry reach a majority before the new leader's noop.
    appendEntriesMax: rand.pick([2, 8]),
    inflightMax: rand.pick([2, 4]),
    quiesceAfterTicks: rand.pick([0, 0, 3, 10]),
    persistDelayTicksMax: rand.pick([0, 1, 3]),
    forgetLostLeader: rand.chance(0.5),
  };
}

interface SimNode {
  readonly id: NodeId;
  storage: MemoryStorage;
  core: RaftCore | undefined;
  downUntil: number;
  /** Crashed with its disk: back on an empty log. */
  wiped: boolean;
  /**
   * The disk it lost, until its new replica is vouched for: what its old self acknowledged
   * still counted for commits decided after the loss (`#checkDurable`), and safely so, as the
   * new replica counts for nothing until vouched for.
   */
  lostDisk: MemoryStorage | undefined;
  /** Its fresh incarnation, kept across restarts until vouched for (RocksLog's `fresh` marker). */
  fresh: string | undefined;
  /** The state machine: every applied normal entry's value, in order. */
  values: string[];
  appliedIndex: number;
  /** Highest committed index already checked against the global record. */
  checkedCommit: number;
  /** The last entry already checked for log matching: its prefix is unchanged while it is. */
  checkedEntry: Entry | undefined;
  /** Term in which leader completeness was last checked for this node. */
  checkedLeaderTerm: number;
  /** A Ready whose write is running: on disk at `doneAt` (lost by a crash before). */
  persisting: { rd: Ready; doneAt: number } | undefined;
  /** Commit index up to which durability on a quorum was checked (or learned as a follower). */
  checkedDurableCommit: number;
}

interface Flight {
  deliverAt: number;
  msg: Message;
}

export class SimFailure extends Error {}

function fingerprint(e: Entry): string {
  switch (e.kind) {
    case 'noop':
      return 'noop';
    case 'normal':
      return `n:${utf8d.decode(e.data)}`;
    case 'conf':
      return `c:${e.change.type}:${e.change.node}`;
    case 'vouch':
      return `v:${e.node}:${e.incarnation}`;
  }
}

export class RaftSim {
  readonly rand: SeededRand;
  readonly nodes: SimNode[] = [];
  readonly ids: NodeId[];
  now = 0;
  #flights: Flight[] = [];
  /** blocked.has(`${from}>${to}`): that direction drops everything. */
  #blocked = new Set<string>();
  #leaders = new Map<number, NodeId>();
  /** (index:term) -> fingerprint and predecessor term: with induction, log matching. */
  #entriesSeen = new Map<string, { fp: string; prevTerm: number | undefined }>();
  #committed = new Map<number, { fp: string; term: number; observedTerm: number }>();
  #committedMax = 0;
  #appliedAt = new Map<number, string>();
  /** Proposals handed to a leader, by index and term; acknowledged once that leader applies them. */
  #pending = new Map<string, { value: string; node: NodeId }>();
  readonly acked = new Map<string, number>();
  #ackedIndexMax = 0;
  /** Outstanding read contexts -> highest acknowledged index when the read was requested. */
  #reads = new Map<string, number>();
  #readSeq = 0;
  readsConfirmed = 0;
  #nextValue = 0;
  healed = false;
  readonly log: string[] = [];

  constructor(
    readonly seed: number,
    readonly opts: SimOptions,
    rand: SeededRand,
  ) {
    this.rand = rand;
    this.ids = Array.from({ length: opts.nodeCount + opts.spareCount }, (_, i) => `n${i + 1}`);
    const initial = this.ids.slice(0, opts.nodeCount);
    for (const id of this.ids) {
      const storage = new MemoryStorage();
      if (initial.includes(id)) {
        // Bootstrap like every initial member would: the same conf entries at term 1, committed.
        storage.append(initial.map((v, i) => ({ index: i + 1, term: 1, kind: 'conf', change: { type: 'addVoter', node: v } }) as Entry));
        storage.setHardState({ term: 1, vote: null, commit: initial.length });
      }
      const node: SimNode = {
        id,
        storage,
        core: undefined,
        downUntil: 0,
        wiped: false,
        lostDisk: undefined,
        fresh: undefined,
        values: [],
        appliedIndex: 0,
        checkedCommit: 0,
        checkedEntry: undefined,
        checkedLeaderTerm: 0,
        persisting: undefined,
        checkedDurableCommit: 0,
      };
      this.nodes.push(node);
      this.#start(node);
    }
  }

  #start(node: SimNode): void {
    node.core = new RaftCore({
      ...DEFAULT_RAFT_OPTIONS,
      id: node.id,
      group: GROUP,
      storage: node.storage,
      rand: this.rand,
      electionTicks: this.opts.electionTicks,
      inflightMax: this.opts.inflightMax,
      appendEntriesMax: this.opts.appendEntriesMax,
      quiesceAfterTicks: this.opts.quiesceAfterTicks,
      peerAlive: (peer) => this.#linkAlive(peer, node.id),
      ...(node.fresh === undefined ? {} : { fresh: node.fresh }),
    });
    node.fresh = node.core.freshIncarnation;
    const snap = node.storage.snapshot();
    node.values = snap.meta.index === 0 ? [] : (JSON.parse(utf8d.decode(snap.data)) as string[]);
    node.appliedIndex = snap.meta.index;
    node.checkedCommit = Math.max(node.checkedCommit, 0);
    node.checkedDurableCommit = node.core.log.committed;
  }

  node(id: NodeId): SimNode {
    return this.nodes.find((n) => n.id === id)!;
  }

  up(): SimNode[] {
    return this.nodes.filter((n) => n.core !== undefined);
  }

  leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.up()) if (n.core!.role === 'leader' && (best === undefined || n.core!.term > best.core!.term)) best = n;
    return best;
  }

  // ---- one simulated tick ------------------------------------------------------------------

  tick(): void {
    this.now++;
    const o = this.opts;
    for (const [i, n] of this.nodes.entries()) {
      if (n.core === undefined) {
        if (this.now >= n.downUntil) {
          if (n.wiped) {
            n.wiped = false;
            n.fresh = undefined;
            n.lostDisk = n.storage;
            n.storage = new MemoryStorage();
            n.checkedCommit = 0;
            n.checkedEntry = undefined;
            n.checkedLeaderTerm = 0;
          }
          this.#start(n);
          this.log.push(`${this.now} restart ${n.id}${n.storage.lastIndex() === 0 ? ' (empty)' : ''}`);
        }
        continue;
      }
      const core = n.core;
      if (!core.catchingUp) {
        n.lostDisk = undefined; // vouched for
        n.fresh = undefined;
      }
      // The node-level liveness signal a real node has (link heartbeats, `peerAlive`): a
      // quiesced follower wakes when its leader's process is down or the link from it is cut, a
      // quiesced leader when a majority of its voters' are.
      if (core.shouldWake()) core.wake();
      if (this.healed || this.rand.chance(o.tickRates[i]!)) core.tick();
      const leader = core.leader;
      if (o.forgetLostLeader && core.role === 'follower' && leader !== null && core.electionElapsed > 1) {
        const linkLost = this.node(leader)?.core === undefined || this.#blocked.has(`${n.id}>${leader}`);
        if (linkLost) core.forgetLeader();
      }
    }
    this.#deliver();
    if (!this.healed) {
      if (this.rand.chance(o.partitionRate)) this.#repartition();
      if (this.rand.chance(o.crashRate)) {
        const victim = this.rand.pick(this.up());
        if (victim !== undefined) {
          const awaitingVouch = this.nodes.some((n) => n.wiped || n.lostDisk !== undefined);
          const wipe = !awaitingVouch && victim.storage.lastIndex() > 0 && this.rand.chance(o.wipeRate);
          this.crash(victim, wipe ? WIPED_DOWN_TICKS + this.rand.int(o.downTicksMax) : 1 + this.rand.int(o.downTicksMax), wipe);
        }
      }
    }
    if (!this.healed && this.rand.chance(o.proposeRate)) this.propose();
    if (!this.healed && this.rand.chance(o.confChangeRate)) this.#confChange();
    if (this.rand.chance(0.05)) {
      const n = this.rand.pick(this.up());
      const ctx = `r${this.#readSeq++}`;
      // Linearizability: the read must reflect every write acknowledged before it was asked.
      if (n?.core!.readIndex(ctx) === true) this.#reads.set(ctx, this.#ackedIndexMax);
    }
    if (!this.healed && this.rand.chance(o.transferRate)) {
      const l = this.leader();
      const voters = l === undefined ? [] : [...l.core!.voters].filter((id) => id !== l.id);
      if (l !== undefined && voters.length > 0) {
        const to = this.rand.pick(voters);
        if (l.core!.transferLeadership(to)) this.log.push(`${this.now} transfer ${l.id} -> ${to}`);
      }
    }
    for (const n of this.up()) this.drain(n);
    this.checkSafety();
  }

  #linkAlive(from: NodeId, to: NodeId): boolean {
    return this.node(from)?.core !== undefined && !this.#blocked.has(`${from}>${to}`);
  }

  disksLost = 0;

  crash(n: SimNode, downTicks: number, wipe = false): void {
    if (wipe) this.disksLost++;
    n.core = undefined;
    n.persisting = undefined; // the write had not reached the disk
    n.downUntil = this.now + downTicks;
    n.wiped = wipe;
    this.log.push(`${this.now} crash ${n.id} for ${downTicks}${wipe ? ', disk lost' : ''}`);
  }

  #repartition(): void {
    this.#blocked.clear();
    const mode = this.rand.int(4);
    if (mode === 0) {
      this.log.push(`${this.now} partition none`);
      return;
    }
    const side = new Set(this.ids.filter(() => this.rand.chance(0.5)));
    for (const a of this.ids) {
      for (const b of this.ids) {
        if (side.has(a) === side.has(b)) continue;
        // mode 1: symmetric split; mode 2: one-way (only side -> rest blocked); mode 3: random links
        if (mode === 1 || (mode === 2 && side.has(a)) || (mode === 3 && this.rand.chance(0.5))) this.#blocked.add(`${a}>${b}`);
      }
    }
    this.log.push(`${this.now} partition mode ${mode} [${[...this.#blocked].join(' ')}]`);
  }

  #send(msgs: readonly Message[]): void {
    const o = this.opts;
    for (const msg of msgs) {
      if (!this.healed) {
        if (this.#blocked.has(`${msg.from}>${msg.to}`)) continue;
        if (this.rand.chance(o.dropRate)) continue;
      }
      // A healed network still reorders, but with healthy latency (at most one tick).
      const delayTicksMax = this.healed ? Math.min(1, o.delayTicksMax) : o.delayTicksMax;
      this.#flights.push({ deliverAt: this.now + this.rand.int(delayTicksMax + 1), msg });
      if (!this.healed && this.rand.chance(o.duplicateRate)) this.#flights.push({ deliverAt: this.now + this.rand.int(o.delayTicksMax + 2), msg });
    }
  }

  #deliver(): void {
    const due: Message[] = [];
    const rest: Flight[] = [];
    for (const f of this.#flights) {
      if (f.deliverAt <= this.now) due.push(f.msg);
      else rest.push(f);
    }
    this.#flights = rest;
    // Reorder: a seeded shuffle of everything due this tick.
    for (let i = due.length - 1; i > 0; i--) {
      const j = this.rand.int(i + 1);
      [due[i], due[j]] = [due[j]!, due[i]!];
    }
    for (const m of due) {
      const n = this.node(m.to);
      if (n?.core === undefined) continue;
      n.core.step(m);
    }
  }

  propose(): string | undefined {
    const n = this.leader();
    if (n === undefined) return undefined;
    const value = `v${this.#nextValue++}`;
    const r = n.core!.propose(utf8.encode(value));
    if (!r.ok) return undefined;
    this.#pending.set(`${r.index}:${r.term}`, { value, node: n.id });
    return value;
  }

  #confChange(): void {
    const n = this.leader();
    if (n === undefined) return;
    const core = n.core!;
    const members = [...core.voters];
    const absent = this.ids.filter((id) => !core.voters.has(id) && !core.learners.has(id));
    // As the product does (shard-host, member): only a learner vouched for (not fresh) is promoted.
    const learners = [...core.learners].filter((id) => core.isCaughtUp(id, Number.MAX_SAFE_INTEGER));
    let change: ConfChange;
    if (learners.length > 0) change = { type: 'addVoter', node: this.rand.pick(learners) };
    else if (core.learners.size > 0) return;
    else if (absent.length > 0) change = { type: 'addLearner', node: this.rand.pick(absent) };
    else if (members.length > 3) change = { type: 'removeNode', node: this.rand.pick(members) };
    else return;
    const r = core.proposeConfChange(change);
    if (r.ok) this.log.push(`${this.now} conf ${change.type} ${change.node} at ${r.index} by ${n.id}`);
  }

  /**
   * The driver loop (the Ready contract): send the early messages, persist (maybe over a few
   * ticks, while the core keeps stepping), send, apply, advance.
   */
  drain(n: SimNode): void {
    const core = n.core!;
    if (n.persisting !== undefined) {
      if (this.now < n.persisting.doneAt) return;
      const rd = n.persisting.rd;
      n.persisting = undefined;
      this.#persisted(n, rd);
    }
    for (let rd: Ready | undefined = core.ready(); rd !== undefined; rd = core.ready()) {
      this.#send(rd.earlyMessages);
      const delayTicks = rd.mustSync && this.opts.persistDelayTicksMax > 0 ? this.rand.int(this.opts.persistDelayTicksMax + 1) : 0;
      if (delayTicks > 0) {
        n.persisting = { rd, doneAt: this.now + delayTicks };
        return;
      }
      this.#persisted(n, rd);
    }
    const applied = core.log.applied;
    if (applied - n.storage.snapshot().meta.index >= this.opts.compactEvery) {
      // Before compaction drops the membership history the check needs.
      if (core.role === 'leader') this.#checkDurable(n);
      n.storage.createSnapshot({ index: applied, conf: core.confStateAt(applied) }, utf8.encode(JSON.stringify(n.values)), this.opts.retainEntries);
      core.compactConfHistory(applied);
    }
  }

  /** The rest of a Ready once its write is on disk. */
  #persisted(n: SimNode, rd: Ready): void {
    const core = n.core!;
    if (rd.snapshot !== undefined) n.storage.applySnapshot(rd.snapshot);
    n.storage.append(rd.entries);
    if (rd.hardState !== undefined) n.storage.setHardState(rd.hardState);
    this.#send(rd.messages);
    if (rd.snapshot !== undefined) {
      n.values = JSON.parse(utf8d.decode(rd.snapshot.data)) as string[];
      n.appliedIndex = rd.snapshot.meta.index;
    }
    for (const e of rd.committed) this.#apply(n, e);
    for (const rs of rd.readStates) {
      const floor = this.#reads.get(rs.ctx);
      if (floor === undefined) continue;
      this.#reads.delete(rs.ctx);
      this.readsConfirmed++;
      if (rs.index < floor) this.fail(`stale read on ${n.id}: read index ${rs.index} < acknowledged ${floor}`);
    }
    core.advance(rd);
  }

  #apply(n: SimNode, e: Entry): void {
    if (e.index !== n.appliedIndex + 1) this.fail(`${n.id} applied ${e.index} after ${n.appliedIndex}`);
    n.appliedIndex = e.index;
    const fp = fingerprint(e);
    const seen = this.#appliedAt.get(e.index);
    if (seen === undefined) this.#appliedAt.set(e.index, fp);
    else if (seen !== fp) this.fail(`state machine safety: ${n.id} applied ${fp} at ${e.index}, another node applied ${seen}`);
    if (e.kind === 'normal') n.values.push(utf8d.decode(e.data));
    this.#recordCommitted(n, e);
    const p = this.#pending.get(`${e.index}:${e.term}`);
    if (p !== undefined && p.node === n.id) {
      this.#pending.delete(`${e.index}:${e.term}`);
      this.acked.set(p.value, e.index);
      this.#ackedIndexMax = Math.max(this.#ackedIndexMax, e.index);
    }
  }

  // ---- invariants --------------------------------------------------------------------------

  fail(why: string): never {
    throw new SimFailure(`SIM_SEED=${this.seed} tick ${this.now}: ${why}\nlast events:\n${this.log.slice(-15).join('\n')}`);
  }

  /** Committed entries are final and unique; remember each with the term it was first seen committed in. */
  #recordCommitted(n: SimNode, e: Entry): void {
    const rec = this.#committed.get(e.index);
    if (rec === undefined) {
      this.#committed.set(e.index, { fp: fingerprint(e), term: e.term, observedTerm: n.core!.term });
      this.#committedMax = Math.max(this.#committedMax, e.index);
    } else if (rec.fp !== fingerprint(e)) {
      this.fail(`committed entry ${e.index} differs on ${n.id}: ${fingerprint(e)} vs ${rec.fp}`);
    }
  }

  checkSafety(): void {
    for (const n of this.up()) {
      const core = n.core!;
      const log = core.log;
      if (core.role === 'leader') {
        const prev = this.#leaders.get(core.term);
        if (prev === undefined) this.#leaders.set(core.term, n.id);
        else if (prev !== n.id) this.fail(`two leaders in term ${core.term}: ${prev} and ${n.id}`);
      }
      if (!(log.applied <= log.applying && log.applying <= log.committed && log.committed <= log.lastIndex())) {
        this.fail(`${n.id} log indexes out of order`);
      }
      // Log matching, by induction over (index, term) -> (entry, predecessor's term).
      const first = log.firstIndex();
      const c = n.checkedEntry;
      const from = c !== undefined && c.index >= first && c.index <= log.lastIndex() && log.slice(c.index, c.index + 1)![0] === c ? c.index + 1 : first;
      const entries = log.slice(from, log.lastIndex() + 1)!;
      let prevTerm = log.term(from - 1);
      for (const e of entries) {
        const key = `${e.index}:${e.term}`;
        const fp = fingerprint(e);
        const seen = this.#entriesSeen.get(key);
        if (seen === undefined) this.#entriesSeen.set(key, { fp, prevTerm });
        else if (seen.fp !== fp || (seen.prevTerm !== undefined && prevTerm !== undefined && seen.prevTerm !== prevTerm)) {
          this.fail(`log matching: ${n.id} has ${fp} at ${key} (prev term ${prevTerm}); seen ${seen.fp} (prev term ${seen.prevTerm})`);
        }
        prevTerm = e.term;
      }
      if (entries.length > 0) n.checkedEntry = entries[entries.length - 1];
      // Committed entries are final and unique.
      const commitFrom = Math.max(n.checkedCommit, first - 1) + 1;
      const newlyCommitted = log.slice(commitFrom, log.committed + 1)!;
      for (let i = commitFrom; i <= log.committed; i++) {
        const e = newlyCommitted[i - commitFrom];
        if (e === undefined) continue;
        this.#recordCommitted(n, e);
      }
      n.checkedCommit = Math.max(n.checkedCommit, log.committed);
      if (core.role === 'leader') this.#checkDurable(n);
      n.checkedDurableCommit = Math.max(n.checkedDurableCommit, log.committed);
      // Leader completeness: a leader of term T holds every entry committed before T.
      if (core.role === 'leader' && (n.checkedLeaderTerm !== core.term || this.now % 100 === 0)) {
        n.checkedLeaderTerm = core.term;
        for (let i = first; i <= this.#committedMax; i++) {
          const rec = this.#committed.get(i);
          if (rec === undefined) continue;
          if (rec.observedTerm >= core.term) continue;
          if (log.term(i) !== rec.term) this.fail(`leader completeness: leader ${n.id} term ${core.term} lacks committed ${i} (${rec.fp})`);
        }
      }
    }
  }

  /** Does `node`'s disk (log or snapshot) hold the entry (index, term)? */
  #onDisk(node: SimNode, index: number, term: number | undefined): boolean {
    const held = (disk: MemoryStorage) => disk.snapshot().meta.index >= index || (term !== undefined && disk.term(index) === term);
    return held(node.storage) || (node.lostDisk !== undefined && held(node.lostDisk));
  }

  /**
   * What sending appends before the leader's own write relies on: the leader counts only what
   * is on its disk, so (1) its own match never runs ahead of its disk, and (2) an index it
   * commits is on the disks of a majority of the voters that decided it (the membership in
   * force somewhere between its previous commit and this one: one change at a time).
   */
  #checkDurable(n: SimNode): void {
    const core = n.core!;
    const log = core.log;
    const own = core.progress.get(n.id)?.match ?? 0;
    if (own > 0 && !this.#onDisk(n, own, log.term(own))) this.fail(`leader ${n.id} counts its own match ${own}, which is not on its disk`);
    const c = log.committed;
    if (c <= n.checkedDurableCommit) return;
    const term = log.term(c);
    const holders = new Set(this.nodes.filter((m) => this.#onDisk(m, c, term)).map((m) => m.id));
    const from = Math.max(n.checkedDurableCommit, log.firstIndex() - 1, n.storage.snapshot().meta.index);
    const confs = new Map<string, readonly NodeId[]>();
    for (let i = from; i <= c; i++) {
      const voters = core.confStateAt(i).voters;
      confs.set(voters.join(','), voters);
    }
    const decided = [...confs.values()].some((voters) => voters.filter((id) => holders.has(id)).length * 2 > voters.length);
    if (!decided) this.fail(`leader ${n.id} committed ${c} (term ${term}), on the disks of only ${[...holders].join(',') || 'none'}; voters ${[...confs.keys()].join(' / ')}`);
    n.checkedDurableCommit = c;
  }

  /** Heal everything and require a leader that commits and applies a fresh proposal everywhere. */
  healAndConverge(ticksMax: number): number {
    this.healed = true;
    this.#blocked.clear();
    for (const n of this.nodes) if (n.core === undefined) n.downUntil = this.now;
    const start = this.now;
    let probe: string | undefined;
    let probeAt = 0;
    while (this.now - start < ticksMax) {
      this.tick();
      const l = this.leader();
      if (l === undefined) continue;
      if (probe === undefined || !this.acked.has(probe)) {
        // A probe proposed to a leader that then lost leadership is gone: propose another.
        if (probe === undefined || this.now - probeAt > 50) {
          probe = this.propose();
          probeAt = this.now;
        }
        continue;
      }
      const members = this.ids.filter((id) => l.core!.voters.has(id) || l.core!.learners.has(id));
      const index = this.acked.get(probe)!;
      if (members.every((id) => this.node(id).appliedIndex >= index)) return this.now - start;
    }
    this.fail(`no convergence within ${ticksMax} ticks after healing (leader ${this.leader()?.id ?? 'none'})`);
  }

  /** Every acknowledged value is in every member's state machine once it applied that far. */
  checkAcked(): void {
    const l = this.leader()!;
    for (const id of this.ids) {
      if (!l.core!.voters.has(id) && !l.core!.learners.has(id)) continue;
      const n = this.node(id);
      const have = new Set(n.values);
      for (const [v, index] of this.acked) if (index <= n.appliedIndex && !have.has(v)) this.fail(`acknowledged ${v} lost on ${id}`);
    }
  }
}

export function runSeed(seed: number, ticks = 1_500): { options: SimOptions; convergeTicks: number; acked: number; reads: number; disksLost: number } {
  const rand = new SeededRand(seed);
  const options = swarmOptions(rand, ticks);
  const sim = new RaftSim(seed, options, rand);
  for (let i = 0; i < ticks; i++) sim.tick();
  const convergeTicks = sim.healAndConverge(2_000);
  sim.checkAcked();
  return { options, convergeTicks, acked: sim.acked.size, reads: sim.readsConfirmed, disksLost: sim.disksLost };
}
