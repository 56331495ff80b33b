// BM25 postings of one shard, two backends behind one interface:
//   memory  postings in arrays per term, rebuilt from the shard's records at start (nothing on disk)
//   disk    postings and corpus stats in the `bm25` column family, written in the same atomic
//           batch as the records they describe:
//             [shard, 'p', term, docId] -> u32 tf, u32 doc length   (big-endian, 8 bytes)
//             [shard, 'f', term]        -> u32 df, u32 tf max, u32 doc length min (the term's bound)
//             [shard, 'g', n]           -> the bounds batch n changed, newer than their 'f' keys:
//                                          (u32 term length, term, df, tf max, length min)*,
//                                          df 0: the term's last posting went
//             [shard, 'n']              -> JSON {docCount, totalLength}
//             [shard, 'v']              -> u32 layout version (3); absent: version 1, which had
//                                          no 'f' entries: `open` derives them from the postings;
//                                          2 had no 'g' entries (read as 3, and marked 3)
//           A batch writes its bounds as one 'g' value, not a key a term (a batch of 1,000
//           documents changes ~6,000 bounds, each a memtable insert on the write thread);
//           every `boundDeltasMax` batches, one writes the 'f' key of every term changed since
//           and deletes the 'g' entries instead (a fold). `open` reads the 'f' keys, then the
//           'g' entries in order.
//           Every term's bound is also kept in memory (loaded at open), so a write computes the
//           new bounds without reading and a query knows each term's df before reading it: in
//           typed columns by term number (`TermBoundTable`), the committed bounds and those the
//           pending changes leave, one map lookup a term a batch.
// A change is prepared (ops to write + an in-memory apply) and applied only after its batch
// commits, so what searches see never runs ahead of disk. (The memory backend stages a batch's
// new postings while the batch is written, under ordinals searches leave out until the apply.)
// The disk backend ranks with MaxScore (`bm25-maxscore.ts`): a term's postings are read whole
// only while the documents left unread could still enter the top k; otherwise the candidates
// already found are looked up in it one by one. The memory backend adds its lists term at a time
// into an array of scores by ordinal (`bm25-accumulate.ts`). Bounds widen on writes and are never
// narrowed by a delete (still valid, only looser); reading a term's whole list tightens them in
// memory.
import { NUMBER, jsonRecordCodec, objectSchema } from '../core/codec.js';
import assert from 'node:assert/strict';
import { LRUCache } from 'lru-cache';
import { type LruScope, SharedLru } from '../core/shared-lru.js';
import { decodeKey, decodeTrailingString, encodeKey, extendKeyView, prefixRange } from '../core/keys.js';
import { type BatchOp, type Store, columnNumber } from '../storage/db.js';
import { PackedOps } from '../storage/write-worker.js';
import { type Bm25Params, type CorpusStats, type QueryStats, type ScoredId, termFrequencies } from './bm25.js';
import { type KeyedColumns, newAccumulator, rankBm25Accumulate } from './bm25-accumulate.js';
import { type PostingColumns, type PostingRead, type QueryTerm, type TermBound, exactBound, rankBm25MaxScore, widenBound } from './bm25-maxscore.js';
import { type BoundChange, TermBoundTable, boundAt } from './bm25-bound-table.js';
import type { CollectionConfig } from './collection-config.js';
import { ENGLISH_STOPWORDS, tokenize } from './tokenize.js';

const BM25_COLUMN = columnNumber('bm25');
const corpusStatsCodec = jsonRecordCodec<CorpusStats>('BM25 corpus stats', objectSchema({ docCount: NUMBER, totalLength: NUMBER }));

export interface TextChange {
  readonly id: string;
  /** The document's text before the change (undefined: it did not exist). */
  readonly oldText: string | undefined;
  /** The text after it (undefined: deleted). */
  readonly newText: string | undefined;
}

/**
 * A change's batch ops, and its effect on memory. The shard writes the ops, then calls `stage`
 * (optional) while the batch is being written, then `apply` once it committed, or `abandon` if
 * it failed. What `stage` does is invisible to searches until `apply`; `apply` stages first
 * if nothing did.
 */
export interface PreparedChange {
  readonly ops: BatchOp[];
  /** More ops, in the write thread's layout (`PackedOps`), for the same batch after `ops`. */
  readonly packed?: Uint8Array;
  stage(): void;
  apply(): void;
  abandon(): void;
}

export interface Bm25Index {
  readonly backend: 'memory' | 'disk';
  /**
   * Whether a change may be prepared while earlier prepared ones are still being written (each
   * prepared on top of those, and applied or abandoned in the order prepared). When false, one
   * change at a time: prepared, then applied or abandoned before the next is prepared.
   */
  readonly pipelines: boolean;
  prepare(changes: readonly TextChange[]): PreparedChange;
  /**
   * The best `k` by BM25; with `collection` (the query's statistics summed over every shard of
   * the collection) scored with the collection's idf and avgdl instead of this shard's.
   */
  search(query: string, k: number, collection?: QueryStats): Promise<ScoredId[]>;
  stats(): CorpusStats;
  /** This shard's part of the query's statistics (from memory: no posting is read). */
  queryStats(query: string): QueryStats;
}

function stopwordSet(config: CollectionConfig['bm25']): ReadonlySet<string> | undefined {
  if (config.stopwords === 'none') return undefined;
  if (config.stopwords === 'english') return ENGLISH_STOPWORDS;
  return new Set(config.stopwords);
}

