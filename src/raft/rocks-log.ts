// The durable Raft log of one group in the `raft` column family.
//
//   [group, 'log', index] -> entry      [group, 'hs'] -> hard state
//   [group, 'snap']       -> snapshot   [group, 'offset'] -> {index, term} of the last compacted entry
//   [group, 'fresh']      -> {incarnation} while a replica opened empty is not vouched for (`RaftCore.catchingUp`)
//   [group, 'dropping']   -> present once its host began removing the replica's data (never reopened)
//
// Reads are served by an in-memory MemoryStorage mirror (the uncompacted tail, bounded by
// compaction); every write goes to RocksDB first, in one atomic batch, then to the mirror.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodeKey, encodeKey, prefixRange } from '../core/keys.js';
import type { BatchOp, Store } from '../storage/db.js';
import { decodeCbor } from '../core/codec.js';
import { decodeEntry, decodeHardState, decodeOffset, decodeSnapshot, encodeValue } from './codec.js';
import { MemoryStorage } from './storage.js';
import type { ConfState, Entry, GroupId, HardState, Ready, SnapshotMeta } from './types.js';

const CF = 'raft';

export class RocksLog {
  /** Opened empty without a bootstrap and not vouched for since: its incarnation (the core's `fresh`). */
  fresh: string | undefined;
  /** This open found nothing stored and wrote the bootstrap membership. */
  bootstrapped = false;

  private constructor(
    readonly store: Store,
    readonly group: GroupId,
    /** What the core reads. */
    readonly mem: MemoryStorage,
  ) {}

  /** Every key of one group's log, hard state and snapshot (to remove a group for good). */
  static groupRange(group: GroupId): { gte: Buffer; lt: Buffer } {
    return prefixRange([group]);
  }

  /** The groups with anything stored (one seek per group, not a walk over their entries). */
  static async groups(store: Store): Promise<GroupId[]> {
    const out: GroupId[] = [];
    let from: Buffer | undefined;
    for (;;) {
      let group: GroupId | undefined;
      for await (const k of store.keys(CF, from === undefined ? {} : { gte: from })) {
        group = String(decodeKey(k)[0]);
        break;
      }
      if (group === undefined) return out;
      out.push(group);
      from = RocksLog.groupRange(group).lt;
    }
  }

  /**
   * Load a group's log. With `bootstrap` and nothing stored yet, write the initial membership
   * as committed conf entries at term 1 (every initial member writes the same ones). A function
   * is asked only when nothing is stored (whether to bootstrap may depend on that).
   */
  static async open(store: Store, group: GroupId, bootstrapWith?: ConfState | (() => ConfState | undefined)): Promise<RocksLog> {
    const [hsBuf, snapBuf, offBuf, freshBuf] = await store.getMany(CF, [key(group, 'hs'), key(group, 'snap'), key(group, 'offset'), key(group, 'fresh')]);
    const mem = new MemoryStorage();
    if (snapBuf !== undefined) mem.snap = decodeSnapshot(snapBuf);
    if (offBuf !== undefined) {
      const off = decodeOffset(offBuf);
      mem.offsetIndex = off.index;
      mem.offsetTerm = off.term;
    }
    if (hsBuf !== undefined) mem.hardState = decodeHardState(hsBuf);
    for await (const [, value] of store.entries(CF, prefixRange([group, 'log']))) {
      const e = decodeEntry(value);
      assert.equal(e.index, mem.lastIndex() + 1, 'raft log must not have gaps');
      mem.entryList.push(e);
    }
    const log = new RocksLog(store, group, mem);
    const empty = hsBuf === undefined && snapBuf === undefined && mem.entryList.length === 0;
    log.fresh = freshBuf === undefined ? undefined : decodeFresh(freshBuf);
    const bootstrap = !empty ? undefined : typeof bootstrapWith === 'function' ? bootstrapWith() : bootstrapWith;
    if (bootstrap !== undefined) {
      // The marker first: a crash between the two writes leaves an empty log, bootstrapped again.
      if (log.fresh !== undefined) await log.clearFresh();
      const ids = [...bootstrap.voters.map((node) => ({ type: 'addVoter' as const, node })), ...bootstrap.learners.map((node) => ({ type: 'addLearner' as const, node }))];
      const entries: Entry[] = ids.map((change, i) => ({ index: i + 1, term: 1, kind: 'conf', change }));
      await log.#write(entries, { term: 1, vote: null, commit: entries.length }, undefined, true);
      log.bootstrapped = true;
    } else if ((empty && log.fresh === undefined) || log.fresh === '') {
      // A new incarnation; or a marker from a build before vouches, which named none.
      const incarnation = randomBytes(8).toString('hex');
      await store.batch([{ type: 'put', cf: CF, key: key(group, 'fresh'), value: encodeValue({ fresh: true, incarnation }) }], { sync: true });
      log.fresh = incarnation;
    }
    return log;
  }

