// The core's view of its log: stable storage plus the unstable tail not yet persisted
// (etcd-io/raft log.go + log_unstable.go).
//
// Invariants: applied <= applying <= committed <= lastIndex().
// Unstable entries start at `offset`; an entry at index >= offset is answered only from the
// unstable tail (storage may still hold a stale, truncated suffix until the next persist).
import type { LogReader } from './storage.js';
import type { Entry, Snapshot } from './types.js';

export class RaftLog {
  offset: number;
  unstable: Entry[] = [];
  unstableSnapshot: Snapshot | undefined;
  committed: number;
  /** Highest index handed out for application in a Ready. */
  applying: number;
  /** Highest index the driver reported applied (advance). */
  applied: number;

  constructor(readonly storage: LogReader) {
    this.offset = storage.lastIndex() + 1;
    this.committed = storage.initialState().hardState.commit;
    const snapIndex = storage.snapshot().meta.index;
    this.applied = snapIndex;
    this.applying = snapIndex;
    if (this.committed < snapIndex) this.committed = snapIndex;
  }

  lastIndex(): number {
    if (this.unstable.length > 0) return this.unstable[this.unstable.length - 1]!.index;
    if (this.unstableSnapshot !== undefined) return this.unstableSnapshot.meta.index;
    return this.storage.lastIndex();
  }

  firstIndex(): number {
    if (this.unstableSnapshot !== undefined) return this.unstableSnapshot.meta.index + 1;
    return this.storage.firstIndex();
  }

  lastTerm(): number {
    return this.term(this.lastIndex())!;
  }

  term(index: number): number | undefined {
    if (index >= this.offset) return this.unstable[index - this.offset]?.term;
    if (this.unstableSnapshot !== undefined) {
      return index === this.unstableSnapshot.meta.index ? this.unstableSnapshot.meta.term : undefined;
    }
    return this.storage.term(index);
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Entries [lo, hi); undefined if any part was compacted. */
  slice(lo: number, hi: number): Entry[] | undefined {
    if (lo >= hi) return [];
    if (lo < this.firstIndex()) return undefined;
    const out: Entry[] = [];
    if (lo < this.offset) {
      const fromStorage = this.storage.entries(lo, Math.min(hi, this.offset));
      if (fromStorage === undefined) return undefined;
      out.push(...fromStorage);
    }
    if (hi > this.offset) out.push(...this.unstable.slice(Math.max(lo, this.offset) - this.offset, hi - this.offset));
    return out;
  }

  /** Raft §5.4.1: is a log ending at (lastIndex, lastTerm) at least as up to date as ours? */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /** First index whose term differs from `entries`, or 0 when all are already present. */
  findConflict(entries: readonly Entry[]): number {
    for (const e of entries) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /** Largest index <= `index` whose term is <= `term` (the follower's reject hint). */
  findConflictByTerm(index: number, term: number): number {
    let i = Math.min(index, this.lastIndex());
    for (; i > 0; i--) {
      const t = this.term(i);
      if (t === undefined || t <= term) break;
    }
    return i;
  }

  /** Append entries after truncating any conflicting unstable/stable suffix. */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const after = entries[0]!.index;
    if (after <= this.committed) throw new Error(`raft: truncating committed entry ${after} (committed ${this.committed})`);
    if (after === this.offset + this.unstable.length) {
      this.unstable.push(...entries);
    } else if (after <= this.offset) {
      this.offset = after;
      this.unstable = [...entries];
    } else {
      this.unstable = [...this.unstable.slice(0, after - this.offset), ...entries];
    }
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    if (index > this.lastIndex()) throw new Error(`raft: commit ${index} beyond last index ${this.lastIndex()}`);
    this.committed = index;
  }

  restore(snap: Snapshot): void {
    this.unstableSnapshot = snap;
    this.offset = snap.meta.index + 1;
    this.unstable = [];
    this.committed = snap.meta.index;
  }

  /** The driver persisted entries up to (index, term). */
  stableTo(index: number, term: number): void {
    if (index < this.offset) return;
    if (this.term(index) !== term) return; // replaced while it was being persisted
    this.unstable = this.unstable.slice(index + 1 - this.offset);
    this.offset = index + 1;
  }

  stableSnapTo(index: number): void {
    if (this.unstableSnapshot !== undefined && this.unstableSnapshot.meta.index === index) this.unstableSnapshot = undefined;
  }

  snapshot(): Snapshot {
    return this.unstableSnapshot ?? this.storage.snapshot();
  }
}