class Analyzer {
  readonly #stopwords: ReadonlySet<string> | undefined;
  readonly params: Bm25Params;
  constructor(config: CollectionConfig['bm25']) {
    this.#stopwords = stopwordSet(config);
    this.params = { k1: config.k1, b: config.b };
  }
  tokens(text: string): string[] {
    return tokenize(text, this.#stopwords);
  }
  queryTerms(query: string): string[] {
    return [...new Set(this.tokens(query))];
  }
}

/** A bound the memory backend updates in place. */
type MutableBound = { -readonly [K in keyof TermBound]: TermBound[K] };

/** A removed posting's term must have a bound counting it. */
function assertCounted(bound: TermBound | undefined, term: string): asserts bound is TermBound {
  assert.ok(bound !== undefined && bound.df > 0, uncounted(term));
}

function uncounted(term: string): string {
  return `a removed posting of ${JSON.stringify(term)} must be counted in its df`;
}

/** Where a backend keeps its terms' bounds (a map, or the memory backend's lists). */
interface BoundsOf {
  get(term: string): TermBound | undefined;
}

/** The index's query terms that occur in the shard, in query order, with their bounds. */
function queryTerms(analyzer: Analyzer, bounds: BoundsOf, query: string): QueryTerm[] {
  const out: QueryTerm[] = [];
  for (const term of analyzer.queryTerms(query)) {
    const bound = bounds.get(term);
    if (bound !== undefined) out.push({ term, bound });
  }
  return out;
}

function queryStatsOf(analyzer: Analyzer, bounds: BoundsOf, stats: CorpusStats, query: string): QueryStats {
  const df: Record<string, number> = {};
  for (const term of analyzer.queryTerms(query)) df[term] = bounds.get(term)?.df ?? 0;
  return { docCount: stats.docCount, totalLength: stats.totalLength, df };
}

/**
 * The terms and corpus to rank with: the shard's own, or with the collection's df and corpus.
 * The shard's tf and length bounds stay valid under any idf and avgdl. A write landing between
 * the two rounds can leave the collection's figures below this shard's: they never count less.
 */
function rankingInputs(terms: readonly QueryTerm[], local: CorpusStats, collection: QueryStats | undefined): { terms: readonly QueryTerm[]; stats: CorpusStats } {
  if (collection === undefined) return { terms, stats: local };
  const stats = { docCount: Math.max(collection.docCount, local.docCount), totalLength: Math.max(collection.totalLength, local.totalLength) };
  return { terms: terms.map((t) => ({ term: t.term, bound: { ...t.bound, df: Math.min(stats.docCount, Math.max(collection.df[t.term] ?? 0, t.bound.df)) } })), stats };
}

/** A posting's tf and document length: one small integer when both fit, else an object. */
type PackedPosting = number | { readonly tf: number; readonly docLength: number };
const PACKED_TF_LIMIT = 1 << 10;
/** tf + docLength * PACKED_TF_LIMIT stays below 2^30: a small integer (Smi) on every V8 build. */
const PACKED_LENGTH_LIMIT = 1 << 20;

function packPosting(tf: number, docLength: number): PackedPosting {
  return tf < PACKED_TF_LIMIT && docLength < PACKED_LENGTH_LIMIT ? tf + docLength * PACKED_TF_LIMIT : { tf, docLength };
}

function unpackPosting(posting: PackedPosting, tfs: Uint32Array, docLengths: Uint32Array, i: number): void {
  if (typeof posting === 'number') {
    tfs[i] = posting % PACKED_TF_LIMIT;
    docLengths[i] = Math.floor(posting / PACKED_TF_LIMIT);
  } else {
    tfs[i] = posting.tf;
    docLengths[i] = posting.docLength;
  }
}

/**
 * A term's postings in the order of the documents' ordinals, which only grow, so an add appends.
 * A removed document's posting stays (its ordinal no longer names a document) until the list
 * holds more removed postings than live ones.
 */
interface TermList {
  ords: number[];
  packed: PackedPosting[];
  removed: number;
  /**
   * df counts the live postings. Updated in place (a search here is synchronous, so none sees
   * one half-changed): a new object per posting was most of an add.
   */
  bound: MutableBound;
}

/**
 * Keeps the postings of `list` whose ordinal `to` maps to one (-1: drop it), under that
 * ordinal, in order: `to` must keep the ordinals ascending. None is removed afterwards.
 */
function remapPostings(list: TermList, to: (ord: number) => number): void {
  let kept = 0;
  for (let i = 0; i < list.ords.length; i++) {
    const ord = to(list.ords[i]!);
    if (ord < 0) continue;
    list.ords[kept] = ord;
    list.packed[kept++] = list.packed[i]!;
  }
  list.ords.length = kept;
  list.packed.length = kept;
  list.removed = 0;
}

/**
 * The partial scores of every ranking into an array (`rankBm25Accumulate`), one for the process:
 * a ranking runs synchronously, so one at a time, and a scratch per shard would hold 20 bytes a
 * document of every shard searched.
 */
const accumulator = newAccumulator();

/** Renumber (and drop every removed posting) once this many ordinals are spent beyond twice the live documents. */
export const SPENT_ORDINALS_SLACK = 1_024;

class MemoryBm25 implements Bm25Index {
  readonly backend = 'memory' as const;
  readonly pipelines = false;
  readonly #analyzer: Analyzer;
  /**
   * term -> its postings as two arrays of small integers (a posting's tf and document length
   * packed into one where they fit: `packPosting`). A map entry per posting, or an object,
   * cost most of an add's time and made every major GC mark millions of them.
   */
  readonly #terms = new Map<string, TermList>();
  /** A term's bound as searches see it: without the postings of documents staged, not applied. */
  readonly #bounds: BoundsOf = {
    get: (term) => {
      const list = this.#terms.get(term);
      if (list === undefined) return undefined;
      const staged = this.#stagedIn(list);
      if (staged === 0) return list.bound;
      return list.bound.df === staged ? undefined : { ...list.bound, df: list.bound.df - staged };
    },
  };
  /** Document id -> its ordinal: a document gets a new one each time it is added. */
  readonly #ordOf = new Map<string, number>();
  /** Ordinal -> document id; undefined once removed (ordinals are never reused). */
  #idOf: (string | undefined)[] = [];
  /** Ordinal -> document length (tokens). */
  #lengthOf: number[] = [];
  /**
   * Ordinals from here on are staged: documents of a batch being written, whose postings are
   * in the lists already (added while the write thread syncs) but not visible to searches
   * until the batch commits and is applied.
   */
  #visibleOrds = 0;
  /**
   * A term's postings as the columns a search reads, built when `visibleOrds` was that; dropped
   * when a removal touches the term, rebuilt when postings beyond it became visible.
   */
  readonly #lists = new Map<string, { readonly columns: KeyedColumns; readonly visibleOrds: number }>();
  #totalLength = 0;
  readonly #spentSlack: number;

  constructor(config: CollectionConfig['bm25'], spentOrdinalsSlack: number) {
    this.#analyzer = new Analyzer(config);
    this.#spentSlack = spentOrdinalsSlack;
  }

