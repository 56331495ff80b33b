// A vector shard as the state machine of its Raft group. A committed entry carries one shard
// command (`commands.ts`), applied at the entry's index; the shard keeps that index with its
// data, so entries re-delivered after a restart are skipped. Noop and membership entries
// change no data.
//
// Snapshots are streamed, never held whole. The Raft snapshot itself is a small descriptor
// (the index it was taken at). A replica that already applied that far keeps its data (the
// group restores the stored snapshot at every start). One behind drops its data and pulls
// the state from a replica that has it (`StateSource`: the leader, over the cluster link, in
// chunks of about a megabyte), loading chunk by chunk. What arrives is the source's state at
// the moment it was read, at an applied index A at or past the snapshot's index I: the
// entries between I and A then reach this replica through its log and are skipped, as at or
// below its applied index. A transfer that fails is retried (with backoff) until it succeeds
// or the replica is stopped.
//
// Snapshots written before streaming (the documents inline, `parts`) still load.
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { jitteredDelayMs } from '../core/backoff.js';
import { FirkinError } from '../core/errors.js';
import type { Rand } from '../core/rand.js';
import type { StateMachine } from '../raft/group.js';
import type { Entry } from '../raft/types.js';
import { type ApplyOutcome, decodeShardCommand, decodeShardEntry } from './commands.js';
import { type FenceOutcome, type FenceState, NO_FENCE, applyFence, applyLift, fenceFromWire, fenceToWire, refusedBy } from './fence.js';
import type { DocInput, RequestRecord, Shard, ShardStateChunk } from './shard.js';

/** Streams a replica's state at or past `index` (throws if the source cannot). */
export type StateSource = (index: number) => AsyncIterable<ShardStateChunk>;

export interface ShardFsmOptions {
  /** Drops the shard's data and opens it empty (before loading a snapshot). */
  reopenEmpty(old: Shard): Promise<Shard>;
  source?: StateSource;
  rand?: Rand;
  /** A failed transfer, before its retry. */
  onRetry?(err: unknown, attempt: number, delayMs: number): void;
  /** Where the reshard fence state (`fence.ts`) is kept: the shard's own records do not hold it. */
  fence?: { load(): Promise<FenceState | undefined>; save(state: FenceState): Promise<void> };
}

const RETRY = { baseMs: 100, capMs: 5_000 };

interface InlineRequest {
  r: string;
  i: number;
  o: ApplyOutcome;
}

/** Shape check of a request id record from a snapshot or a transfer (input from another node). */
export function isRequestRecord(v: unknown): v is RequestRecord {
  const r = v as Partial<RequestRecord> | null;
  return typeof r === 'object' && r !== null && typeof r.rid === 'string' && Number.isSafeInteger(r.index) && isOutcome(r.outcome);
}

function isOutcome(v: unknown): v is ApplyOutcome {
  const o = v as { kind?: unknown; written?: unknown; deleted?: unknown } | null;
  return typeof o === 'object' && o !== null && ((o.kind === 'upsert' && typeof o.written === 'number') || (o.kind === 'delete' && Array.isArray(o.deleted)));
}

export class ShardFsm implements StateMachine {
  #shard: Shard;
  readonly #o: ShardFsmOptions;
  /** Raft index of the last entry applied here (any kind): what a snapshot taken now covers. */
  #lastIndex = 0;
  #stopped = false;
  /** The reshard fence: writes after a fence in force, or inside a lifted one, are refused. */
  #fence: FenceState = NO_FENCE;

  constructor(shard: Shard, options: ShardFsmOptions) {
    this.#shard = shard;
    this.#o = options;
    this.#lastIndex = shard.appliedIndex;
  }

  /** Load the fence state this replica applied before a restart. */
  async loadFence(): Promise<void> {
    this.#fence = (await this.#o.fence?.load()) ?? NO_FENCE;
  }

  /** The index of the fence in force (the shard takes no more writes), if a reshard fenced it. */
  get fencedAt(): number | undefined {
    return this.#fence.current?.index;
  }

