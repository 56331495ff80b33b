// Pipelined standalone upserts (`UpsertPipelineSizes`): a group is prepared while earlier
// groups' batches are written, large requests go in parts. Checked against the same writes
// applied one at a time on a shard without a write thread: the same documents, keyword scores
// and counters, before and after a reopen; and a batch that fails takes the one built on it
// with it, leaving memory and disk as they were.
import fc from 'fast-check';
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { Store, type WriteTicket } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { type DocInput, Shard, type ShardDeps } from '../../src/vector/shard.js';
import { fcParams } from '../support/fc.js';
import { tempDir } from '../support/node.js';
import { smallShardConfig } from './engine-harness.js';

// Without a graph (`m: 0`): only there are requests written in parts (see UpsertPipelineSizes).
const CONFIG = smallShardConfig({ dimensions: 2, bm25_backend: 'disk', index: { m: 0, ef_construction: 40, ef_search: 64 } });
const log = pino({ level: 'silent' });
const WORDS = ['apple', 'pie', 'tart', 'plum', 'fig', 'crumble'];
const QUERIES = ['apple', 'pie tart', 'plum fig crumble', 'apple pie tart plum fig crumble'];
const PIPELINE = { partDocs: 2, minDocsAhead: 1 };
// Folds of the keyword bounds every third change, so some are prepared on pending changes.
const BM25_LIMITS = { syncListPostingsMax: 4_096, syncLookupsMax: 256, slotsMax: 1 << 20, boundDeltasMax: 3, goneTermsSlack: 0 };

type Op = { kind: 'put'; docs: { id: number; words: number[]; x: number }[] } | { kind: 'del'; id: number };
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('put' as const), docs: fc.array(fc.record({ id: fc.nat(9), words: fc.array(fc.nat(WORDS.length - 1), { minLength: 1, maxLength: 5 }), x: fc.integer({ min: 1, max: 50 }) }), { minLength: 1, maxLength: 7 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('del' as const), id: fc.nat(9) }) },
);

const docOf = (d: { id: number; words: number[]; x: number }): DocInput => ({ id: `d${d.id}`, text: d.words.map((w) => WORDS[w]).join(' '), metadata: { x: d.x }, vector: Float32Array.from([d.x, 1]) });

async function openShard(dir: string, writeWorker: boolean, extra: Partial<ShardDeps> = {}) {
  const store = await Store.open(path.join(dir, 'db'), { writeWorker });
  const shard = await Shard.open(1, CONFIG, { store, ann: usearchEngine, indexDir: dir, log, pipeline: PIPELINE, bm25Limits: BM25_LIMITS, ...extra });
  return { store, shard };
}

/** What a reader can see of a shard: documents, counters and keyword answers. */
async function view(shard: Shard) {
  const docs: unknown[] = [];
  for (let id = 0; id < 10; id++) {
    const d = await shard.get(`d${id}`);
    docs.push(d === undefined ? null : { id: d.id, text: d.text, metadata: d.metadata, vector: Array.from(d.vector) });
  }
  const searches = [];
  for (const q of QUERIES) searches.push(await shard.searchBm25(q, 10));
  return { docs, count: shard.count, seq: shard.seq, applied: shard.appliedIndex, searches, stats: await Promise.all(QUERIES.map((q) => shard.bm25Stats(q))) };
}

/** Counts the batches handed to the write thread behind another one still in flight. */
function countPipelined(store: Store): { behind: number } {
  const counter = { behind: 0 };
  const batchAfter = store.batchAfter.bind(store);
  store.batchAfter = (ops, after: WriteTicket | undefined, packed) => {
    if (after !== undefined) counter.behind++;
    return batchAfter(ops, after, packed);
  };
  return counter;
}

