// A replicated VDB shard as the state machine of its Raft group: one ordinary database of the
// document engine (`<vdb>_s<i>`, marked as the group's replica so nothing else writes it),
// changed only by committed entries (`shard-commands.ts`).
//
// - The applied index and the request ids are written in the same synced batch as the
//   documents they belong to, so a restart re-applies exactly the entries after it.
// - A request id seen before answers what it answered then: a proposal the router retried
//   after a timeout applies once. The last REQUEST_WINDOW ids are kept (dropped oldest first,
//   by log order, so every replica keeps the same ones).
// - Log compaction: the group keeps its whole log (no snapshot is taken); a replica added
//   later replays it from the start. See docs/vdb.md.
import { FirkinError } from '../../core/errors.js';
import { decodeCbor, encodeCbor } from '../../core/codec.js';
import { decodeKey, encodeKey, prefixRange } from '../../core/keys.js';
import type { StateMachine } from '../../raft/group.js';
import type { Entry } from '../../raft/types.js';
import type { BatchOp, Store } from '../../storage/db.js';
import type { DocEngine } from '../engine.js';
import { type DocShardOutcome, decodeDocShardCommand } from './shard-commands.js';

/** Request ids remembered per shard. */
export const REQUEST_WINDOW = 10_000;

const appliedKey = (group: string) => encodeKey(['dshard', group, 'applied']);
const requestKey = (group: string, rid: string) => encodeKey(['dshard', group, 'req', rid]);
const requestRange = (group: string) => prefixRange(['dshard', group, 'req']);

/** Every key of the shard's own bookkeeping (dropped with the replica). */
export const docShardKeys = (group: string) => prefixRange(['dshard', group]);

export class DocShardFsm implements StateMachine {
  readonly #docs: DocEngine;
  readonly #store: Store;
  readonly group: string;
  readonly db: string;
  #applied = 0;
  /** Request ids by log order (oldest first), and what each answered. */
  readonly #requests = new Map<string, { index: number; outcome: DocShardOutcome }>();

  private constructor(docs: DocEngine, store: Store, group: string, db: string) {
    this.#docs = docs;
    this.#store = store;
    this.group = group;
    this.db = db;
  }

  /** Open the replica: its database (created on first open) and its bookkeeping. */
  static async open(docs: DocEngine, store: Store, group: string, db: string, createdMs: number): Promise<DocShardFsm> {
    if (docs.has(db)) {
      const owner = docs.ownerOf(db);
      if (owner !== group) {
        throw new FirkinError('conflict', `database ${JSON.stringify(db)} exists on this node ${owner === undefined ? 'as a plain database' : `as a replica of ${owner}`}; it cannot hold shard ${group}`);
      }
    } else {
      await docs.createDb(db, { owner: group, createdMs });
    }
    const fsm = new DocShardFsm(docs, store, group, db);
    const applied = await store.get('system', appliedKey(group));
    fsm.#applied = applied === undefined ? 0 : (decodeCbor(applied) as number);
    const loaded: [string, { index: number; outcome: DocShardOutcome }][] = [];
    for await (const [key, value] of store.entries('system', requestRange(group))) {
      const rid = decodeKey(key).at(-1) as string;
      const r = decodeCbor(value) as { i: number; o: DocShardOutcome };
      loaded.push([rid, { index: r.i, outcome: r.o }]);
    }
    loaded.sort((a, b) => a[1].index - b[1].index);
    for (const [rid, r] of loaded) fsm.#requests.set(rid, r);
    return fsm;
  }

  /** The last entry whose effects are durable. */
  get appliedIndex(): number {
    return this.#applied;
  }

  /** The applied index as stored (with the documents): what a digest taken between two commits is at. */
  async storedAppliedIndex(): Promise<number> {
    const raw = await this.#store.get('system', appliedKey(this.group));
    return raw === undefined ? 0 : (decodeCbor(raw) as number);
  }

  async apply(entry: Entry): Promise<unknown> {
    if (entry.index <= this.#applied) return undefined; // applied before a restart
    if (entry.kind !== 'normal' || entry.data.length === 0) return undefined; // no data: replayed harmlessly after a restart
    const cmd = decodeDocShardCommand(entry.data);
    const ops: BatchOp[] = [{ type: 'put', cf: 'system', key: appliedKey(this.group), value: encodeCbor(entry.index) }];
    const seen = this.#requests.get(cmd.rid);
    if (seen !== undefined) {
      await this.#store.batch(ops, { sync: true });
      this.#applied = entry.index;
      return seen.outcome;
    }
    let outcome: DocShardOutcome;
    if (cmd.kind === 'edits') {
      const results = await this.#docs.applyLogged(this.db, cmd.edits, { at: cmd.at, ops: (r) => this.#remember(cmd.rid, entry.index, { kind: 'edits', results: r }, ops) });
      outcome = { kind: 'edits', results };
    } else {
      await this.#docs.compactLogged(this.db);
      outcome = { kind: 'compact' };
      await this.#store.batch(this.#remember(cmd.rid, entry.index, outcome, ops), { sync: true });
    }
    this.#requests.set(cmd.rid, { index: entry.index, outcome });
    while (this.#requests.size > REQUEST_WINDOW) this.#requests.delete(this.#requests.keys().next().value!);
    this.#applied = entry.index;
    return outcome;
  }

  /** `ops` plus the record of request `rid` and the removal of the ids that fall out of the window. */
  #remember(rid: string, index: number, outcome: DocShardOutcome, ops: readonly BatchOp[]): BatchOp[] {
    const out: BatchOp[] = [...ops];
    const overflow = this.#requests.size + 1 - REQUEST_WINDOW;
    let i = 0;
    for (const old of this.#requests.keys()) {
      if (i++ >= overflow) break;
      out.push({ type: 'del', cf: 'system', key: requestKey(this.group, old) });
    }
    out.push({ type: 'put', cf: 'system', key: requestKey(this.group, rid), value: encodeCbor({ i: index, o: outcome }) });
    return out;
  }

  snapshot(): Uint8Array {
    return encodeCbor({ index: this.#applied, v: 1 });
  }

  async restore(data: Uint8Array): Promise<void> {
    const snap = decodeCbor(data) as { index?: unknown };
    if (typeof snap.index !== 'number') throw new FirkinError('error', 'VDB shard snapshot does not decode');
    // This group never compacts its log, so a snapshot comes only from this replica itself.
    if (snap.index > this.#applied) throw new FirkinError('error', `VDB shard ${this.group}: a snapshot at ${snap.index} is ahead of this replica (${this.#applied}) and cannot be loaded`);
  }
}
