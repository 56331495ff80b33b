// BM25 postings of one shard, two backends behind one interface:
//   memory  postings in Maps, rebuilt from the shard's records at start (nothing on disk)
//   disk    postings and corpus stats in the `bm25` column family, written in the same atomic
//           batch as the records they describe:
//             [shard, 'p', term, docId] -> u32 tf, u32 doc length   (big-endian, 8 bytes)
//             [shard, 'n']              -> JSON {docCount, totalLength}
// A change is prepared (ops to write + an in-memory apply) and applied only after its batch
// commits, so memory never runs ahead of disk.
import { NUMBER, jsonRecordCodec, objectSchema } from '../core/codec.js';
import { decodeTrailingString, encodeKey, prefixRange } from '../core/keys.js';
import type { BatchOp, Store } from '../storage/db.js';
import { type Bm25Params, type CorpusStats, type Posting, type ScoredId, rankBm25, termFrequencies } from './bm25.js';
import type { CollectionConfig } from './collection-config.js';
import { ENGLISH_STOPWORDS, tokenize } from './tokenize.js';

const corpusStatsCodec = jsonRecordCodec<CorpusStats>('BM25 corpus stats', objectSchema({ docCount: NUMBER, totalLength: NUMBER }));

export interface TextChange {
  readonly id: string;
  /** The document's text before the change (undefined: it did not exist). */
  readonly oldText: string | undefined;
  /** The text after it (undefined: deleted). */
  readonly newText: string | undefined;
}

export interface PreparedChange {
  readonly ops: BatchOp[];
  apply(): void;
}

export interface Bm25Index {
  readonly backend: 'memory' | 'disk';
  prepare(changes: readonly TextChange[]): PreparedChange;
  search(query: string, k: number): Promise<ScoredId[]>;
  stats(): CorpusStats;
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

class MemoryBm25 implements Bm25Index {
  readonly backend = 'memory' as const;
  readonly #analyzer: Analyzer;
  readonly #postings = new Map<string, Map<string, number>>();
  readonly #lengths = new Map<string, number>();
  #totalLength = 0;

  constructor(config: CollectionConfig['bm25']) {
    this.#analyzer = new Analyzer(config);
  }

  stats(): CorpusStats {
    return { docCount: this.#lengths.size, totalLength: this.#totalLength };
  }

  prepare(changes: readonly TextChange[]): PreparedChange {
    return {
      ops: [],
      apply: () => {
        for (const c of changes) {
          if (c.oldText !== undefined) this.#remove(c.id, c.oldText);
          if (c.newText !== undefined) this.#add(c.id, c.newText);
        }
      },
    };
  }

  #remove(id: string, text: string): void {
    const len = this.#lengths.get(id);
    if (len === undefined) return;
    for (const term of new Set(this.#analyzer.tokens(text))) {
      const docs = this.#postings.get(term);
      docs?.delete(id);
      if (docs?.size === 0) this.#postings.delete(term);
    }
    this.#lengths.delete(id);
    this.#totalLength -= len;
  }

  #add(id: string, text: string): void {
    const tokens = this.#analyzer.tokens(text);
    for (const [term, tf] of termFrequencies(tokens)) {
      let docs = this.#postings.get(term);
      if (docs === undefined) this.#postings.set(term, (docs = new Map()));
      docs.set(id, tf);
    }
    this.#lengths.set(id, tokens.length);
    this.#totalLength += tokens.length;
  }