  /** Whether the entry at `index` was refused by a fence (in force or lifted since): a reshard does not replay it. */
  refused(index: number): boolean {
    return refusedBy(this.#fence, index) !== undefined;
  }

  async #setFence(next: FenceState): Promise<void> {
    if (next === this.#fence) return;
    await this.#o.fence?.save(next);
    this.#fence = next;
  }

  /** The shard as it is now (a restore replaces it). */
  get shard(): Shard {
    return this.#shard;
  }

  /** A transfer under way gives up (the replica is being closed or dropped). */
  stop(): void {
    this.#stopped = true;
  }

  async apply(entry: Entry): Promise<unknown> {
    this.#lastIndex = entry.index;
    // An entry with no data for the shard (a leader's empty entry, a membership change, a fence
    // or lift, a write a fence refuses) still moves its applied index (Shard.skipTo): a snapshot
    // taken after it is at its index, and a replica loading one needs a source applied that far.
    // A group whose last entries carried no data, with no write to come (a reshard's new shard
    // waiting on its copy), could never add a replica (chaos seed 150).
    if (entry.kind !== 'normal' || entry.data.length === 0) {
      await this.#shard.skipTo(entry.index);
      return undefined;
    }
    const command = decodeShardEntry(entry.data);
    if (command.kind === 'fence' || command.kind === 'lift') {
      const { state, outcome } = command.kind === 'fence' ? applyFence(this.#fence, entry.index, command.attempt) : applyLift(this.#fence, entry.index, command.attempt);
      await this.#setFence(state);
      await this.#shard.skipTo(entry.index);
      return outcome;
    }
    // Refused alike on every replica; the shard's data does not move, only its applied index
    // (above: a restart need not replay it, and would refuse it again). But a retry of a
    // write that applied before the fence (its first attempt's answer was lost: its leader
    // died) answers what that write did: "fenced" would tell the router it had no effect, and
    // the router would send it again to the new shards, where a delete finds nothing and
    // answers 404 for the document it deleted, and an upsert undoes the writes made since
    // (chaos seed 91).
    const fencedAt = refusedBy(this.#fence, entry.index);
    if (fencedAt !== undefined) {
      const outcome = this.#shard.retryOutcome(command.rid, entry.index) ?? ({ kind: 'fenced', at: fencedAt } satisfies FenceOutcome);
      await this.#shard.skipTo(entry.index);
      return outcome;
    }
    return this.#shard.apply(command, entry.index);
  }

  snapshot(): Uint8Array {
    // `fenced` for the builds before lifts, which read only the fence in force.
    const fenced = this.#fence.current?.index;
    return encodeCbor({ index: this.#lastIndex, v: 2, ...(fenced === undefined ? {} : { fenced }), ...(this.#fence.through === 0 ? {} : { fence: fenceToWire(this.#fence) }) });
  }

  async restore(data: Uint8Array): Promise<void> {
    const snap = decodeCbor(data) as { index?: unknown; parts?: unknown; requests?: unknown; v?: unknown; fenced?: unknown; fence?: unknown };
    if (typeof snap.index !== 'number') throw new FirkinError('error', 'shard snapshot does not decode');
    const index = snap.index;
    const fence = snap.fence !== undefined ? fenceFromWire(snap.fence) : snap.fenced !== undefined ? fenceFromWire(snap.fenced) : undefined;
    if ((snap.fence !== undefined || snap.fenced !== undefined) && fence === undefined) throw new FirkinError('error', 'shard snapshot: the fence does not decode');
    // The snapshot's fence state is as of its index: newer than this replica's, or the same.
    if (fence !== undefined && fence.through > this.#fence.through) await this.#setFence(fence);
    this.#lastIndex = Math.max(this.#lastIndex, index);
    if (index <= this.#shard.appliedIndex) return; // this replica already holds it
    if (snap.parts !== undefined) {
      await this.#load(() => inlineState(snap.parts, snap.requests, index), index);
      return;
    }
    const source = this.#o.source;
    if (source === undefined) throw new FirkinError('error', 'shard snapshot: no replica to stream the state from');
    await this.#load(() => source(index), index);
  }

  async #load(stream: () => AsyncIterable<ShardStateChunk> | Iterable<ShardStateChunk>, index: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (this.#stopped) throw new FirkinError('unavailable', 'the replica stopped while loading a snapshot');
      try {
        this.#shard = await this.#o.reopenEmpty(this.#shard);
        const applied = await this.#shard.load(stream());
        if (applied < index) throw new FirkinError('unavailable', `the source had applied only ${applied}, the snapshot is at ${index}`);
        return;
      } catch (err) {
        if (this.#stopped) throw err;
        const delayMs = this.#o.rand === undefined ? RETRY.baseMs * attempt : jitteredDelayMs(attempt, RETRY, this.#o.rand);
        this.#o.onRetry?.(err, attempt, delayMs);
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  }
}

/** The documents of a snapshot written before streaming, as a state stream. */
function* inlineState(parts: unknown, requests: unknown, index: number): Generator<ShardStateChunk> {
  if (!Array.isArray(parts) || !parts.every((p) => p instanceof Uint8Array)) throw new FirkinError('error', 'shard snapshot does not decode');
  const inline = requests === undefined ? [] : requests;
  if (!Array.isArray(inline) || !inline.every((r: InlineRequest) => typeof r?.r === 'string' && Number.isSafeInteger(r.i) && isOutcome(r.o))) {
    throw new FirkinError('error', 'shard snapshot: bad request ids');
  }
  for (const p of parts as Uint8Array[]) {
    const c = decodeShardCommand(p);
    if (c.kind !== 'upsert') throw new FirkinError('error', 'shard snapshot holds a delete');
    yield { docs: c.docs as DocInput[] };
  }
  yield { applied: index, requests: (inline as InlineRequest[]).map((r) => ({ rid: r.r, index: r.i, outcome: r.o })) };
}
