// Exact counts of one value's postings (`[db, ...path, tag, value]`, every document holding
// that value at that path), so `_find` can report `meta.total` of an equality without walking
// every matching key.
//
// Counts live in memory. A count is built the first time a query needs it, by walking the
// value's posting keys once, and kept exact afterwards by the deltas of every committed
// batch (the path indexer records them; the engine's commit hook applies them). The walk
// starts between two commits of the database (`atCommitBoundary`): the iterator's snapshot
// holds exactly the batches committed so far, and every later batch's delta is collected
// while the walk runs, so nothing is counted twice or missed. A bounded number of counts is
// kept (least recently used out); a restart starts empty, as nothing here is on disk.
import { LRUCache } from 'lru-cache';
import { bytesPrefixRange, encodeKey } from '../../core/keys.js';
import type { BatchOp, Store } from '../../storage/db.js';
import type { DocEngine, WinnerChange } from '../engine.js';
import { postingsDiff } from './postings.js';

const EMPTY = Buffer.alloc(0);
export const VALUE_COUNTS_MAX = 100_000;

/** The part of the engine the counts need (an interface, so tests can drive it). */
export type CountsEngine = Pick<DocEngine, 'atCommitBoundary'>;

export class ValueCounts {
  readonly #store: Store;
  readonly #engine: CountsEngine;
  readonly #walkBatch: number;
  /** Value prefix (latin1 of its key bytes, which begin with the db) -> count, least recently used out. */
  readonly #counts: LRUCache<string, number>;
  /** Deltas of a batch being built, by its ops array; applied once the batch is durable. */
  readonly #pending = new WeakMap<readonly BatchOp[], Map<string, number>>();
  /** Walks in progress: the deltas committed since their snapshot. */
  readonly #collecting = new Map<string, { delta: number }[]>();
  readonly #loading = new Map<string, Promise<number>>();
  /** Bumped when a database is dropped: a walk that started before must not store its count. */
  readonly #generation = new Map<string, number>();

  /** `walkBatch`: keys per native call while building (tests make it small to widen races). */
  constructor(store: Store, engine: CountsEngine, options: { max?: number; walkBatch?: number } = {}) {
    this.#store = store;
    this.#engine = engine;
    this.#counts = new LRUCache({ max: options.max ?? VALUE_COUNTS_MAX });
    this.#walkBatch = options.walkBatch ?? 4096;
  }

  /** The path indexer (engine.addIndexer): posting ops into the batch, their deltas noted. */
  readonly indexer = (change: WinnerChange, ops: BatchOp[]): void => {
    const { del, put } = postingsDiff(change.db, change.docId, change.before, change.after);
    if (del.length === 0 && put.length === 0) return;
    // Deltas matter only to counts built or being built. Neither set can gain a value while
    // this batch is being made (a walk starts only between commits), so with both empty (a
    // bulk load nobody counts yet) there is nothing to note.
    if (this.#counts.size === 0 && this.#collecting.size === 0) {
      for (const key of del) ops.push({ type: 'del', cf: 'paths', key });
      for (const key of put) ops.push({ type: 'put', cf: 'paths', key, value: EMPTY });
      return;
    }
    // A posting key is its value prefix followed by the encoded document id.
    const idBytes = encodeKey([change.docId]).length;
    let deltas = this.#pending.get(ops);
    if (deltas === undefined) this.#pending.set(ops, (deltas = new Map()));
    for (const key of del) {
      ops.push({ type: 'del', cf: 'paths', key });
      const prefix = key.toString('latin1', 0, key.length - idBytes);
      deltas.set(prefix, (deltas.get(prefix) ?? 0) - 1);
    }
    for (const key of put) {
      ops.push({ type: 'put', cf: 'paths', key, value: EMPTY });
      const prefix = key.toString('latin1', 0, key.length - idBytes);
      deltas.set(prefix, (deltas.get(prefix) ?? 0) + 1);
    }
  };

  /** The engine's commit hook: the batch is durable, its deltas now hold. */
  readonly committed = (_db: string, ops: readonly BatchOp[]): void => {
    const deltas = this.#pending.get(ops);
    if (deltas === undefined) return;
    this.#pending.delete(ops);
    for (const [prefix, delta] of deltas) {
      if (delta === 0) continue;
      const count = this.#counts.peek(prefix);
      if (count !== undefined) this.#counts.set(prefix, count + delta);
      for (const c of this.#collecting.get(prefix) ?? []) c.delta += delta;
    }
  };

  /** The engine's drop hook: forget the database's counts. */
  readonly dropped = async (db: string): Promise<void> => {
    this.#generation.set(db, (this.#generation.get(db) ?? 0) + 1);
    const dbPrefix = encodeKey([db]).toString('latin1');
    for (const prefix of [...this.#counts.keys()]) if (prefix.startsWith(dbPrefix)) this.#counts.delete(prefix);
  };

  /** The count if it is built (no walk, no LRU touch); undefined otherwise. */
  peek(valuePrefix: Buffer): number | undefined {
    return this.#counts.peek(valuePrefix.toString('latin1'));
  }

  /** How many documents hold this value (`valuePrefix` = encodeKey([db, ...path, tag, value])). */
  async count(db: string, valuePrefix: Buffer): Promise<number> {
    const prefix = valuePrefix.toString('latin1');
    const known = this.#counts.get(prefix);
    if (known !== undefined) return known;
    let loading = this.#loading.get(prefix);
    if (loading === undefined) {
      loading = this.#build(db, prefix, valuePrefix).finally(() => this.#loading.delete(prefix));
      this.#loading.set(prefix, loading);
    }
    return loading;
  }

  async #build(db: string, prefix: string, valuePrefix: Buffer): Promise<number> {
    const generation = this.#generation.get(db) ?? 0;
    const collector = { delta: 0 };
    const walk = await this.#engine.atCommitBoundary(db, () => {
      const batches = this.#store.keyStringBatches('paths', bytesPrefixRange(valuePrefix), this.#walkBatch);
      const list = this.#collecting.get(prefix) ?? [];
      list.push(collector);
      this.#collecting.set(prefix, list);
      return batches;
    });
    let walked = 0;
    try {
      for await (const batch of walk) walked += batch.length;
    } finally {
      const list = this.#collecting.get(prefix)!;
      list.splice(list.indexOf(collector), 1);
      if (list.length === 0) this.#collecting.delete(prefix);
    }
    const count = walked + collector.delta;
    if ((this.#generation.get(db) ?? 0) === generation) {
      this.#counts.set(prefix, count);
    }
    return count;
  }
}