  stats(): CorpusStats {
    return { docCount: this.#ordOf.size, totalLength: this.#totalLength };
  }

  prepare(changes: readonly TextChange[]): PreparedChange {
    let staged: { readonly id: string; readonly ord: number }[] | undefined;
    const stage = () => {
      if (staged !== undefined) return;
      // One change staged at a time (the shard writes one batch at a time).
      assert.equal(this.#visibleOrds, this.#idOf.length, 'a BM25 change is staged while another is');
      staged = [];
      for (const c of changes) if (c.newText !== undefined) staged.push({ id: c.id, ord: this.#stage(c.id, c.newText) });
    };
    return {
      ops: [],
      stage,
      apply: () => {
        stage();
        for (const c of changes) if (c.oldText !== undefined) this.#remove(c.id, c.oldText);
        for (const { id, ord } of staged!) {
          // The shard removes a document's old text first: its old postings could not be found without it.
          assert.ok(!this.#ordOf.has(id), `BM25 add of ${JSON.stringify(id)}, which is indexed already`);
          this.#ordOf.set(id, ord);
          this.#totalLength += this.#lengthOf[ord]!;
        }
        this.#visibleOrds = this.#idOf.length;
        if (this.#idOf.length > 2 * this.#ordOf.size + this.#spentSlack) this.#renumber();
      },
      abandon: () => {
        if (staged === undefined) return;
        this.#unstage(changes.flatMap((c) => (c.newText === undefined ? [] : [c.newText])));
        staged = undefined;
      },
    };
  }

  /** How many of `list`'s postings are staged (they are its last ones: the largest ordinals). */
  #stagedIn(list: TermList): number {
    const { ords } = list;
    if (ords.length === 0 || ords[ords.length - 1]! < this.#visibleOrds) return 0;
    return ords.length - gallopTo(ords, this.#visibleOrds, 0);
  }

  /** Removes a document's postings: `text` is the one it was added with. */
  #remove(id: string, text: string): void {
    const ord = this.#ordOf.get(id);
    if (ord === undefined) return;
    for (const term of new Set(this.#analyzer.tokens(text))) {
      const list = this.#terms.get(term);
      // Only a posting the document has: a text other than the one added must not miscount df.
      const at: number = list === undefined ? -1 : gallopTo(list.ords, ord, 0);
      if (list === undefined || list.ords[at] !== ord) continue;
      assertCounted(list.bound, term);
      if (this.#lists.size > 0) this.#lists.delete(term);
      if (--list.bound.df === 0) {
        this.#terms.delete(term);
      } else if (++list.removed * 2 > list.ords.length) {
        this.#compact(list, ord);
      }
    }
    this.#ordOf.delete(id);
    this.#idOf[ord] = undefined;
    this.#totalLength -= this.#lengthOf[ord]!;
  }

  /**
   * Adds a document's postings under a new ordinal, staged (see `#visibleOrds`): its term counts
   * and bounds include it, searches subtract it (`#bounds`, `#columns`) until it is applied.
   */
  #stage(id: string, text: string): number {
    const tokens = this.#analyzer.tokens(text);
    const docLength = tokens.length;
    const ord = this.#idOf.length;
    this.#idOf.push(id);
    this.#lengthOf.push(docLength);
    for (const [term, tf] of termFrequencies(tokens)) {
      const list = this.#terms.get(term);
      if (list === undefined) {
        this.#terms.set(term, { ords: [ord], packed: [packPosting(tf, docLength)], removed: 0, bound: { df: 1, tfMax: tf, docLengthMin: docLength } });
        continue;
      }
      list.ords.push(ord);
      list.packed.push(packPosting(tf, docLength));
      const bound = list.bound;
      bound.df++;
      if (tf > bound.tfMax) bound.tfMax = tf;
      if (docLength < bound.docLengthMin) bound.docLengthMin = docLength;
    }
    return ord;
  }

  /**
   * The staged batch failed: drops its postings (the last ones of each list they are in) and
   * its ordinals (the last ones). Bounds stay as widened: looser, still valid.
   */
  #unstage(texts: readonly string[]): void {
    for (const text of texts) {
      for (const term of new Set(this.#analyzer.tokens(text))) {
        const list = this.#terms.get(term);
        if (list === undefined) continue;
        while (list.ords.length > 0 && list.ords[list.ords.length - 1]! >= this.#visibleOrds) {
          list.ords.pop();
          list.packed.pop();
          list.bound.df--;
        }
        if (list.bound.df === 0) this.#terms.delete(term);
      }
    }
    this.#idOf.length = this.#visibleOrds;
    this.#lengthOf.length = this.#visibleOrds;
  }

  /** Drops the removed postings of `list` (`removing`: the ordinal being removed now). */
  #compact(list: TermList, removing: number): void {
    remapPostings(list, (ord) => (ord === removing || this.#idOf[ord] === undefined ? -1 : ord));
  }

  /** Gives the live documents ordinals 0..n-1 again, in the same order; drops removed postings. */
  #renumber(): void {
    // Old ordinal -> new one, -1 for a removed document.
    const next = new Int32Array(this.#idOf.length).fill(-1);
    const idOf: string[] = [];
    const lengthOf: number[] = [];
    this.#idOf.forEach((id, ord) => {
      if (id === undefined) return;
      next[ord] = idOf.length;
      this.#ordOf.set(id, idOf.length);
      idOf.push(id);
      lengthOf.push(this.#lengthOf[ord]!);
    });
    for (const list of this.#terms.values()) remapPostings(list, (ord) => next[ord]!);
    this.#idOf = idOf;
    this.#lengthOf = lengthOf;
    this.#visibleOrds = idOf.length; // (nothing is staged while a change applies)
    // Cached columns carry the old ordinals as their keys.
    this.#lists.clear();
  }

  async search(query: string, k: number, collection?: QueryStats): Promise<ScoredId[]> {
    const ranked = rankingInputs(queryTerms(this.#analyzer, this.#bounds, query), this.stats(), collection);
    const lists = ranked.terms.map((t) => this.#columns(t.term));
    return rankBm25Accumulate(ranked.terms, lists, ranked.stats, this.#analyzer.params, k, this.#idOf.length, accumulator);
  }

  queryStats(query: string): QueryStats {
    return queryStatsOf(this.#analyzer, this.#bounds, this.stats(), query);
  }

  /** A term's visible live postings as columns, keyed by ordinal (ascending), cached. */
  #columns(term: string): KeyedColumns {
    const list = this.#terms.get(term);
    assert.ok(list !== undefined, 'a query term has postings');
    const cached = this.#lists.get(term);
    // Still whole unless postings it left out (staged then) are visible now.
    if (cached !== undefined && (cached.visibleOrds === this.#visibleOrds || list.ords[list.ords.length - 1]! < cached.visibleOrds)) return cached.columns;
    const staged = this.#stagedIn(list);
    const visible = list.ords.length - staged;
    const live = visible - list.removed;
    const docIds = new Array<string>(live);
    const keys = new Array<number>(live);
    const tfs = new Uint32Array(live);
    const docLengths = new Uint32Array(live);
    let n = 0;
    for (let i = 0; i < visible; i++) {
      const ord = list.ords[i]!;
      const id = this.#idOf[ord];
      if (id === undefined) continue;
      docIds[n] = id;
      keys[n] = ord;
      unpackPosting(list.packed[i]!, tfs, docLengths, n++);
    }
    assert.equal(n, live, `the live postings of ${JSON.stringify(term)} are counted`);
    const columns = { docIds, tfs, docLengths, keys };
    this.#lists.set(term, { columns, visibleOrds: this.#visibleOrds });
    // The whole list was read: the tightest bound (not while staged postings, unread, are in it).
    if (staged === 0) list.bound = exactBound(columns);
    return columns;
  }
}

/**
 * The first index at or after `from` whose value in the ascending `sorted` is at least `value`
 * (`sorted.length` if none): steps of 1, 2, 4, ... from `from`, then a binary search in the
 * last step, so a walk through ascending values costs the log of each gap.
 */
export function gallopTo(sorted: readonly number[], value: number, from: number): number {
  let lo = from;
  let step = 1;
  let hi = from;
  while (hi < sorted.length && sorted[hi]! < value) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = Math.min(hi, sorted.length);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The indexes of items in the order of their groups (`groupOf[i]`), the groups taken in
 * `order`; stable within a group. A counting sort: linear, no comparisons.
 */
export function byGroupOrder(groupOf: readonly number[], order: readonly number[]): Int32Array {
  const rank = new Int32Array(order.length);
  order.forEach((group, r) => (rank[group] = r));
  const starts = new Int32Array(order.length + 1);
  for (const group of groupOf) starts[rank[group]! + 1]! += 1;
  for (let r = 0; r < order.length; r++) starts[r + 1]! += starts[r]!;
  const out = new Int32Array(groupOf.length);
  for (let i = 0; i < groupOf.length; i++) out[starts[rank[groupOf[i]!]!]!++] = i;
  return out;
}

/** A posting's value in one scratch Buffer, valid until the next call: `PackedOps` copies it at once. */
const postingScratch = Buffer.alloc(8);

function postingValueView(tf: number, docLength: number): Buffer {
  postingScratch.writeUInt32BE(tf, 0);
  postingScratch.writeUInt32BE(docLength, 4);
  return postingScratch;
}

/** The columns of a term's key/value entries, read in batches (keys end in the doc id after `prefixLength` bytes). */
function decodeList(batches: readonly (readonly [Buffer, Buffer][])[], prefixLength: number): PostingColumns {
  let count = 0;
  for (const batch of batches) count += batch.length;
  const docIds = new Array<string>(count);
  const tfs = new Uint32Array(count);
  const docLengths = new Uint32Array(count);
  let i = 0;
  for (const batch of batches) {
    for (const [key, value] of batch) {
      docIds[i] = decodeTrailingString(key, prefixLength);
      tfs[i] = value.readUInt32BE(0);
      docLengths[i] = value.readUInt32BE(4);
      i++;
    }
  }
  return { docIds, tfs, docLengths };
}

function boundValue(bound: TermBound): Buffer {
  const b = Buffer.allocUnsafe(12);
  writeBound(b, 0, bound);
  return b;
}

/** A bound's 12 bytes at `at` (no bound: zeros, df 0). */
function writeBound(out: Buffer, at: number, bound: TermBound | undefined): void {
  out.writeUInt32BE(bound?.df ?? 0, at);
  out.writeUInt32BE(bound?.tfMax ?? 0, at + 4);
  out.writeUInt32BE(bound?.docLengthMin ?? 0, at + 8);
}

function decodeBound(value: Buffer): TermBound {
  assert.equal(value.length, 12, 'a BM25 term bound is 12 bytes');
  return { df: value.readUInt32BE(0), tfMax: value.readUInt32BE(4), docLengthMin: value.readUInt32BE(8) };
}

/** The `bm25` layout this code writes; see the top of the file. */
const LAYOUT_VERSION = 3;

/** A fold comes sooner when the unfolded deltas hold this many bounds (`open` reads them all). */
const BOUND_DELTA_ENTRIES_MAX = 500_000;

/** One batch's changed bounds as a 'g' value (see the layout above). */
function encodeBoundDeltas(terms: readonly string[], change: BoundChange): Buffer {
  let size = 0;
  for (const term of terms) size += 16 + Buffer.byteLength(term);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  terms.forEach((term, i) => {
    const length = out.write(term, at + 4);
    out.writeUInt32BE(length, at);
    at += 4 + length;
    out.writeUInt32BE(change.df[i]!, at);
    out.writeUInt32BE(change.tfMax[i]!, at + 4);
    out.writeUInt32BE(change.lengthMin[i]!, at + 8);
    at += 12;
  });
  return out;
}

export function decodeBoundDeltas(value: Buffer, each: (term: string, bound: TermBound | undefined) => void): void {
  for (let at = 0; at < value.length; ) {
    assert.ok(at + 4 <= value.length, 'a BM25 bound delta ends inside an entry');
    const length = value.readUInt32BE(at);
    assert.ok(at + 16 + length <= value.length, 'a BM25 bound delta ends inside an entry');
    const term = value.toString('utf8', at + 4, at + 4 + length);
    at += 4 + length;
    const bound = decodeBound(value.subarray(at, at + 12));
    each(term, bound.df === 0 ? undefined : bound);
    at += 12;
  }
}

/** The disk backend's unfolded bound deltas: numbers `first` to `next` - 1 are on disk. */
interface DeltaState {
  first: number;
  next: number;
  /** Bounds they hold. */
  entries: number;
}

/** Term bounds written per batch when a version-1 shard is migrated at open. */
const MIGRATION_BATCH_TERMS = 10_000;

/**
 * Bytes of decoded postings the disk backend keeps for a node's shards: common terms have long
 * lists, and reading them back from RocksDB on every query dominated BM25 latency. One bound
 * for all shards (it was 500,000 postings per shard, ~40 MB each): a query set that cycles
 * through more than the cache holds finds nothing in an LRU, so one large shared bound serves
 * better than many small ones.
 */
export const POSTING_CACHE_BYTES = 128 * 1024 * 1024;
/** Bytes of a cached posting (doc id string, its array slot, 8 bytes of numbers: measured ~40 with 5-character ids)... */
const CACHED_POSTING_BYTES = 36;
/** ...and of its entry in the by-id map a lookup builds (measured ~29). */
const CACHED_BY_ID_BYTES = 32;
/** ...and of its slot (`CachedList.keyed`, counted from the start: it is dealt on the first ranking). */
const CACHED_SLOT_BYTES = 4;
/** A cached list's own overhead beside its postings. */
const CACHED_LIST_BYTES = 96;

/**
 * A lookup in a term that is not cached reads its ids' postings by key until the ids looked
 * up in the term so far, times this, reach its df; then the whole list, which is cached (a
 * point read costs a few sequential ones). Rent, then buy: a term only ever looked up costs
 * at most about two whole reads before it is read once and kept, and one looked up rarely is
 * never read whole.
 */
const POINT_READ_COST = 4;
/** Terms whose point-read ids are counted (least recently looked up forgotten). */
const LOOKUP_COUNTS_MAX = 10_000;

/** The largest native batch one list read asks for (a longer list takes several). */
const LIST_READ_BATCH_MAX = 65_536;

export interface DiskLimits {
  /**
   * Lists up to this long, and lookups of up to this many ids, are read on the event loop's
   * thread (`Store.entriesSync`, `getManySync`): BM25 data is small and hot, and a thread-pool
   * hop per term read cost more than the read (a query makes several). Longer ones go through
   * the pool so that a read which does reach the disk cannot hold the loop for long.
   */
  readonly syncListPostingsMax: number;
  readonly syncLookupsMax: number;
  /**
   * Slots (`DiskBm25.#slots`, ~50 bytes each) a shard keeps before dealing them anew, whatever
   * its size: a disk-backed shard may hold far more documents than memory should name, and the
   * shared posting cache holds at most ~3M postings of every shard together.
   */
  readonly slotsMax: number;
  /** Bound deltas (one a batch) between two folds (see the layout above). */
  readonly boundDeltasMax: number;
  /** Numbers of terms gone a shard's bound table keeps beyond its live ones before it reclaims them (`TermBoundTable`). */
  readonly goneTermsSlack: number;
}
const DISK_LIMITS: DiskLimits = { syncListPostingsMax: 4_096, syncLookupsMax: 256, slotsMax: 1 << 20, boundDeltasMax: 64, goneTermsSlack: 4_096 };

interface CachedList {
  readonly list: PostingColumns;
  /** Doc id -> its entry in the list; built on the first lookup. */
  byId: Map<string, number> | undefined;
  /**
   * The list with each document's slot in its index (`DiskBm25.#slots`), dealt in epoch
   * `slotEpoch`; dealt when the list is first ranked from the cache (a list read for MaxScore
   * and not kept takes none).
   */
  keyed: KeyedColumns | undefined;
  slotEpoch: number;
}

/** Decoded term lists of disk-backed shards, shared by a node's: each index instance reads and writes its own scope, by term. */
export type PostingCache = SharedLru<CachedList>;

export function newPostingCache(maxBytes = POSTING_CACHE_BYTES): PostingCache {
  return new SharedLru({ maxSize: maxBytes });
}

function cachedListBytes(term: string, entry: CachedList): number {
  let bytes = CACHED_LIST_BYTES + term.length;
  for (const docId of entry.list.docIds) bytes += CACHED_POSTING_BYTES + CACHED_SLOT_BYTES + docId.length;
  if (entry.byId !== undefined) bytes += entry.list.docIds.length * CACHED_BY_ID_BYTES;
  return bytes;
}

/**
 * Each index instance's own key prefix in a shared posting cache: a shard reopened over
 * dropped data (a replica's snapshot install) must never read the old instance's lists.
 */

/** A prepared disk change not applied yet: what changes prepared after it build on. */
interface PendingChange {
  /** Bounds it sets (df 0: the term's last posting goes), by term number, in `terms`' order. */
  readonly change: BoundChange;
  /** The terms it changes, sorted. */
  readonly terms: readonly string[];
  readonly next: CorpusStats;
  /** Its bound delta's number, and whether it folds instead (writes the 'f' keys). */
  readonly delta: number;
  readonly folds: boolean;
}

class DiskBm25 implements Bm25Index {
  readonly backend = 'disk' as const;
  readonly pipelines = true;
  readonly #analyzer: Analyzer;
  readonly #store: Store;
  readonly #shard: number;
  #stats: CorpusStats;
  /**
   * Every term of the shard's bound: committed (tightened by whole-list reads), and as the
   * pending changes leave it.
   */
  readonly #table: TermBoundTable;
  readonly #bounds: BoundsOf = { get: (term) => this.#table.committed(term) };
  /** Recently read lists by term: this instance's scope of the node's cache. */
  readonly #cache: LruScope<CachedList>;
  readonly #maxCachedBytes: number;
  /** Bumped by every applied change: a read that spans one is not cached. */
  #applied = 0;
  /** Ids read by key per uncached term since its list was last read whole (see POINT_READ_COST). */
  // Bounded by `maxSize` (each entry 1), not `max`: lru-cache allocates `max` slots up front,
  // ~0.2 MB a shard before its first search (a disk collection of 4 shards cost 0.7 MB idle).
  readonly #pointReads = new LRUCache<string, number>({ maxSize: LOOKUP_COUNTS_MAX, sizeCalculation: () => 1 });
  readonly #limits: DiskLimits;
  /**
   * Doc id -> a small number of its own (its slot), dealt as lists are read: a query whose
   * lists are all cached ranks them into an array of scores by slot (`bm25-accumulate.ts`),
   * a tenth of MaxScore's cost when common terms meet. Dealt anew (a new epoch; cached lists
   * take new slots when next ranked) once removed documents' slots pass twice the live ones,
   * or there are `limits.slotsMax` of them.
   */
  #slots = new Map<string, number>();
  #slotEpoch = 0;
  readonly #spentSlack: number;
  /**
   * Changes prepared and not yet applied or abandoned, oldest first: a change prepared while
   * others are being written counts on their bounds and stats (searches see none of them).
   */
  readonly #pending: PendingChange[] = [];
  /** The committed bound deltas (`#pending` may add to them). */
  readonly #deltas: DeltaState;

  /** `unfolded`: the terms the deltas on disk change (their 'f' keys are behind). */
  constructor(config: CollectionConfig['bm25'], store: Store, shard: number, stats: CorpusStats, bounds: Map<string, TermBound>, deltas: DeltaState, unfolded: ReadonlySet<string>, limits: DiskLimits, cache: PostingCache, spentSlotsSlack: number) {
    this.#deltas = deltas;
    this.#limits = limits;
    this.#spentSlack = spentSlotsSlack;
    this.#cache = cache.scope();
    this.#maxCachedBytes = cache.maxSize;
    this.#analyzer = new Analyzer(config);
    this.#store = store;
    this.#shard = shard;
    this.#stats = stats;
    this.#table = new TermBoundTable(bounds, limits.goneTermsSlack);
    for (const term of unfolded) this.#table.markUnfolded(this.#table.numberOf(term));
  }

  static statsKey(shard: number): Buffer {
    return encodeKey([shard, 'n']);
  }

  static async open(config: CollectionConfig['bm25'], store: Store, shard: number, limits: DiskLimits, cache: PostingCache, spentSlotsSlack: number): Promise<DiskBm25> {
    const raw = await store.get('bm25', DiskBm25.statsKey(shard));
    const stats = raw === undefined ? { docCount: 0, totalLength: 0 } : corpusStatsCodec.decode(raw);
    const version = await store.get('bm25', encodeKey([shard, 'v']));
    if (version !== undefined) assert.ok([2, LAYOUT_VERSION].includes(version.readUInt32BE(0)), `BM25 layout of shard ${shard}: version ${version.readUInt32BE(0)}, this build reads 1 to ${LAYOUT_VERSION}`);
    const bounds = version === undefined ? await migrateToBounds(store, shard) : await loadBounds(store, shard);
    // Version 2 is version 3 without deltas; marked 3 before any is written (a build that reads
    // only 2 would miss them).
    if (version !== undefined && version.readUInt32BE(0) === 2) await store.batch([{ type: 'put', cf: 'bm25', key: encodeKey([shard, 'v']), value: layoutVersionValue() }], { sync: true });
    const deltas: DeltaState = { first: 0, next: 0, entries: 0 };
    const unfolded = new Set<string>();
    let first: number | undefined;
    for await (const [key, value] of store.entries('bm25', prefixRange([shard, 'g']))) {
      const n = decodeKey(key)[2];
      assert.ok(typeof n === 'number', 'a BM25 bound delta key ends in its number');
      first ??= n;
      deltas.next = n + 1;
      decodeBoundDeltas(value, (term, bound) => {
        if (bound === undefined) bounds.delete(term);
        else bounds.set(term, bound);
        unfolded.add(term);
        deltas.entries++;
      });
    }
    deltas.first = first ?? 0;
    return new DiskBm25(config, store, shard, stats, bounds, deltas, unfolded, limits, cache, spentSlotsSlack);
  }

  stats(): CorpusStats {
    return this.#stats;
  }

  /**
   * The bound deltas as the pending changes leave them; `since`: the first pending change after
   * the last pending fold (0: none folds).
   */
  #deltasAfterPending(): { first: number; next: number; entries: number; since: number } {
    let { first, next, entries } = this.#deltas;
    let since = 0;
    this.#pending.forEach((p, i) => {
      if (p.folds) {
        first = p.delta + 1;
        entries = 0;
        since = i + 1;
      } else {
        entries += p.terms.length;
      }
      next = p.delta + 1;
    });
    return { first, next, entries, since };
  }

  /** Every term changed since the last fold, by number, the pending changes' included (for a fold: rare). */
  #unfoldedAfterPending(since: number): Set<number> {
    const terms = new Set<number>(since === 0 ? this.#table.unfoldedNumbers() : []);
    for (const p of this.#pending.slice(since)) for (const n of p.change.numbers) terms.add(n);
    return terms;
  }

  prepare(changes: readonly TextChange[]): PreparedChange {
    let { docCount, totalLength } = this.#pending.at(-1)?.next ?? this.#stats;
    const table = this.#table;
    // The terms the change touches, numbered as met, each with its bound as the change leaves
    // it (df 0: its last posting goes), from the table's ahead layer: the pending changes'
    // bounds over the committed ones. No object per posting beyond its op.
    const numbers = new Map<string, number>();
    const names: string[] = [];
    const tableNumbers: number[] = [];
    const dfs: number[] = [];
    const tfMaxes: number[] = [];
    const lengthMins: number[] = [];
    const numberOf = (term: string): number => {
      let n = numbers.get(term);
      if (n === undefined) {
        const t = table.numberOf(term);
        numbers.set(term, (n = names.length));
        names.push(term);
        tableNumbers.push(t);
        dfs.push(table.aheadDf(t));
        tfMaxes.push(table.aheadTfMax(t));
        lengthMins.push(table.aheadLengthMin(t));
      }
      return n;
    };
    // Postings in the changes' order (a document's delete before its put): term, change, and
    // tf and length (tf -1: a delete). Their ops are made once ordered (below).
    const termOf: number[] = [];
    const changeOf: number[] = [];
    const tfOf: number[] = [];
    const lengthOf: number[] = [];
    changes.forEach((c, at) => {
      if (c.oldText !== undefined) {
        const tokens = this.#analyzer.tokens(c.oldText);
        for (const term of new Set(tokens)) {
          const n = numberOf(term);
          assert.ok(dfs[n]! > 0, uncounted(term));
          termOf.push(n), changeOf.push(at), tfOf.push(-1), lengthOf.push(0);
          // Its last posting gone, the term's next one sets its bound afresh.
          if (--dfs[n]! === 0) (tfMaxes[n] = 0), (lengthMins[n] = Infinity);
        }
        docCount -= 1;
        totalLength -= tokens.length;
      }
      if (c.newText !== undefined) {
        const tokens = this.#analyzer.tokens(c.newText);
        for (const [term, tf] of termFrequencies(tokens)) {
          const n = numberOf(term);
          termOf.push(n), changeOf.push(at), tfOf.push(tf), lengthOf.push(tokens.length);
          dfs[n]! += 1;
          if (tf > tfMaxes[n]!) tfMaxes[n] = tf;
          if (tokens.length < lengthMins[n]!) lengthMins[n] = tokens.length;
        }
        docCount += 1;
        totalLength += tokens.length;
      }
    });
    // Written term by term, in order: RocksDB inserts a batch's keys into its memtable one at
    // a time, and a key next to the last one inserted costs the write thread about half of one
    // elsewhere (docs/benchmarks.md, "BM25 disk backend: a batch's keys in order"). The ops are
    // made in that order too: packing them reads them in the order they were allocated.
    const sorted = [...names].sort();
    const sortedNumbers = sorted.map((term) => numbers.get(term)!);
    // A posting's key is its term's prefix and its document's id, each encoded once.
    const prefixes = names.map((term) => encodeKey([this.#shard, 'p', term]));
    const idParts = changes.map((c) => encodeKey([c.id]));
    // Straight into the write thread's layout: no op object or key Buffer per posting.
    const packed = new PackedOps();
    for (const i of byGroupOrder(termOf, sortedNumbers)) {
      if (tfOf[i]! < 0) packed.delJoined(BM25_COLUMN, prefixes[termOf[i]!]!, idParts[changeOf[i]!]!);
      else packed.putJoined(BM25_COLUMN, prefixes[termOf[i]!]!, idParts[changeOf[i]!]!, postingValueView(tfOf[i]!, lengthOf[i]!));
    }
    // Bounds this change sets (df 0: the term's last posting goes), as one delta, or, every
    // `boundDeltasMax` changes, a fold: the 'f' key of every term changed since the last one.
    const count = sorted.length;
    const change: BoundChange = { numbers: new Int32Array(count), df: new Uint32Array(count), tfMax: new Uint32Array(count), lengthMin: new Uint32Array(count) };
    sortedNumbers.forEach((n, i) => {
      change.numbers[i] = tableNumbers[n]!;
      // A term whose last posting goes has tf max 0 already (above), and no shortest document.
      change.df[i] = dfs[n]!;
      change.tfMax[i] = tfMaxes[n]!;
      change.lengthMin[i] = dfs[n] === 0 ? 0 : lengthMins[n]!;
    });
    const deltas = this.#deltasAfterPending();
    const delta = deltas.next;
    const folds = delta + 1 - deltas.first >= this.#limits.boundDeltasMax || deltas.entries + count > BOUND_DELTA_ENTRIES_MAX;
    if (folds) {
      const boundPrefix = encodeKey([this.#shard, 'f']);
      const inChange = new Map<number, number>();
      change.numbers.forEach((t, i) => inChange.set(t, i));
      const unfolded = this.#unfoldedAfterPending(deltas.since);
      for (const t of change.numbers) unfolded.add(t);
      const folded = [...unfolded].map((t) => ({ t, term: table.nameOf(t) })).sort((a, b) => (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));
      for (const { t, term } of folded) {
        const i = inChange.get(t);
        const bound = i === undefined ? table.aheadBound(t) : boundAt(change, i);
        const key = extendKeyView(boundPrefix, [term]);
        if (bound === undefined) packed.del(BM25_COLUMN, key);
        else packed.put(BM25_COLUMN, key, boundValue(bound));
      }
      for (let n = deltas.first; n < delta; n++) packed.del(BM25_COLUMN, encodeKey([this.#shard, 'g', n]));
    } else {
      packed.put(BM25_COLUMN, encodeKey([this.#shard, 'g', delta]), encodeBoundDeltas(sorted, change));
    }
    const next = { docCount, totalLength };
    packed.put(BM25_COLUMN, DiskBm25.statsKey(this.#shard), corpusStatsCodec.encode(next));
    const bytes = packed.bytes();
    // Pending from here until applied or abandoned: nothing that can throw comes after this.
    const pending: PendingChange = { change, terms: sorted, next, delta, folds };
    this.#pending.push(pending);
    table.prepared(change);
    return {
      ops: [],
      packed: bytes,
      // The postings are in the batch: nothing to do before it commits.
      stage: () => {},
      // A change prepared on this one is abandoned too (its batch is refused with this one's).
      abandon: () => {
        const at = this.#pending.indexOf(pending);
        if (at < 0) return;
        this.#pending.splice(at, 1);
        table.abandoned(change, this.#pending.map((p) => p.change));
      },
      apply: () => {
        assert.equal(this.#pending[0], pending, 'BM25 changes apply in the order prepared');
        this.#pending.shift();
        this.#stats = next;
        table.applied(change);
        const d = this.#deltas;
        if (folds) {
          table.folded();
          d.first = delta + 1;
          d.entries = 0;
        } else {
          for (const t of change.numbers) table.markUnfolded(t);
          d.entries += count;
        }
        d.next = delta + 1;
        this.#applied++;
        // Committed: drop every cached list the change touched.
        for (const term of sorted) this.#uncache(term);
        table.compactIfSparse(this.#pending.length);
      },
    };
  }

  #uncache(term: string): void {
    this.#cache.delete(term);
  }

  async #postings(term: string): Promise<CachedList> {
    const cached = this.#cache.get(term);
    if (cached !== undefined) return cached;
    const applied = this.#applied;
    const range = prefixRange([this.#shard, 'p', term]);
    const prefixLength = range.gte.length;
    // A short list is read on this thread; a long one through the pool, in batches its df sizes.
    const df = this.#table.committed(term)?.df ?? 0;
    const max = this.#limits.syncListPostingsMax;
    const synced = df <= max ? this.#store.entriesSync('bm25', range, max) : undefined;
    const list = synced?.complete === true ? decodeList([synced.entries], prefixLength) : await this.#readListAsync(range, prefixLength, df);
    const entry: CachedList = { list, byId: undefined, keyed: undefined, slotEpoch: -1 };
    // Only what no applied change overtook while we read is cached or tightens the bound. (A
    // batch that committed during the read but is not applied yet is fine either way: its
    // apply() sets the bound it prepared, wider than both states, and drops the cached list.)
    if (applied === this.#applied && list.docIds.length > 0) {
      this.#table.tightened(term, exactBound(list));
      const size = cachedListBytes(term, entry);
      // A list larger than the whole cache is not kept (`set` would refuse it anyway).
      if (size <= this.#maxCachedBytes && !this.#cache.has(term)) this.#cache.set(term, entry, size);
    }
    return entry;
  }

  #slotsOf(docIds: readonly string[]): Int32Array {
    const keys = new Int32Array(docIds.length);
    for (let i = 0; i < docIds.length; i++) {
      let slot = this.#slots.get(docIds[i]!);
      if (slot === undefined) this.#slots.set(docIds[i]!, (slot = this.#slots.size));
      keys[i] = slot;
    }
    return keys;
  }

  /** A cached list with slots of the current epoch. */
  #keyed(entry: CachedList): KeyedColumns {
    if (entry.keyed === undefined || entry.slotEpoch !== this.#slotEpoch) {
      entry.keyed = { ...entry.list, keys: this.#slotsOf(entry.list.docIds) };
      entry.slotEpoch = this.#slotEpoch;
    }
    return entry.keyed;
  }

  /** A long list through the thread pool, the bound's df sizing the native batches. */
  async #readListAsync(range: { gte: Buffer; lt: Buffer }, prefixLength: number, df: number): Promise<PostingColumns> {
    const batches: [Buffer, Buffer][][] = [];
    const cursor = this.#store.cursor('bm25', range);
    try {
      const batchSize = Math.min(LIST_READ_BATCH_MAX, df + 1);
      for (let batch = await cursor.next(batchSize); batch.length > 0; batch = await cursor.next(batchSize)) batches.push(batch);
    } finally {
      await cursor.close();
    }
    return decodeList(batches, prefixLength);
  }

  /** Builds a list's by-id map, and counts it in the cache if the list is cached. */
  #indexById(term: string, entry: CachedList): Map<string, number> {
    const byId = new Map(entry.list.docIds.map((docId, i) => [docId, i]));
    entry.byId = byId;
    if (this.#cache.peek(term) === entry) this.#cache.set(term, entry, cachedListBytes(term, entry));
    return byId;
  }

  async #read(read: PostingRead): Promise<PostingColumns> {
    if (read.kind === 'list') return (await this.#postings(read.term)).list;
    const df = this.#table.committed(read.term)?.df ?? 0;
    const found: PostingColumns = { docIds: read.docIds, tfs: new Uint32Array(read.docIds.length), docLengths: new Uint32Array(read.docIds.length) };
    const pointReads = (this.#pointReads.get(read.term) ?? 0) + read.docIds.length;
    if (this.#cache.has(read.term) || pointReads * POINT_READ_COST >= df) {
      this.#pointReads.delete(read.term);
      const entry = await this.#postings(read.term);
      const byId = entry.byId ?? this.#indexById(read.term, entry);
      read.docIds.forEach((id, i) => {
        const at = byId.get(id);
        if (at === undefined) return;
        found.tfs[i] = entry.list.tfs[at]!;
        found.docLengths[i] = entry.list.docLengths[at]!;
      });
      return found;
    }
    this.#pointReads.set(read.term, pointReads);
    const keys = read.docIds.map((id) => encodeKey([this.#shard, 'p', read.term, id]));
    const values = keys.length <= this.#limits.syncLookupsMax ? this.#store.getManySync('bm25', keys) : await this.#store.getMany('bm25', keys);
    values.forEach((value, i) => {
      if (value === undefined) return;
      found.tfs[i] = value.readUInt32BE(0);
      found.docLengths[i] = value.readUInt32BE(4);
    });
    return found;
  }

  queryStats(query: string): QueryStats {
    return queryStatsOf(this.#analyzer, this.#bounds, this.#stats, query);
  }

  async search(query: string, k: number, collection?: QueryStats): Promise<ScoredId[]> {
    const ranked = rankingInputs(queryTerms(this.#analyzer, this.#bounds, query), this.#stats, collection);
    // Every list cached: ranked at once from memory. (Dealing slots anew happens only here,
    // before any list of this ranking takes its slots.)
    if (this.#slots.size > Math.min(2 * this.#stats.docCount + this.#spentSlack, this.#limits.slotsMax)) {
      this.#slots = new Map();
      this.#slotEpoch++;
    }
    const cached = ranked.terms.map((t) => this.#cache.get(t.term));
    if (cached.every((entry) => entry !== undefined)) {
      const lists = cached.map((entry) => this.#keyed(entry!));
      return rankBm25Accumulate(ranked.terms, lists, ranked.stats, this.#analyzer.params, k, this.#slots.size, accumulator);
    }
    const run = rankBm25MaxScore(ranked.terms, ranked.stats, this.#analyzer.params, k);
    for (let step = run.next(); ; ) {
      if (step.done === true) return step.value;
      step = run.next(await this.#read(step.value));
    }
  }
}

function layoutVersionValue(): Buffer {
  const version = Buffer.allocUnsafe(4);
  version.writeUInt32BE(LAYOUT_VERSION, 0);
  return version;
}

async function loadBounds(store: Store, shard: number): Promise<Map<string, TermBound>> {
  const bounds = new Map<string, TermBound>();
  const range = prefixRange([shard, 'f']);
  const prefixLength = range.gte.length;
  for await (const [key, value] of store.entries('bm25', range)) bounds.set(decodeTrailingString(key, prefixLength), decodeBound(value));
  return bounds;
}

/**
 * Brings a version-1 shard (postings only) to version 2: derives every term's bound from its
 * postings and writes them, the version last, so a crash midway migrates again at next open.
 */
async function migrateToBounds(store: Store, shard: number): Promise<Map<string, TermBound>> {
  const bounds = new Map<string, TermBound>();
  for await (const [key, value] of store.entries('bm25', prefixRange([shard, 'p']))) {
    const term = decodeKey(key)[2];
    assert.ok(typeof term === 'string', 'a BM25 posting key names its term');
    bounds.set(term, widenBound(bounds.get(term), value.readUInt32BE(0), value.readUInt32BE(4)));
  }
  let ops: BatchOp[] = [];
  for (const [term, bound] of bounds) {
    ops.push({ type: 'put', cf: 'bm25', key: encodeKey([shard, 'f', term]), value: boundValue(bound) });
    if (ops.length >= MIGRATION_BATCH_TERMS) {
      await store.batch(ops, { sync: false });
      ops = [];
    }
  }
  ops.push({ type: 'put', cf: 'bm25', key: encodeKey([shard, 'v']), value: layoutVersionValue() });
  // Synced: the version vouches for every bound written before it.
  await store.batch(ops, { sync: true });
  return bounds;
}

/**
 * `cache`: shared by the node's shards; `limits` (disk) and `spentOrdinalsSlack` (the memory
 * backend's ordinals, the disk backend's slots): tests exercise every read path and the
 * renumbering with small ones.
 */
export async function openBm25(config: CollectionConfig, store: Store, shard: number, cache: PostingCache, limits = DISK_LIMITS, spentOrdinalsSlack = SPENT_ORDINALS_SLACK): Promise<Bm25Index | undefined> {
  switch (config.bm25_backend) {
    case 'none':
      return undefined;
    case 'memory':
      return new MemoryBm25(config.bm25, spentOrdinalsSlack);
    case 'disk':
      return DiskBm25.open(config.bm25, store, shard, limits, cache, spentOrdinalsSlack);
  }
}

/** Every key the disk backend holds for a shard. */
export function bm25ShardRange(shard: number): { gte: Buffer; lt: Buffer } {
  return prefixRange([shard]);
}
