// A vector shard as the state machine of its Raft group. A committed entry carries one shard
// command (`commands.ts`), applied at the entry's index; the shard keeps that index with its
// data, so entries re-delivered after a restart are skipped. Noop and membership entries
// change no data.
//
// Snapshots hold every live document with the Raft index they were taken at. A replica that
// already applied that far keeps its data (the group restores the stored snapshot at every
// start); one behind drops its data and loads the snapshot.
// Limitation, for now: a snapshot is built and held whole in memory (fine for the shard sizes
// the tests and benches use; streaming it in chunks is the multi-Raft work's next step).
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { FirkinError } from '../core/errors.js';
import type { StateMachine } from '../raft/group.js';
import type { Entry } from '../raft/types.js';
import { type ApplyOutcome, decodeShardCommand, encodeShardCommand } from './commands.js';
import type { DocInput, Shard } from './shard.js';


interface SnapshotRequest {
  r: string;
  i: number;
  o: ApplyOutcome;
}

function isRequest(v: unknown): v is SnapshotRequest {
  const r = v as Partial<SnapshotRequest> | null;
  const o = r?.o as { kind?: unknown; written?: unknown; deleted?: unknown } | undefined;
  return (
    typeof r === 'object' && r !== null && typeof r.r === 'string' && Number.isSafeInteger(r.i) &&
    typeof o === 'object' && o !== null && ((o.kind === 'upsert' && typeof o.written === 'number') || (o.kind === 'delete' && Array.isArray(o.deleted)))
  );
}

export class ShardFsm implements StateMachine {
  #shard: Shard;
  /** Raft index of the last entry applied here (any kind): what a snapshot taken now covers. */
  #lastIndex = 0;

  /** `reopen` drops the shard's data and opens it empty (for loading a snapshot). */
  constructor(
    shard: Shard,
    private readonly reopenEmpty: (old: Shard) => Promise<Shard>,
  ) {
    this.#shard = shard;
    this.#lastIndex = shard.appliedIndex;
  }

  /** The shard as it is now (a restore replaces it). */
  get shard(): Shard {
    return this.#shard;
  }

  async apply(entry: Entry): Promise<unknown> {
    this.#lastIndex = entry.index;
    if (entry.kind !== 'normal' || entry.data.length === 0) return undefined;
    return this.#shard.apply(decodeShardCommand(entry.data), entry.index);
  }

  async snapshot(): Promise<Uint8Array> {
    // Each document as an encoded upsert, so the one checked codec decodes them again.
    const parts: Uint8Array[] = [];
    for await (const docs of this.#shard.exportDocs()) parts.push(encodeShardCommand({ kind: 'upsert', docs }));
    // The request ids are state too: a replica loaded from this snapshot must refuse the same
    // retries as the others.
    const requests = this.#shard.exportRequests().map((r) => ({ r: r.rid, i: r.index, o: r.outcome }));
    return encodeCbor({ index: this.#lastIndex, parts, requests });
  }

  async restore(data: Uint8Array): Promise<void> {
    const snap = decodeCbor(data) as { index?: unknown; parts?: unknown; requests?: unknown };
    if (typeof snap.index !== 'number' || !Array.isArray(snap.parts) || !snap.parts.every((p) => p instanceof Uint8Array)) {
      throw new FirkinError('error', 'shard snapshot does not decode');
    }
    const requests = snap.requests === undefined ? [] : snap.requests;
    if (!Array.isArray(requests) || !requests.every(isRequest)) throw new FirkinError('error', 'shard snapshot: bad request ids');
    this.#lastIndex = Math.max(this.#lastIndex, snap.index);
    if (snap.index <= this.#shard.appliedIndex) return; // this replica already holds it
    const chunks: DocInput[][] = (snap.parts as Uint8Array[]).map((p) => {
      const c = decodeShardCommand(p);
      if (c.kind !== 'upsert') throw new FirkinError('error', 'shard snapshot holds a delete');
      return [...c.docs];
    });
    this.#shard = await this.reopenEmpty(this.#shard);
    await this.#shard.restore(chunks, snap.index, (requests as SnapshotRequest[]).map((r) => ({ rid: r.r, index: r.i, outcome: r.o })));
  }
}
