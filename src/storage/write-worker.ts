// Synced RocksDB writes off the event loop. @nxtedition/rocksdb writes a batch synchronously
// on the calling thread, fsync included, so a synced write on the main thread stalls every
// request for the length of an fsync. A worker thread shares the open database through its
// native handle (the binding supports exactly this) and performs the writes; the main thread
// keeps reads and iterators. Messages are processed in order, so writes stay ordered; those
// that queue up while one is written share the next write and its fsync (group commit).
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);

// Plain JavaScript run with `eval`: no TypeScript loader is needed inside the worker.
const WORKER_SOURCE = `
const { parentPort, workerData, receiveMessageOnPort } = require('node:worker_threads');
const { RocksLevel } = require(workerData.modulePath);
const db = new RocksLevel(workerData.handle, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
// Opening a handle-based instance returns the live database's column families; it must never
// be closed here (that would close the database the main thread uses).
db.open().then(() => {
  const columns = db.columns;
  parentPort.postMessage({ ready: true });
  // One options object per column, made once: the binding reads the column from it per op.
  const columnOptions = workerData.columnNames.map((name) => ({ column: columns[name] }));
  // Layout of a packed batch (see packOps): per op [kind u8: 0 delete, 1 put][column u8][key length u32][key]
  // and for a put [value length u32][value]. Checked whole before any of it is used, so one
  // that does not fit is refused whole.
  const check = (buf) => {
    for (let at = 0; at < buf.length; ) {
      if (at + 6 > buf.length || buf[at] > 1 || columnOptions[buf[at + 1]] === undefined) throw new Error('malformed packed batch');
      const put = buf[at] === 1;
      at += 6 + buf.readUInt32LE(at + 2);
      if (put) at = at + 4 > buf.length ? Infinity : at + 4 + buf.readUInt32LE(at);
      if (at > buf.length) throw new Error('malformed packed batch');
    }
  };
  // Straight into the native batch (the keys and values are views, no copy): no op objects,
  // and none of abstract-level's batch layers, which cost as much as the puts themselves.
  const add = (batch, buf) => {
    for (let at = 0; at < buf.length; ) {
      const kind = buf[at];
      const options = columnOptions[buf[at + 1]];
      const keyLength = buf.readUInt32LE(at + 2);
      const key = buf.subarray(at + 6, at + 6 + keyLength);
      at += 6 + keyLength;
      if (kind === 1) {
        const valueLength = buf.readUInt32LE(at);
        batch._put(key, buf.subarray(at + 4, at + 4 + valueLength), options);
        at += 4 + valueLength;
      } else {
        batch._del(key, options);
      }
    }
  };
  let written = 0;
  // Batches that failed or were refused: one built on one of them (m.after) is refused too,
  // so no batch lands without the batches it was built on.
  const failed = new Set();
  parentPort.on('message', (first) => {
    // Group commit: the batches that queued up while the last write ran go to disk as one
    // write with one fsync (synced if any of them asks), in the order they came. Each was
    // atomic and stays so (they land together or not at all); none overtakes another.
    const queued = [first];
    for (let next = receiveMessageOnPort(parentPort); next !== undefined; next = receiveMessageOnPort(parentPort)) queued.push(next.message);
    const accepted = [];
    let sync = false;
    for (const m of queued) {
      if (m.after !== undefined && failed.has(m.after)) {
        failed.add(m.id);
        parentPort.postMessage({ id: m.id, error: 'not written: a batch it was built on failed' });
        continue;
      }
      const buf = Buffer.from(m.packed);
      try {
        check(buf);
      } catch (err) {
        failed.add(m.id);
        parentPort.postMessage({ id: m.id, error: String(err && err.message) });
        continue;
      }
      accepted.push({ id: m.id, buf });
      sync = sync || m.sync;
    }
    if (accepted.length === 0) return;
    const write = ++written;
    try {
      const batch = db._chainedBatch();
      try {
        for (const a of accepted) add(batch, a.buf);
        batch._writeSync({ sync });
      } finally {
        batch._closeSync();
      }
    } catch (err) {
      for (const a of accepted) {
        failed.add(a.id);
        parentPort.postMessage({ id: a.id, error: String(err && err.message) });
      }
      return;
    }
    for (const a of accepted) parentPort.postMessage({ id: a.id, write });
  });
}, (err) => parentPort.postMessage({ failed: String(err && err.message) }));
`;

