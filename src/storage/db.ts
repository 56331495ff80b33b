// The node's one RocksDB. Owns the open/closing/closed lifecycle; engines get a Store and
// never touch the binding. Keys are Buffers built by core/keys.ts; values are Buffers.
import { RocksLevel } from '@nxtedition/rocksdb';
import { mkdir, readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FirkinError } from '../core/errors.js';
import { openFilesSoftLimit } from './descriptors.js';
import { WriteWorker, unpackOps } from './write-worker.js';

/** Fixed column families (ARCHITECTURE.md, storage layout). `default` is required by RocksDB. */
export const COLUMN_FAMILIES = ['docs', 'revs', 'seq', 'att', 'paths', 'vec', 'bm25', 'raft', 'system'] as const;

/** Columns read by queries, each with a block cache of `cacheMb` (the others keep the binding's 8 MB). */
const DATA_COLUMNS = ['docs', 'revs', 'paths', 'vec', 'bm25'] as const satisfies readonly ColumnFamily[];

/**
 * Every column's memtables and levels: the binding's "level" preset over a 64 MB budget, i.e.
 * 16 MB memtables (flushed two at a time), 8 MB table files, a 64 MB level 1, and levels 0-1
 * uncompressed (zstd from level 2). The binding's defaults (RocksDB's: 64 MB memtables, zstd on
 * every level) cost the write thread a skip-list insert in a memtable of up to a million keys
 * and every flush a zstd pass: on random document ids this cuts the node's CPU a document by
 * 8 % and the write thread's by a quarter (docs/benchmarks.md, "Smaller memtables"). The price
 * is more, smaller files: RocksDB keeps each open, ~130 descriptors a GB of data.
 */
const COLUMN_SHAPE = { compaction: 'level', memtableMemoryBudget: 64 * 1024 * 1024 } as const;

/** Unsynced batches up to this many operations are written on the calling thread when the writer is idle. */
const INLINE_UNSYNCED_OPS_MAX = 64;
export type ColumnFamily = (typeof COLUMN_FAMILIES)[number];

/** A column's number in packed ops (`PackedOps`): its place in COLUMN_FAMILIES, as the write thread reads it. */
export function columnNumber(cf: ColumnFamily): number {
  return COLUMN_FAMILIES.indexOf(cf);
}

/**
 * Why RocksDB would not open, for the one line a node prints when it cannot start. The binding
 * wraps RocksDB's own reason in a "Database is not open" error (as its `cause`); the two usual
 * ones also say what to do.
 */
export function openFailure(dir: string, err: unknown): string {
  let reason = err instanceof Error ? err : new Error(String(err));
  while (reason.cause instanceof Error) reason = reason.cause;
  const text = `cannot open RocksDB at ${dir}: ${reason.message}`;
  // A lock held by another process, or by this one (a second open in one process).
  if (/\/LOCK: (Resource temporarily unavailable|No locks available)|lock hold by/.test(reason.message)) {
    return `${text} (another process holds the data directory: is a node already running on it?)`;
  }
  if (/Permission denied/.test(reason.message)) return `${text} (the user running the node must be able to write the data directory)`;
  if (/No space left on device/.test(reason.message)) return `${text} (free space on the data directory's disk: opening writes a new manifest and log)`;
  return text;
}

export type BatchOp =
  | { readonly type: 'put'; readonly cf: ColumnFamily; readonly key: Buffer; readonly value: Buffer }
  | { readonly type: 'del'; readonly cf: ColumnFamily; readonly key: Buffer };

export interface RangeOptions {
  gte?: Buffer;
  gt?: Buffer;
  lte?: Buffer;
  lt?: Buffer;
  reverse?: boolean;
  limit?: number;
}

/** The binding's own iterator, below abstract-level's (`Store.keyStringBatches`). */
interface NativeKeyIterator {
  _nextvAsync(size: number, options: object): Promise<{ rows: (string | undefined)[]; finished: boolean }>;
  close(): Promise<void>;
}

/** See `Store.cursor`. */
export interface EntryCursor {
  /** Up to `batchSize` entries; empty at the end. */
  next(batchSize?: number): Promise<[Buffer, Buffer][]>;
  close(): Promise<void>;
}

export interface WriteOptions {
  /** fsync the WAL before resolving: the durable write. Passed explicitly at every call site. */
  sync: boolean;
}

type StoreState = 'open' | 'closing' | 'closed';