t.test('pipelined upserts leave what the same writes one at a time leave, and so does a reopen', async (t) => {
  let behind = 0;
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(arbOp, { minLength: 1, maxLength: 12 }), async (ops) => {
      const dir = tempDir(`firkin-vpipe${run++}-`);
      const refDir = tempDir(`firkin-vpipe-ref${run}-`);
      let piped = await openShard(dir, true);
      const ref = await openShard(refDir, false);
      const counter = countPipelined(piped.store);
      try {
        // All issued in one turn: upserts group and pipeline, deletes wait for them.
        const settled = await Promise.allSettled(ops.map((op) => (op.kind === 'put' ? piped.shard.upsert(op.docs.map(docOf)) : piped.shard.remove(`d${op.id}`))));
        if (settled.some((s) => s.status === 'rejected')) return false;
        const answers = settled.map((s) => (s as PromiseFulfilledResult<unknown>).value);
        const refAnswers: unknown[] = [];
        for (const op of ops) refAnswers.push(op.kind === 'put' ? await ref.shard.upsert(op.docs.map(docOf)) : await ref.shard.remove(`d${op.id}`));
        t.strictSame(answers, refAnswers, 'each write answers as one at a time');
        const want = await view(ref.shard);
        // The counters differ only by how the upserts were grouped: compare what they count.
        const got = await view(piped.shard);
        t.strictSame({ ...got, seq: 0, applied: 0 }, { ...want, seq: 0, applied: 0 });
        behind += counter.behind;
        await piped.shard.close({ save: false });
        await piped.store.close();
        piped = await openShard(dir, true);
        const reopened = await view(piped.shard);
        t.strictSame(reopened, got, 'a reopen reads back what memory held');
        return true;
      } finally {
        await piped.shard.close({ save: false });
        await piped.store.close();
        await ref.shard.close({ save: false });
        await ref.store.close();
      }
    }),
    fcParams(40),
  );
  t.ok(behind > 0, `batches were handed to the write thread behind others in flight (${behind})`);
});

t.test('a batch that fails takes the batch built on it along; memory and disk stay as they were', async (t) => {
  const dir = tempDir('firkin-vpipe-fail-');
  let { store, shard } = await openShard(dir, true);
  await shard.upsert([docOf({ id: 1, words: [0, 1], x: 1 })]);
  const before = await view(shard);

  // The next batch reaches the write thread broken (it refuses it unwritten); the one handed
  // behind it must be refused too, though nothing is wrong with it.
  const batchAfter = store.batchAfter.bind(store);
  let calls = 0;
  const afters: (WriteTicket | undefined)[] = [];
  // The first's failure reaches the shard only once the second is handed over (else the
  // second would be prepared on the state before the first, which is also right, but not this test).
  let secondHanded!: () => void;
  const handed = new Promise<void>((resolve) => (secondHanded = resolve));
  store.batchAfter = (ops, after, packed) => {
    afters.push(after);
    if (calls++ === 0) {
      const broken = batchAfter(ops, after, Uint8Array.from([255, 255, 255]));
      broken.durable.catch(() => undefined);
      return { ticket: broken.ticket, durable: handed.then(() => broken.durable) };
    }
    secondHanded();
    return batchAfter(ops, after, packed);
  };
  // One request of four documents: two parts of two, the second prepared on the first.
  const failed = shard.upsert([docOf({ id: 1, words: [2], x: 2 }), docOf({ id: 2, words: [0, 3], x: 3 }), docOf({ id: 3, words: [4], x: 4 }), docOf({ id: 1, words: [5], x: 5 })]);
  await t.rejects(failed, 'the request fails');
  t.equal(calls, 2, 'both parts were handed over');
  t.ok(afters[1] !== undefined, 'the second behind the first');
  t.strictSame(await view(shard), before, 'memory: nothing of either part');

  store.batchAfter = batchAfter;
  await shard.upsert([docOf({ id: 2, words: [3, 4], x: 6 }), docOf({ id: 4, words: [1], x: 7 }), docOf({ id: 1, words: [5, 5], x: 8 })]);
  const after = await view(shard);
  t.equal(after.count, 3);
  t.strictSame(
    after.docs.filter((d) => d !== null).map((d) => (d as { id: string }).id),
    ['d1', 'd2', 'd4'],
  );
  await shard.close({ save: false });
  await store.close();
  ({ store, shard } = await openShard(dir, true));
  t.strictSame(await view(shard), after, 'disk holds what memory did: the failed parts were never written');
  await shard.close({ save: false });
  await store.close();
});