export type WireOp =
  | { readonly type: 'put'; readonly cf: string; readonly key: Uint8Array; readonly value: Uint8Array }
  | { readonly type: 'del'; readonly cf: string; readonly key: Uint8Array };

/**
 * One batch as one ArrayBuffer, transferred to the worker instead of structured-cloning
 * thousands of small Buffers (the clone and the garbage it leaves were ~7% of a bulk write).
 * `packed`: ops already in this layout (`PackedOps`), after `ops`.
 */
export function packOps(ops: readonly WireOp[], columnIndex: ReadonlyMap<string, number>, packed?: Uint8Array): ArrayBuffer {
  let size = packed?.length ?? 0;
  for (const op of ops) size += 6 + op.key.length + (op.type === 'put' ? 4 + op.value.length : 0);
  const out = new ArrayBuffer(size);
  const buf = Buffer.from(out);
  let at = 0;
  for (const op of ops) {
    const column = columnIndex.get(op.cf);
    if (column === undefined) throw new Error(`unknown column family ${op.cf}`);
    buf[at] = op.type === 'put' ? 1 : 0;
    buf[at + 1] = column;
    buf.writeUInt32LE(op.key.length, at + 2);
    buf.set(op.key, at + 6);
    at += 6 + op.key.length;
    if (op.type === 'put') {
      buf.writeUInt32LE(op.value.length, at);
      buf.set(op.value, at + 4);
      at += 4 + op.value.length;
    }
  }
  if (packed !== undefined) buf.set(packed, at);
  return out;
}

/**
 * Ops written straight into `packOps`'s layout, for a writer that makes tens of thousands of
 * them a batch (a BM25 change's postings): no op object, key or value Buffer of their own,
 * which the event loop's collector otherwise promotes while the batch is written. Columns by
 * their place in the store's list (`columnNumber` in storage/db.ts).
 */
export class PackedOps {
  #buf = Buffer.allocUnsafe(4096);
  #length = 0;

  #reserve(extra: number): void {
    if (this.#length + extra <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#length + extra) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#buf.copy(next, 0, 0, this.#length);
    this.#buf = next;
  }

  put(column: number, key: Uint8Array, value: Uint8Array): void {
    this.#reserve(10 + key.length + value.length);
    const at = this.#op(1, column, key);
    this.#buf.writeUInt32LE(value.length, at);
    this.#buf.set(value, at + 4);
    this.#length = at + 4 + value.length;
  }

  del(column: number, key: Uint8Array): void {
    this.#reserve(6 + key.length);
    this.#length = this.#op(0, column, key);
  }

  /**
   * `put` of the key `head ++ tail`: a writer whose keys share a prefix and end in one of a few
   * parts (a BM25 change's postings: term prefix, then a document's id) encodes each once.
   */
  putJoined(column: number, head: Uint8Array, tail: Uint8Array, value: Uint8Array): void {
    this.#reserve(10 + head.length + tail.length + value.length);
    const at = this.#opJoined(1, column, head, tail);
    this.#buf.writeUInt32LE(value.length, at);
    this.#buf.set(value, at + 4);
    this.#length = at + 4 + value.length;
  }

  delJoined(column: number, head: Uint8Array, tail: Uint8Array): void {
    this.#reserve(6 + head.length + tail.length);
    this.#length = this.#opJoined(0, column, head, tail);
  }

  /** An op's kind, column and key at the end (room reserved); returns where they end. */
  #op(kind: 0 | 1, column: number, key: Uint8Array): number {
    const buf = this.#buf;
    const at = this.#length;
    buf[at] = kind;
    buf[at + 1] = column;
    buf.writeUInt32LE(key.length, at + 2);
    buf.set(key, at + 6);
    return at + 6 + key.length;
  }

  #opJoined(kind: 0 | 1, column: number, head: Uint8Array, tail: Uint8Array): number {
    const buf = this.#buf;
    const at = this.#length;
    buf[at] = kind;
    buf[at + 1] = column;
    buf.writeUInt32LE(head.length + tail.length, at + 2);
    buf.set(head, at + 6);
    buf.set(tail, at + 6 + head.length);
    return at + 6 + head.length + tail.length;
  }

  /** The ops so far (a view: the builder is done with once this is taken). */
  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.#length);
  }
}