/** See `Store.files`. */
export interface StoreFiles {
  readonly tableFiles: number;
  readonly tableBytes: number;
  readonly walBytes: number;
  /** The process's soft limit on open files; undefined when unknown or unlimited. */
  readonly openFilesLimit: number | undefined;
}

/** `Store.files` scans the directory at most this often. */
const FILES_SCAN_MS = 2_000;
/** `Store.files` stats this many files at a time. */
const FILES_STAT_AT_ONCE = 16;

async function scanFiles(dir: string): Promise<StoreFiles> {
  let tableFiles = 0;
  let tableBytes = 0;
  let walBytes = 0;
  const names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile() && (e.name.endsWith('.sst') || e.name.endsWith('.log'))).map((e) => e.name);
  // A few at a time: a listing of thousands must not fill libuv's pool, which reads serve.
  for (let at = 0; at < names.length; at += FILES_STAT_AT_ONCE) {
    const chunk = names.slice(at, at + FILES_STAT_AT_ONCE);
    // A file compacted away between the listing and here is simply not counted.
    const sizes = await Promise.all(chunk.map((name) => stat(join(dir, name)).then((s) => s.size, () => undefined)));
    chunk.forEach((name, i) => {
      const size = sizes[i];
      if (size === undefined) return;
      if (name.endsWith('.sst')) {
        tableFiles++;
        tableBytes += size;
      } else walBytes += size;
    });
  }
  // Read each time: an operator may raise it on the running process (prlimit). Linux only;
  // elsewhere the limit is unknown and /health says nothing of it.
  const openFilesLimit = openFilesSoftLimit(await readFile('/proc/self/limits', 'utf8').catch(() => ''));
  return { tableFiles, tableBytes, walBytes, openFilesLimit };
}

/** An issued `batchAfter` write, for a later one to depend on. */
export interface WriteTicket {
  readonly id: number;
}

/** The last write RocksDB refused, until one succeeds again (for /health). */
export interface WriteFailure {
  readonly message: string;
  /** When it first failed, of the failures since the last write that succeeded. */
  readonly since: string;
  /** Writes refused since the last one that succeeded. */
  readonly count: number;
}

export class Store {
  #db: RocksLevel;
  #state: StoreState = 'open';
  readonly dir: string;
  /** Off-thread writer (undefined: writes run on the calling thread). */
  #writer: WriteWorker | undefined;
  /** `keyStringBatches`' native reads in flight: the database closes after them. */
  readonly #walks = new Set<Promise<unknown>>();
  #writeFailure: WriteFailure | undefined;
  /** The last listing that completed, and the one under way. */
  #filesDone: { at: number; files: StoreFiles } | undefined;
  #filesScanning: Promise<StoreFiles> | undefined;

  private constructor(db: RocksLevel, dir: string, writer: WriteWorker | undefined) {
    this.#db = db;
    this.dir = dir;
    this.#writer = writer;
  }

  /**
   * `writeWorker`: perform writes on a worker thread so fsync never stalls the event loop.
   * `cacheMb`: the block cache of each column that serves reads of data (documents, bodies,
   * vectors' records, postings, path index; 0: none); the binding keeps one cache per column,
   * and its default (8 MB, used when absent) made a search's ten record reads miss it on 100k
   * vectors.
   */
  static async open(dir: string, options: { writeWorker?: boolean; cacheMb?: number } = {}): Promise<Store> {
    await mkdir(dir, { recursive: true });
    const db = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const data = options.cacheMb === undefined ? COLUMN_SHAPE : { ...COLUMN_SHAPE, cacheSize: Math.min(4095, options.cacheMb) * 1024 * 1024 };
    const columns = Object.fromEntries(['default', ...COLUMN_FAMILIES].map((name) => [name, (DATA_COLUMNS as readonly string[]).includes(name) ? data : COLUMN_SHAPE]));
    try {
      // No WAL compression (the binding's default is zstd): it was a fifth of the write
      // thread's CPU on a BM25 disk load (perf, 2026-12-03), for bytes this disk writes cheaply.
      await db.open({ columns, createIfMissing: true, walCompression: false });
    } catch (err) {
      throw new FirkinError('unavailable', openFailure(dir, err), { cause: err });
    }
    let writer: WriteWorker | undefined;
    if (options.writeWorker === true) {
      try {
        writer = await WriteWorker.start(db.handle, COLUMN_FAMILIES);
      } catch (err) {
        await db.close();
        throw new FirkinError('unavailable', `cannot start the storage writer: ${(err as Error).message}`, { cause: err });
      }
    }
    return new Store(db, dir, writer);
  }

