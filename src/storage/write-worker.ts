// Synced RocksDB writes off the event loop. @nxtedition/rocksdb writes a batch synchronously
// on the calling thread, fsync included, so a synced write on the main thread stalls every
// request for the length of an fsync. A worker thread shares the open database through its
// native handle (the binding supports exactly this) and performs the writes; the main thread
// keeps reads and iterators. Messages are processed in order, so writes stay ordered.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);

// Plain JavaScript run with `eval`: no TypeScript loader is needed inside the worker.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { RocksLevel } = require(workerData.modulePath);
const db = new RocksLevel(workerData.handle, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
// Opening a handle-based instance returns the live database's column families; it must never
// be closed here (that would close the database the main thread uses).
db.open().then(() => {
  const columns = db.columns;
  parentPort.postMessage({ ready: true });
  parentPort.on('message', (m) => {
    try {
      const ops = m.ops.map((o) => o[0] === 1
        ? { type: 'put', key: Buffer.from(o[2].buffer, o[2].byteOffset, o[2].byteLength), value: Buffer.from(o[3].buffer, o[3].byteOffset, o[3].byteLength), column: columns[o[1]] }
        : { type: 'del', key: Buffer.from(o[2].buffer, o[2].byteOffset, o[2].byteLength), column: columns[o[1]] });
      db.batch(ops, { sync: m.sync }).then(
        () => parentPort.postMessage({ id: m.id }),
        (err) => parentPort.postMessage({ id: m.id, error: String(err && err.message) }),
      );
    } catch (err) {
      parentPort.postMessage({ id: m.id, error: String(err && err.message) });
    }
  });
}, (err) => parentPort.postMessage({ failed: String(err && err.message) }));
`;

/** [1, cf, key, value] = put, [0, cf, key] = del */
export type WireOp = [1, string, Uint8Array, Uint8Array] | [0, string, Uint8Array];

export class WriteWorker {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  #nextId = 0;
  #failure: Error | undefined;

  private constructor(worker: Worker) {
    this.#worker = worker;
    worker.on('message', (m: { id: number; error?: string }) => {
      const p = this.#pending.get(m.id);
      if (p === undefined) return;
      this.#pending.delete(m.id);
      if (m.error === undefined) p.resolve();
      else p.reject(new Error(m.error));
    });
    worker.on('error', (err) => this.#fail(err));
    worker.on('exit', (code) => this.#fail(new Error(`storage write worker exited (${code})`)));
  }

  static async start(handle: bigint): Promise<WriteWorker> {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { handle, modulePath: require.resolve('@nxtedition/rocksdb') } });
    const first = await new Promise<{ ready?: true; failed?: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (first.failed !== undefined) {
      await worker.terminate();
      throw new Error(`storage write worker failed to open the database: ${first.failed}`);
    }
    return new WriteWorker(worker);
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  write(ops: WireOp[], sync: boolean): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, ops, sync });
    });
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