/** The ops of packed bytes, in order (columns by name): for writes on the calling thread, and tests. */
export function unpackOps(bytes: Uint8Array, columnNames: readonly string[]): WireOp[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const ops: WireOp[] = [];
  for (let at = 0; at < buf.length; ) {
    const cf = columnNames[buf[at + 1]!];
    if (cf === undefined || buf[at]! > 1) throw new Error('malformed packed ops');
    const keyEnd = at + 6 + buf.readUInt32LE(at + 2);
    const key = buf.subarray(at + 6, keyEnd);
    if (buf[at] === 1) {
      const valueEnd = keyEnd + 4 + buf.readUInt32LE(keyEnd);
      ops.push({ type: 'put', cf, key, value: buf.subarray(keyEnd + 4, valueEnd) });
      at = valueEnd;
    } else {
      ops.push({ type: 'del', cf, key });
      at = keyEnd;
    }
  }
  return ops;
}

export class WriteWorker {
  readonly #worker: Worker;
  readonly #columnIndex: ReadonlyMap<string, number>;
  readonly #pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  #nextId = 0;
  #failure: Error | undefined;
  #lastWrite = 0;
  /** Since start: batches handed to the thread, and the RocksDB writes it made of them (fewer when batches queued up and went together). */
  readonly stats = { batches: 0, writes: 0 };

  private constructor(worker: Worker, columnNames: readonly string[]) {
    this.#worker = worker;
    this.#columnIndex = new Map(columnNames.map((name, i) => [name, i]));
    worker.on('message', (m: { id: number; error?: string; write?: number }) => {
      if (m.write !== undefined && m.write !== this.#lastWrite) {
        this.#lastWrite = m.write;
        this.stats.writes++;
      }
      const p = this.#pending.get(m.id);
      if (p === undefined) return;
      this.#pending.delete(m.id);
      if (m.error === undefined) p.resolve();
      else p.reject(new Error(m.error));
    });
    worker.on('error', (err) => this.#fail(err));
    worker.on('exit', (code) => this.#fail(new Error(`storage write worker exited (${code})`)));
  }

  static async start(handle: bigint, columnNames: readonly string[]): Promise<WriteWorker> {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { handle, columnNames, modulePath: require.resolve('@nxtedition/rocksdb') } });
    const first = await new Promise<{ ready?: true; failed?: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (first.failed !== undefined) {
      await worker.terminate();
      throw new Error(`storage write worker failed to open the database: ${first.failed}`);
    }
    return new WriteWorker(worker, columnNames);
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  /** Writes handed to the thread whose answer has not been handled yet. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /** `packed`: more ops, already packed (`PackedOps`), written after `ops` in the same batch. */
  write(ops: readonly WireOp[], sync: boolean, packed?: Uint8Array): Promise<void> {
    return this.writeAfter(ops, sync, undefined, packed).done;
  }

  /**
   * A batch already packed (`packOps`, with this writer's column order); the buffer is
   * transferred. The thread checks the whole layout first and refuses a batch that does not
   * fit it (an unknown kind or column, a length past the end) without writing any of it.
   */
  writePacked(packed: ArrayBuffer, sync: boolean): Promise<void> {
    return this.writePackedAfter(packed, sync, undefined).done;
  }

  /**
   * A write the thread refuses unwritten if the write `after` (an earlier id from here) failed
   * or was refused: for a writer that builds each batch on the one before it without waiting.
   */
  writeAfter(ops: readonly WireOp[], sync: boolean, after: number | undefined, packed?: Uint8Array): { id: number; done: Promise<void> } {
    if (this.#failure !== undefined) return { id: -1, done: Promise.reject(this.#failure) };
    return this.writePackedAfter(packOps(ops, this.#columnIndex, packed), sync, after);
  }

  /** `writePacked` with `writeAfter`'s dependency, and the id a later write can depend on. */
  writePackedAfter(packed: ArrayBuffer, sync: boolean, after: number | undefined): { id: number; done: Promise<void> } {
    if (this.#failure !== undefined) return { id: -1, done: Promise.reject(this.#failure) };
    const id = this.#nextId++;
    this.stats.batches++;
    const done = new Promise<void>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, packed, sync, after }, [packed]);
    });
    return { id, done };
  }

  /** Wait for writes in flight, then stop the thread (the database stays open). */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.#pending.values()].map((p) => new Promise<void>((r) => {
      const { resolve, reject } = p;
      p.resolve = () => (resolve(), r());
      p.reject = (e) => (reject(e), r());
    })));
    this.#failure ??= new Error('storage is closed');
    await this.#worker.terminate();
  }
}