  get state(): StoreState {
    return this.#state;
  }

  #column(cf: ColumnFamily): unknown {
    if (this.#state !== 'open') throw new FirkinError('unavailable', 'storage is closed');
    const column = (this.#db.columns as Record<string, unknown>)[cf];
    if (column === undefined) throw new Error(`unknown column family ${cf}`);
    return column;
  }

  async get(cf: ColumnFamily, key: Buffer): Promise<Buffer | undefined> {
    const [value] = await this.getMany(cf, [key]);
    return value;
  }

  async getMany(cf: ColumnFamily, keys: readonly Buffer[]): Promise<(Buffer | undefined)[]> {
    if (keys.length === 0) return [];
    const values = (await this.#db.getMany(keys as Buffer[], { column: this.#column(cf) })) as (Buffer | undefined)[];
    return values.map((v) => (v === undefined || v === null ? undefined : v));
  }

  /**
   * The same read on this thread, without the thread-pool hop: for a handful of keys that are
   * almost always cached (a search's hits) the hop and its wake-up cost more than the read.
   * Not for scans or many keys: a read that goes to disk blocks the event loop meanwhile.
   */
  getManySync(cf: ColumnFamily, keys: readonly Buffer[]): (Buffer | undefined)[] {
    if (keys.length === 0) return [];
    const db = this.#db as unknown as { _getManySync(keys: Buffer[], options: object): (Buffer | null | undefined)[] };
    return db._getManySync(keys as Buffer[], { column: this.#column(cf) }).map((v) => (v === undefined || v === null ? undefined : v));
  }

  /**
   * Up to `limit` entries of a range, read on this thread (`getManySync`'s trade-off, for a
   * short range): `complete` is false when the range holds more.
   */
  entriesSync(cf: ColumnFamily, range: RangeOptions, limit: number): { entries: [Buffer, Buffer][]; complete: boolean } {
    const it = this.#db.iterator({ ...range, limit: -1, column: this.#column(cf) }) as unknown as {
      _nextvSync(size: number, options: object): { rows: Buffer[]; finished: boolean };
      close(): Promise<void>;
    };
    try {
      // One more than asked: `finished` alone does not say whether a full batch was the end.
      const { rows, finished } = it._nextvSync(limit + 1, {});
      const entries: [Buffer, Buffer][] = [];
      for (let i = 0; i + 1 < rows.length && entries.length < limit; i += 2) entries.push([rows[i]!, rows[i + 1]!]);
      return { entries, complete: finished || rows.length / 2 <= limit };
    } finally {
      // Frees the native iterator on this thread at once; the promise only detaches it from
      // the database's open resources on the next tick.
      void it.close();
    }
  }

  async put(cf: ColumnFamily, key: Buffer, value: Buffer, options: WriteOptions): Promise<void> {
    await this.batch([{ type: 'put', cf, key, value }], options);
  }

  async del(cf: ColumnFamily, key: Buffer, options: WriteOptions): Promise<void> {
    await this.batch([{ type: 'del', cf, key }], options);
  }

  /**
   * All operations apply atomically, or none do. `packed`: more of them, already in the write
   * thread's layout (`PackedOps`, columns by `columnNumber`), applied after `ops`.
   */
  async batch(ops: readonly BatchOp[], options: WriteOptions, packed?: Uint8Array): Promise<void> {
    if (packed !== undefined && packed.length === 0) packed = undefined;
    if (ops.length === 0 && packed === undefined) return;
    // An unsynced small batch with nothing queued on the thread is written here: it costs
    // microseconds (no fsync), where a trip to the thread and back costs two thread wake-ups
    // (a Raft commit-index update sits on the commit path). With writes queued it must follow
    // them, so it goes to the thread too.
    if (this.#writer !== undefined && (options.sync || this.#writer.inFlight > 0 || ops.length > INLINE_UNSYNCED_OPS_MAX || packed !== undefined)) {
      if (this.#state !== 'open') throw new FirkinError('unavailable', 'storage is closed');
      await this.#outcome(this.#writer.write(ops, options.sync, packed));
      return;
    }
    if (packed !== undefined) ops = [...ops, ...(unpackOps(packed, COLUMN_FAMILIES) as BatchOp[])];
    const mapped = ops.map((op) =>
      op.type === 'put'
        ? { type: 'put' as const, key: op.key, value: op.value, column: this.#column(op.cf) }
        : { type: 'del' as const, key: op.key, column: this.#column(op.cf) },
    );
    await this.#outcome(this.#db.batch(mapped, { sync: options.sync }));
  }

  /**
   * A write's end, kept for /health: a refused write is remembered (RocksDB keeps refusing
   * every write after one failed on a full disk, until it is opened again), and one that
   * succeeds clears it. A refusal rejects with `unavailable`, naming RocksDB's reason.
   */
  async #outcome(write: Promise<void>): Promise<void> {
    try {
      await write;
    } catch (err) {
      if (this.#state === 'open') {
        const message = (err as Error).message;
        const earlier = this.#writeFailure;
        this.#writeFailure = { message, since: earlier?.since ?? new Date().toISOString(), count: (earlier?.count ?? 0) + 1 };
      }
      // The data directory's path is the host's: a client is told where under it.
      throw new FirkinError('unavailable', `storage write failed: ${this.withoutDir((err as Error).message)}`, { cause: err });
    }
    this.#writeFailure = undefined;
  }

  /** `text` with the data directory's path as `<data dir>`. */
  withoutDir(text: string): string {
    return text.split(this.dir).join('<data dir>');
  }

  /** The writes RocksDB refuses, if the last one failed. */
  get writeFailure(): WriteFailure | undefined {
    return this.#writeFailure;
  }

  /** Whether `batchAfter` is available (writes go through the write thread). */
  get pipelinesWrites(): boolean {
    return this.#writer !== undefined;
  }

  /**
   * A synced batch handed to the write thread without waiting for the ones before it, and
   * never written if the batch `after` (an earlier ticket) failed: for a writer that builds
   * each batch on the state the previous one leaves. `durable` resolves once it is on disk.
   * `packed`: more ops in the write thread's layout, as for `batch`.
   */
  batchAfter(ops: readonly BatchOp[], after: WriteTicket | undefined, packed?: Uint8Array): { ticket: WriteTicket; durable: Promise<void> } {
    if (this.#writer === undefined) throw new Error('batchAfter needs the write thread (Store.open with writeWorker)');
    if (this.#state !== 'open') throw new FirkinError('unavailable', 'storage is closed');
    const { id, done } = this.#writer.writeAfter(ops, true, after?.id, packed);
    return { ticket: { id }, durable: this.#outcome(done) };
  }

  /** Ordered iteration over a key range, in batches from the native side. */
  async *entries(cf: ColumnFamily, range: RangeOptions = {}): AsyncGenerator<[Buffer, Buffer]> {
    const it = this.#db.iterator({ ...range, limit: range.limit ?? -1, column: this.#column(cf) });
    try {
      for (;;) {
        const batch = (await it.nextv(256)) as [Buffer, Buffer][];
        if (batch.length === 0) return;
        for (const entry of batch) yield entry;
      }
    } finally {
      await it.close();
    }
  }

  async *keys(cf: ColumnFamily, range: RangeOptions = {}): AsyncGenerator<Buffer> {
    for await (const batch of this.keyBatches(cf, range)) yield* batch;
  }

  /** Keys only, a native batch at a time: the cheap way to walk or count a large range. */
  keyBatches(cf: ColumnFamily, range: RangeOptions = {}, batchSize = 1024): AsyncGenerator<Buffer[]> {
    // The native iterator (and so its implicit snapshot) is created now, not on first use:
    // a caller can pin the view to a point between two writes.
    const it = this.#db.iterator({ ...range, limit: range.limit ?? -1, values: false, column: this.#column(cf) });
    return Store.#walkKeys(it, batchSize);
  }

  /**
   * An iterator over a range, created now (with its implicit snapshot): cursors opened
   * together between two writes see one consistent state. The caller closes it.
   */
  cursor(cf: ColumnFamily, range: RangeOptions = {}): EntryCursor {
    const it = this.#db.iterator({ ...range, limit: range.limit ?? -1, column: this.#column(cf) });
    let closed = false;
    return {
      next: async (batchSize = 256) => (closed ? [] : ((await it.nextv(batchSize)) as [Buffer, Buffer][])),
      close: async () => {
        if (closed) return;
        closed = true;
        await it.close();
      },
    };
  }

  /**
   * The keys of a range as strings, a native batch at a time: the binding decodes each key as
   * UTF-8 (a byte sequence that is not UTF-8 reads as U+FFFD), which costs about a third of the
   * Buffer it makes of a key otherwise (0.35 against 0.9–1.5 µs here, with its iterator's
   * layers). For walks that count keys, or read a string part at a place every key of the range
   * shares (`stringPartAfter` in core/keys.ts); never for keys to decode whole. Created now, as
   * `keyBatches`. The binding's iterator is driven directly (no layer to keep a read from
   * running under a close): `close` waits for the reads in flight.
   */
  keyStringBatches(cf: ColumnFamily, range: RangeOptions = {}, batchSize = 4096): AsyncGenerator<string[]> {
    const db = this.#db as unknown as { _iterator(options: object): NativeKeyIterator };
    const it = db._iterator({ ...range, reverse: range.reverse === true, limit: range.limit ?? -1, keys: true, values: false, keyEncoding: 'utf8', valueEncoding: 'buffer', column: this.#column(cf) });
    return this.#walkKeyStrings(it, batchSize);
  }

  async *#walkKeyStrings(it: NativeKeyIterator, batchSize: number): AsyncGenerator<string[]> {
    try {
      for (;;) {
        if (this.#state !== 'open') throw new FirkinError('unavailable', 'storage is closed');
        const read = it._nextvAsync(batchSize, {});
        this.#walks.add(read);
        let result: { rows: (string | undefined)[]; finished: boolean };
        try {
          result = await read;
        } finally {
          this.#walks.delete(read);
        }
        const { rows, finished } = result;
        const keys: string[] = new Array(rows.length / 2);
        for (let i = 0; i < keys.length; i++) keys[i] = rows[2 * i] as string;
        if (keys.length > 0) yield keys;
        if (finished || keys.length === 0) return;
      }
    } finally {
      await it.close();
    }
  }

  static async *#walkKeys(it: ReturnType<RocksLevel['iterator']>, batchSize: number): AsyncGenerator<Buffer[]> {
    try {
      for (;;) {
        const batch = await it.nextv(batchSize);
        if (batch.length === 0) return;
        yield batch.map(([key]) => key);
      }
    } finally {
      await it.close();
    }
  }

  /** How many keys a range holds (up to its `limit`). */
  async count(cf: ColumnFamily, range: RangeOptions = {}): Promise<number> {
    let n = 0;
    for await (const batch of this.keyStringBatches(cf, range)) n += batch.length;
    return n;
  }

  /** Delete every key in [gte, lt). */
  async clearRange(cf: ColumnFamily, range: { gte: Buffer; lt: Buffer }): Promise<void> {
    await this.#db.clear({ gte: range.gte, lt: range.lt, column: this.#column(cf) });
  }

  /** The write thread's counts, for /metrics and /health. */
  stats(): { threadBatches: number; threadWrites: number } {
    return { threadBatches: this.#writer?.stats.batches ?? 0, threadWrites: this.#writer?.stats.writes ?? 0 };
  }

  /**
   * The data directory's table files (their count and bytes, every column's) and WAL bytes,
   * with the process's soft limit on open files (RocksDB keeps every table file open). Read from
   * the directory (the binding's properties see only the `default` column), at most every
   * FILES_SCAN_MS: /health is open to anyone. Once one listing is done, a caller gets the last
   * one at once and a newer one is made meanwhile when it is older than that: a directory of
   * thousands of files never holds up /health.
   */
  files(): Promise<StoreFiles> {
    const now = performance.now();
    if (this.#filesScanning === undefined && (this.#filesDone === undefined || now - this.#filesDone.at >= FILES_SCAN_MS)) {
      // A failed listing is not kept: the next call lists again.
      const scanning = scanFiles(this.dir).then((files) => {
        this.#filesDone = { at: now, files };
        return files;
      });
      this.#filesScanning = scanning;
      const done = () => {
        if (this.#filesScanning === scanning) this.#filesScanning = undefined;
      };
      scanning.then(done, done);
    }
    return this.#filesDone !== undefined ? Promise.resolve(this.#filesDone.files) : this.#filesScanning!;
  }

  async close(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'closing';
    await this.#writer?.stop();
    await Promise.allSettled([...this.#walks]);
    await this.#db.close();
    this.#state = 'closed';
  }
}
