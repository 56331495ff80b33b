// The log as the core reads it (etcd-io/raft storage.go). The core only reads; the driver
// writes (append / snapshot / hard state) after persisting. Reads are synchronous: durable
// implementations keep the uncompacted tail in memory (bounded by compaction).
import type { ConfState, Entry, HardState, Snapshot, SnapshotMeta } from './types.js';

export interface LogReader {
  initialState(): { hardState: HardState; conf: ConfState };
  /** First index still held as an entry; lastIndex() + 1 when the log is empty. */
  firstIndex(): number;
  lastIndex(): number;
  /** Term at `index`; also answers for the last compacted index. undefined: compacted or beyond. */
  term(index: number): number | undefined;
  /** Entries [lo, hi); undefined if lo was compacted. hi must be <= lastIndex() + 1. */
  entries(lo: number, hi: number): Entry[] | undefined;
  /** The latest snapshot (index 0 with empty data before the first one). */
  snapshot(): Snapshot;
}

export const EMPTY_HARD_STATE: HardState = { term: 0, vote: null, commit: 0 };

/** The whole log in memory: for tests and the simulation, and the cache behind RocksLog. */
export class MemoryStorage implements LogReader {
  hardState: HardState = EMPTY_HARD_STATE;
  snap: Snapshot;
  /** The last compacted entry: entries[0] has index offsetIndex + 1. */
  offsetIndex: number;
  offsetTerm: number;
  entryList: Entry[] = [];

  constructor(conf: ConfState = { voters: [], learners: [] }) {
    this.snap = { meta: { index: 0, term: 0, conf }, data: new Uint8Array(0) };
    this.offsetIndex = 0;
    this.offsetTerm = 0;
  }

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: this.hardState, conf: this.snap.meta.conf };
  }

  firstIndex(): number {
    return this.offsetIndex + 1;
  }

  lastIndex(): number {
    return this.offsetIndex + this.entryList.length;
  }

  term(index: number): number | undefined {
    if (index === this.offsetIndex) return this.offsetTerm;
    if (index < this.offsetIndex || index > this.lastIndex()) return undefined;
    return this.entryList[index - this.offsetIndex - 1]!.term;
  }

  entries(lo: number, hi: number): Entry[] | undefined {
    if (lo <= this.offsetIndex) return undefined;
    if (hi > this.lastIndex() + 1) throw new Error(`entries hi ${hi} beyond last ${this.lastIndex()}`);
    return this.entryList.slice(lo - this.offsetIndex - 1, hi - this.offsetIndex - 1);
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /** Append, replacing any conflicting tail. Entries at or below the compaction point are skipped. */
  append(entries: readonly Entry[]): void {
    const fresh = entries.filter((e) => e.index > this.offsetIndex);
    if (fresh.length === 0) return;
    const first = fresh[0]!.index;
    if (first > this.lastIndex() + 1) throw new Error(`raft log gap: appending ${first} after ${this.lastIndex()}`);
    this.entryList.length = first - this.offsetIndex - 1;
    for (const e of fresh) {
      if (e.index !== this.lastIndex() + 1) throw new Error('raft log entries must be contiguous');
      this.entryList.push(e);
    }
  }

  setHardState(hs: HardState): void {
    this.hardState = hs;
  }

  /** Replace everything with a snapshot received from the leader. */
  applySnapshot(snap: Snapshot): void {
    if (snap.meta.index < this.snap.meta.index) return;
    this.snap = snap;
    this.offsetIndex = snap.meta.index;
    this.offsetTerm = snap.meta.term;
    this.entryList = [];
  }

  /**
   * Record a snapshot of the applied state at `meta.index` and drop entries up to
   * `meta.index - retainEntries` (kept so slightly slow followers avoid a snapshot).
   */
  createSnapshot(meta: Omit<SnapshotMeta, 'term'>, data: Uint8Array, retainEntries: number): void {
    if (meta.index <= this.snap.meta.index) return;
    const term = this.term(meta.index);
    if (term === undefined) throw new Error(`snapshot index ${meta.index} is not in the log`);
    this.snap = { meta: { ...meta, term }, data };
    this.compact(meta.index - retainEntries);
  }

  compact(index: number): void {
    if (index <= this.offsetIndex) return;
    if (index > this.snap.meta.index) throw new Error('cannot compact beyond the snapshot');
    const term = this.term(index)!;
    this.entryList = this.entryList.slice(index - this.offsetIndex);
    this.offsetIndex = index;
    this.offsetTerm = term;
  }
}