  /** Before a host removes a replica's data (its log last): a crash meanwhile leaves a leftover, never a replica to reopen. */
  static async markDropping(store: Store, group: GroupId): Promise<void> {
    await store.batch([{ type: 'put', cf: CF, key: key(group, 'dropping'), value: encodeValue({ dropping: true }) }], { sync: true });
  }

  /** The groups with anything stored whose removal never began: replicas this node still has whole. */
  static async intactGroups(store: Store): Promise<GroupId[]> {
    const groups = await RocksLog.groups(store);
    const marks = await store.getMany(CF, groups.map((g) => key(g, 'dropping')));
    return groups.filter((_, i) => marks[i] === undefined);
  }

  /** The replica was vouched for (`RaftCore.catchingUp` turned false). */
  async clearFresh(): Promise<void> {
    await this.store.batch([{ type: 'del', cf: CF, key: key(this.group, 'fresh') }], { sync: true });
    this.fresh = undefined;
  }

  /** Offline recovery's write (raft/recover.ts), outside any Ready loop: entries after the last and a hard state, synced. */
  async appendRecovered(entries: readonly Entry[], hardState: HardState): Promise<void> {
    assert.ok(entries.length === 0 || entries[0]!.index === this.mem.lastIndex() + 1, 'recovered entries follow the log');
    await this.#write(entries, hardState, undefined, true);
  }

  /** Persist a Ready's snapshot, entries and hard state atomically (fsync when `mustSync`). */
  async save(rd: Ready): Promise<void> {
    await this.#write(rd.entries, rd.hardState, rd.snapshot, rd.mustSync);
  }

  async #write(entries: readonly Entry[], hs: Ready['hardState'], snap: Ready['snapshot'], sync: boolean): Promise<void> {
    const ops: BatchOp[] = [];
    const mem = this.mem;
    let last = mem.lastIndex();
    if (snap !== undefined) {
      for (let i = mem.offsetIndex + 1; i <= last; i++) ops.push({ type: 'del', cf: CF, key: key(this.group, 'log', i) });
      ops.push({ type: 'put', cf: CF, key: key(this.group, 'snap'), value: encodeValue(snap) });
      ops.push({ type: 'put', cf: CF, key: key(this.group, 'offset'), value: encodeValue({ index: snap.meta.index, term: snap.meta.term }) });
      last = snap.meta.index;
    }
    if (entries.length > 0) {
      const first = entries[0]!.index;
      const newLast = entries[entries.length - 1]!.index;
      assert.ok(first <= last + 1, 'raft log must not have gaps');
      for (let i = Math.max(newLast + 1, mem.offsetIndex + 1); i <= last; i++) ops.push({ type: 'del', cf: CF, key: key(this.group, 'log', i) });
      for (const e of entries) if (e.index > (snap?.meta.index ?? mem.offsetIndex)) ops.push({ type: 'put', cf: CF, key: key(this.group, 'log', e.index), value: encodeValue(e) });
    }
    if (hs !== undefined) ops.push({ type: 'put', cf: CF, key: key(this.group, 'hs'), value: encodeValue(hs) });
    await this.store.batch(ops, { sync });
    if (snap !== undefined) mem.applySnapshot(snap);
    mem.append(entries);
    if (hs !== undefined) mem.setHardState(hs);
  }

  /** Record a snapshot of the applied state and compact the log below it (less `retainEntries`). */
  async createSnapshot(meta: Omit<SnapshotMeta, 'term'>, data: Uint8Array, retainEntries: number): Promise<void> {
    const term = this.mem.term(meta.index);
    if (term === undefined || meta.index <= this.mem.snap.meta.index) return;
    const snap = { meta: { ...meta, term }, data };
    const compactTo = Math.max(this.mem.offsetIndex, meta.index - retainEntries);
    const ops: BatchOp[] = [{ type: 'put', cf: CF, key: key(this.group, 'snap'), value: encodeValue(snap) }];
    if (compactTo > this.mem.offsetIndex) {
      ops.push({ type: 'put', cf: CF, key: key(this.group, 'offset'), value: encodeValue({ index: compactTo, term: this.mem.term(compactTo)! }) });
      for (let i = this.mem.offsetIndex + 1; i <= compactTo; i++) ops.push({ type: 'del', cf: CF, key: key(this.group, 'log', i) });
    }
    await this.store.batch(ops, { sync: true });
    this.mem.createSnapshot(meta, data, retainEntries);
  }
}

function key(group: GroupId, ...rest: (string | number)[]): Buffer {
  return encodeKey([group, ...rest]);
}

/** A fresh marker's incarnation ('' for a marker written before incarnations). */
function decodeFresh(buf: Uint8Array): string {
  const v = decodeCbor(buf) as { incarnation?: unknown } | null;
  return typeof v === 'object' && v !== null && typeof v.incarnation === 'string' ? v.incarnation : '';
}
