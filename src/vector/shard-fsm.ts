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
import { decodeShardCommand, encodeShardCommand } from './commands.js';
import type { DocInput, Shard } from './shard.js';


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
    return encodeCbor({ index: this.#lastIndex, parts });
  }

  async restore(data: Uint8Array): Promise<void> {
    const snap = decodeCbor(data) as { index?: unknown; parts?: unknown };
    if (typeof snap.index !== 'number' || !Array.isArray(snap.parts) || !snap.parts.every((p) => p instanceof Uint8Array)) {
      throw new FirkinError('error', 'shard snapshot does not decode');
    }
    this.#lastIndex = Math.max(this.#lastIndex, snap.index);
    if (snap.index <= this.#shard.appliedIndex) return; // this replica already holds it
    const chunks: DocInput[][] = (snap.parts as Uint8Array[]).map((p) => {
      const c = decodeShardCommand(p);
      if (c.kind !== 'upsert') throw new FirkinError('error', 'shard snapshot holds a delete');
      return [...c.docs];
    });
    this.#shard = await this.reopenEmpty(this.#shard);
    await this.#shard.restore(chunks, snap.index);
  }
}