  async search(query: string, k: number): Promise<ScoredId[]> {
    const byTerm = new Map<string, Posting[]>();
    for (const term of this.#analyzer.queryTerms(query)) {
      const docs = this.#postings.get(term);
      if (docs === undefined) continue;
      const list: Posting[] = [];
      for (const [docId, tf] of docs) list.push({ docId, tf, docLength: this.#lengths.get(docId) ?? 0 });
      byTerm.set(term, list);
    }
    return rankBm25(byTerm, this.stats(), this.#analyzer.params, k);
  }
}

function postingValue(tf: number, docLength: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(tf, 0);
  b.writeUInt32BE(docLength, 4);
  return b;
}

/**
 * The disk backend keeps the decoded postings of recently queried terms, up to this many
 * postings in all (a few tens of MB): common terms have long lists, and reading them back from
 * RocksDB on every query dominated BM25 latency.
 */
const CACHED_POSTINGS_MAX = 500_000;

class DiskBm25 implements Bm25Index {
  readonly backend = 'disk' as const;
  readonly #analyzer: Analyzer;
  readonly #store: Store;
  readonly #shard: number;
  #stats: CorpusStats;
  /** term -> postings, least recently used first. */
  readonly #cache = new Map<string, Posting[]>();
  #cachedPostings = 0;
  /** Bumped by every applied change: a read that spans one is not cached. */
  #applied = 0;

  constructor(config: CollectionConfig['bm25'], store: Store, shard: number, stats: CorpusStats) {
    this.#analyzer = new Analyzer(config);
    this.#store = store;
    this.#shard = shard;
    this.#stats = stats;
  }

  static statsKey(shard: number): Buffer {
    return encodeKey([shard, 'n']);
  }

  static async open(config: CollectionConfig['bm25'], store: Store, shard: number): Promise<DiskBm25> {
    const raw = await store.get('bm25', DiskBm25.statsKey(shard));
    const stats = raw === undefined ? { docCount: 0, totalLength: 0 } : corpusStatsCodec.decode(raw);
    return new DiskBm25(config, store, shard, stats);
  }

  stats(): CorpusStats {
    return this.#stats;
  }

  prepare(changes: readonly TextChange[]): PreparedChange {
    const ops: BatchOp[] = [];
    let { docCount, totalLength } = this.#stats;
    for (const c of changes) {
      if (c.oldText !== undefined) {
        const tokens = this.#analyzer.tokens(c.oldText);
        for (const term of new Set(tokens)) ops.push({ type: 'del', cf: 'bm25', key: encodeKey([this.#shard, 'p', term, c.id]) });
        docCount -= 1;
        totalLength -= tokens.length;
      }
      if (c.newText !== undefined) {
        const tokens = this.#analyzer.tokens(c.newText);
        for (const [term, tf] of termFrequencies(tokens)) {
          ops.push({ type: 'put', cf: 'bm25', key: encodeKey([this.#shard, 'p', term, c.id]), value: postingValue(tf, tokens.length) });
        }
        docCount += 1;
        totalLength += tokens.length;
      }
    }
    const next = { docCount, totalLength };
    ops.push({ type: 'put', cf: 'bm25', key: DiskBm25.statsKey(this.#shard), value: corpusStatsCodec.encode(next) });
    return {
      ops,
      apply: () => {
        this.#stats = next;
        this.#applied++;
        // Committed: drop every cached list the change touched.
        for (const c of changes) {
          for (const text of [c.oldText, c.newText]) if (text !== undefined) for (const term of this.#analyzer.tokens(text)) this.#uncache(term);
        }
      },
    };
  }

  #uncache(term: string): void {
    const list = this.#cache.get(term);
    if (list === undefined) return;
    this.#cache.delete(term);
    this.#cachedPostings -= list.length;
  }

  async #postings(term: string): Promise<Posting[]> {
    const cached = this.#cache.get(term);
    if (cached !== undefined) {
      this.#cache.delete(term); // move to the most recently used end
      this.#cache.set(term, cached);
      return cached;
    }
    const applied = this.#applied;
    const range = prefixRange([this.#shard, 'p', term]);
    const prefixLength = range.gte.length;
    const list: Posting[] = [];
    for await (const [key, value] of this.#store.entries('bm25', range)) {
      list.push({ docId: decodeTrailingString(key, prefixLength), tf: value.readUInt32BE(0), docLength: value.readUInt32BE(4) });
    }
    // Cache only what no change overtook while we read (apply() could not invalidate it).
    if (applied === this.#applied && list.length <= CACHED_POSTINGS_MAX && !this.#cache.has(term)) {
      this.#cache.set(term, list);
      this.#cachedPostings += list.length;
      for (const [old, oldList] of this.#cache) {
        if (this.#cachedPostings <= CACHED_POSTINGS_MAX) break;
        this.#cache.delete(old);
        this.#cachedPostings -= oldList.length;
      }
    }
    return list;
  }

  async search(query: string, k: number): Promise<ScoredId[]> {
    const byTerm = new Map<string, Posting[]>();
    for (const term of this.#analyzer.queryTerms(query)) {
      const list = await this.#postings(term);
      if (list.length > 0) byTerm.set(term, list);
    }
    return rankBm25(byTerm, this.#stats, this.#analyzer.params, k);
  }
}

export async function openBm25(config: CollectionConfig, store: Store, shard: number): Promise<Bm25Index | undefined> {
  switch (config.bm25_backend) {
    case 'none':
      return undefined;
    case 'memory':
      return new MemoryBm25(config.bm25);
    case 'disk':
      return DiskBm25.open(config.bm25, store, shard);
  }
}

/** Every key the disk backend holds for a shard. */
export function bm25ShardRange(shard: number): { gte: Buffer; lt: Buffer } {
  return prefixRange([shard]);
}
