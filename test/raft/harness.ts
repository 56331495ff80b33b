// A hand-driven cluster of pure cores for scenario tests: the test decides what is delivered.
import { DEFAULT_RAFT_OPTIONS, RaftCore, type RaftOptions } from '../../src/raft/core.js';
import { MemoryStorage } from '../../src/raft/storage.js';
import type { Entry, Message, NodeId, ReadState } from '../../src/raft/types.js';
import { SeededRand } from './sim/rand.js';

const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

export interface HarnessNode {
  core: RaftCore;
  storage: MemoryStorage;
  values: string[];
  readStates: ReadState[];
}

export class Cluster {
  readonly nodes = new Map<NodeId, HarnessNode>();
  /** Messages sent but not delivered yet. */
  queue: Message[] = [];
  /** Nodes cut off in both directions. */
  readonly isolated = new Set<NodeId>();
  /** Extra drop rule for one-off scenarios. */
  dropIf: ((m: Message) => boolean) | undefined;
  readonly rand: SeededRand;
  readonly transcript: string[] = [];
  #roles = new Map<NodeId, string>();
  /** Also write every delivered message into the transcript. */
  recordMessages = false;

  constructor(
    ids: readonly NodeId[],
    readonly opts: Partial<RaftOptions> = {},
    seed = 7,
  ) {
    this.rand = new SeededRand(seed);
    for (const id of ids) {
      const storage = new MemoryStorage();
      storage.append(ids.map((v, i) => ({ index: i + 1, term: 1, kind: 'conf', change: { type: 'addVoter', node: v } }) as Entry));
      storage.setHardState({ term: 1, vote: null, commit: ids.length });
      this.#add(id, storage);
    }
  }

  #add(id: NodeId, storage: MemoryStorage): HarnessNode {
    const core = new RaftCore({ ...DEFAULT_RAFT_OPTIONS, id, group: 'g', storage, rand: this.rand, ...this.opts });
    const node: HarnessNode = { core, storage, values: [], readStates: [] };
    this.nodes.set(id, node);
    return node;
  }

  /** A fresh node with an empty log (to be added as a learner). */
  addEmptyNode(id: NodeId): HarnessNode {
    return this.#add(id, new MemoryStorage());
  }

  /** Restart `id` from what it persisted. */
  restart(id: NodeId): HarnessNode {
    const old = this.n(id);
    this.queue = this.queue.filter((m) => m.to !== id);
    const node = this.#add(id, old.storage);
    const snap = old.storage.snapshot();
    node.values = snap.meta.index === 0 ? [] : (JSON.parse(utf8d.decode(snap.data)) as string[]);
    return node;
  }

  n(id: NodeId): HarnessNode {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`no node ${id}`);
    return node;
  }

  c(id: NodeId): RaftCore {
    return this.n(id).core;
  }

  /** Persist, queue messages and apply for every node until nothing is ready. */
  drain(): void {
    for (const [id, node] of this.nodes) {
      for (let rd = node.core.ready(); rd !== undefined; rd = node.core.ready()) {
        if (rd.snapshot !== undefined) node.storage.applySnapshot(rd.snapshot);
        node.storage.append(rd.entries);
        if (rd.hardState !== undefined) node.storage.setHardState(rd.hardState);
        // Early messages are queued before persisting, the others after; the harness persists
        // at once, so only the order of the queue tells them apart.
        for (const m of [...rd.earlyMessages, ...rd.messages]) {
          if (this.isolated.has(m.from) || this.isolated.has(m.to) || this.dropIf?.(m) === true) continue;
          this.queue.push(m);
        }
        if (rd.snapshot !== undefined) node.values = JSON.parse(utf8d.decode(rd.snapshot.data)) as string[];
        for (const e of rd.committed) if (e.kind === 'normal') node.values.push(utf8d.decode(e.data));
        node.readStates.push(...rd.readStates);
        node.core.advance(rd);
        const role = `${rd.softState.role} term ${rd.softState.term}`;
        if (this.#roles.get(id) !== role) {
          this.#roles.set(id, role);
          if (rd.softState.role === 'leader') this.transcript.push(`${id} becomes leader in term ${rd.softState.term}`);
        }
      }
    }
  }

  /** Deliver the queued messages once (those they cause stay queued). */
  deliverOnce(filter: (m: Message) => boolean = () => true): number {
    const now = this.queue.filter(filter);
    this.queue = this.queue.filter((m) => !filter(m));
    for (const m of now) {
      if (this.isolated.has(m.from) || this.isolated.has(m.to) || this.dropIf?.(m) === true) continue;
      if (this.recordMessages) this.transcript.push(describe(m));
      this.nodes.get(m.to)?.core.step(m);
    }
    this.drain();
    return now.length;
  }

  stabilize(roundsMax = 1_000): void {
    this.drain();
    for (let i = 0; i < roundsMax && this.queue.length > 0; i++) this.deliverOnce();
  }

  tick(ids: readonly NodeId[], times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const id of ids) this.c(id).tick();
      this.stabilize();
    }
  }

  tickAll(times = 1): void {
    this.tick([...this.nodes.keys()], times);
  }

  campaign(id: NodeId): void {
    this.c(id).campaign();
    this.stabilize();
  }

  propose(id: NodeId, value: string): number {
    const r = this.c(id).propose(utf8.encode(value));
    if (!r.ok) throw new Error(`propose on ${id}: ${r.reason}`);
    this.stabilize();
    return r.index;
  }

  /** Snapshot `id`'s applied state and compact its log. */
  compact(id: NodeId, retainEntries = 0): void {
    const node = this.n(id);
    const applied = node.core.log.applied;
    node.storage.createSnapshot({ index: applied, conf: node.core.confStateAt(applied) }, utf8.encode(JSON.stringify(node.values)), retainEntries);
    node.core.compactConfHistory(applied);
  }

  leaders(): NodeId[] {
    return [...this.nodes].filter(([id, n]) => !this.isolated.has(id) && n.core.role === 'leader').map(([id]) => id);
  }
}

/** One line per message, for transcripts. */
export function describe(m: Message): string {
  const head = `${m.from}->${m.to} ${m.kind} t${m.term}`;
  switch (m.kind) {
    case 'preVote':
    case 'vote':
      return `${head} last=${m.lastIndex}/${m.lastTerm}${m.force ? ' force' : ''}`;
    case 'preVoteResp':
    case 'voteResp':
      return `${head} ${m.reject ? 'reject' : 'grant'}`;
    case 'append':
      return `${head} prev=${m.prevIndex}/${m.prevTerm} entries=[${m.entries.map((e) => `${e.index}/${e.term}:${e.kind === 'normal' ? utf8d.decode(e.data) : e.kind}`).join(' ')}] commit=${m.commit}`;
    case 'appendResp':
      return `${head} index=${m.index}${m.reject ? ` reject hint=${m.rejectHint}` : ''}`;
    case 'heartbeat':
      return `${head} commit=${m.commit} read=${m.readSeq}`;
    case 'heartbeatResp':
      return `${head} read=${m.readSeq}`;
    case 'snapshot':
      return `${head} snap=${m.snapshot.meta.index}/${m.snapshot.meta.term}`;
    case 'timeoutNow':
      return head;
    case 'readIndex':
      return `${head} ctx=${m.ctx}`;
    case 'readIndexResp':
      return `${head} ctx=${m.ctx} index=${m.index}${m.reject ? ' reject' : ''}`;
  }
}
