// The leader's view of one follower (etcd-io/raft tracker/progress.go, simplified).
//
//   probe:     next is a guess; one append in flight until an answer (or a heartbeat reply) comes.
//   replicate: next is optimistic; up to `inflightMax` appends in flight (flow control).
//   snapshot:  a snapshot was sent; nothing else goes out until it is acknowledged or times out.
// Invariant: match < next.

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** probe: an append is out and unanswered. */
  probeSent = false;
  /** snapshot: index of the snapshot in flight. */
  pendingSnapshot = 0;
  /** Ticks spent in the snapshot state; the leader falls back to probe after a bound. */
  snapshotTicks = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = true;
  /** The follower's incarnation while it is fresh (its last answer said so): it counts for no quorum. */
  fresh: string | undefined;
  /** The incarnation this leader last vouched for, and that vouch's index (a snapshot covering it says so). */
  vouchFor: string | undefined;
  vouchIndex = 0;
  /** replicate: last index of every unacknowledged append, ascending. */
  readonly inflight: number[] = [];

  constructor(
    next: number,
    readonly inflightMax: number,
    public isLearner: boolean,
  ) {
    this.next = next;
  }

  becomeProbe(): void {
    // After a snapshot, resume right after it; otherwise right after what we know matches.
    this.next = this.state === 'snapshot' ? Math.max(this.match + 1, this.pendingSnapshot + 1) : this.match + 1;
    this.state = 'probe';
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotTicks = 0;
    this.inflight.length = 0;
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.inflight.length = 0;
  }

  becomeSnapshot(index: number): void {
    this.state = 'snapshot';
    this.pendingSnapshot = index;
    this.snapshotTicks = 0;
    this.probeSent = false;
    this.inflight.length = 0;
  }

  /** An accepted append up to `index`; false when it is stale. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /** A rejected append of `rejected` (its prevIndex) with the follower's hint; false when stale. */
  maybeDecrTo(rejected: number, hint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, hint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  /** An append carrying entries up to `last` was sent. */
  sentEntries(last: number): void {
    if (this.state === 'replicate') {
      this.next = last + 1;
      this.inflight.push(last);
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  freeInflightTo(index: number): void {
    while (this.inflight.length > 0 && this.inflight[0]! <= index) this.inflight.shift();
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflight.length >= this.inflightMax;
      case 'snapshot':
        return true;
    }
  }
}
