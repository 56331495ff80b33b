// Vector writes share fsyncs: upserts that arrive while a write is running are written as
// one batch, and a delete queued between them keeps its place (writes apply in arrival
// order). Checked against a sequential model, and after reopening the store.
import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t, { type Test } from 'tap';
import { type BatchOp, Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { VectorEngine } from '../../src/vector/engine.js';
import { bm25SearchRequest, createCollectionRequest, docRequest } from '../../src/vector/requests.js';
import { fcParams } from '../support/fc.js';
import { testEmbedderDeps } from './engine-harness.js';


async function open(dir: string, store: Store) {
  return VectorEngine.open({ store, ann: usearchEngine, dataDir: dir, log: pino({ level: 'silent' }), embedderDeps: testEmbedderDeps, saveIntervalMs: 0 });
}

/** Counts the synced batches that touch the `vec` column family (pipelined ones too). */
function countVecBatches(store: Store): { count: number } {
  const counter = { count: 0 };
  const batch = store.batch.bind(store);
  store.batch = async (ops: readonly BatchOp[], options, packed) => {
    if (ops.some((op) => op.cf === 'vec')) counter.count++;
    return batch(ops, options, packed);
  };
  const batchAfter = store.batchAfter.bind(store);
  store.batchAfter = (ops, after, packed) => {
    if (ops.some((op) => op.cf === 'vec')) counter.count++;
    return batchAfter(ops, after, packed);
  };
  return counter;
}

/** An engine over a store with its write thread in a temp dir, closed and removed when `t` ends. */
async function openForTest(t: Test, prefix: string): Promise<{ engine: VectorEngine; store: Store }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const store = await Store.open(join(dir, 'db'), { writeWorker: true });
  const engine = await open(dir, store);
  t.teardown(async () => {
    await engine.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { engine, store };
}

t.test('concurrent upserts share one synced batch', async (t) => {
  const { engine, store } = await openForTest(t, 'firkin-vgc-');
  await engine.createCollection(createCollectionRequest('c', { dimensions: 3 }));
  const batches = countVecBatches(store);
  await Promise.all(Array.from({ length: 100 }, (_, i) => engine.putDoc('c', docRequest({ id: `d${i}`, vector: [1, i, 2] }))));
  t.equal(batches.count, 1, '100 upserts issued together: one batch, one fsync');
  t.same(Array.from((await engine.getDoc('c', 'd42')).vector!), [1, 42, 2]);
});

type Op = { kind: 'put'; id: number; x: number } | { kind: 'del'; id: number };
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('put' as const), id: fc.nat(7), x: fc.integer({ min: 1, max: 100 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('del' as const), id: fc.nat(7) }) },
);

t.test('grouped writes apply in arrival order and survive a reopen', async (t) => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(arbOp, { minLength: 1, maxLength: 30 }), async (ops) => {
      const dir = await mkdtemp(join(tmpdir(), `firkin-vgc${run++}-`));
      try {
        let store = await Store.open(join(dir, 'db'), { writeWorker: true });
        let engine = await open(dir, store);
        await engine.createCollection(createCollectionRequest('c', { dimensions: 3 }));
        // The model: the same operations one after another.
        const model = new Map<string, number>();
        const expected: boolean[] = [];
        for (const op of ops) {
          const id = `d${op.id}`;
          if (op.kind === 'put') {
            model.set(id, op.x);
            expected.push(true);
          } else {
            expected.push(model.delete(id));
          }
        }
        // All issued in one tick: upserts group, deletes cut the groups.
        const settled = await Promise.allSettled(ops.map((op) => (op.kind === 'put' ? engine.putDoc('c', docRequest({ id: `d${op.id}`, vector: [op.x, 1, 1] })) : engine.deleteDoc('c', `d${op.id}`))));
        if (settled.some((s, i) => (s.status === 'fulfilled') !== expected[i])) return false;
        const check = async () => {
          for (let id = 0; id < 8; id++) {
            const doc = await engine.getDoc('c', `d${id}`).catch(() => undefined);
            const want = model.get(`d${id}`);
            if ((doc === undefined) !== (want === undefined)) return false;
            if (doc !== undefined && doc.vector![0] !== want) return false;
          }
          return true;
        };
        if (!(await check())) return false;
        await engine.close();
        await store.close();
        store = await Store.open(join(dir, 'db'), { writeWorker: true });
        engine = await open(dir, store);
        const ok = await check();
        await engine.close();
        await store.close();
        return ok;
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }),
    fcParams(25),
  );
});

t.test('a batch whose write fails leaves the memory BM25 index as it was; searches during a write see none of it', async (t) => {
  const { engine, store } = await openForTest(t, 'firkin-vgc-fail-');
  await engine.createCollection(createCollectionRequest('c', { dimensions: 3, bm25_backend: 'memory' }));
  await engine.putDocs({ collection: 'c', docs: [docRequest({ id: 'a', vector: [1, 0, 0], text: 'apple pie' })] });
  const search = async (query: string) => (await engine.searchBm25(bm25SearchRequest('c', { query }))).results.map((h) => h.id);

  // The next vec batch fails after a search ran while it was being written.
  const batch = store.batch.bind(store);
  const seenDuringWrite: string[][] = [];
  let fail = true;
  store.batch = async (ops: readonly BatchOp[], options) => {
    if (!fail || !ops.some((op) => op.cf === 'vec')) return batch(ops, options);
    fail = false;
    await new Promise((resolve) => setImmediate(resolve)); // the write's await: the shard stages now
    seenDuringWrite.push(await search('apple tart'));
    throw new Error('injected write failure');
  };
  await t.rejects(engine.putDocs({ collection: 'c', docs: [docRequest({ id: 'b', vector: [0, 1, 0], text: 'apple tart' }), docRequest({ id: 'a', vector: [1, 0, 0], text: 'tart' })] }));
  t.strictSame(seenDuringWrite, [['a']], 'a search during the write saw only what was applied');
  t.strictSame(await search('apple tart'), ['a'], 'nothing of the failed batch is left');
  t.strictSame(await search('pie'), ['a'], "the failed batch's update of a never applied");

  await engine.putDocs({ collection: 'c', docs: [docRequest({ id: 'b', vector: [0, 1, 0], text: 'apple tart' })] });
  t.strictSame(await search('tart'), ['b'], 'the same batch written again applies');
  t.strictSame((await search('apple')).sort(), ['a', 'b']);
});
