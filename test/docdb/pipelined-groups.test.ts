// Pipelined write groups: with the write thread, a database applies its next group while the
// previous group's batch is on its way to disk, on top of that group's records and bodies.
// Requests sent without waiting (creates of one id from several clients, replicated
// revisions of one document, deletions), and large requests applied in parts, must end
// exactly as the same requests applied one after another, whole: the same answers, trees,
// winners, leaf bodies, counters, changes and what the indexers were told.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import pino from 'pino';
import t from 'tap';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import { FirkinError } from '../../src/core/errors.js';
import { DocEngine, type EditResult, type PipelineSizes } from '../../src/docdb/engine.js';
import { Store, type WriteTicket } from '../../src/storage/db.js';

const IDS = ['a', 'b', 'c', 'd'];

type Item =
  | { kind: 'create'; id: number; n: number }
  | { kind: 'branch'; id: number; hashes: string[]; n: number; deleted: boolean };

const create = fc.record({ kind: fc.constant('create' as const), id: fc.nat(IDS.length - 1), n: fc.nat(9) });
const branch = fc.record({
  kind: fc.constant('branch' as const),
  id: fc.nat(IDS.length - 1),
  // Histories drawn from a small alphabet share prefixes: later ones extend earlier ones.
  hashes: fc.array(fc.constantFrom('aa', 'bb', 'cc'), { minLength: 1, maxLength: 4 }),
  n: fc.nat(9),
  deleted: fc.boolean(),
});
// One `_bulk_docs` request: several documents (one id may come twice), one new_edits flag.
// The engine under test splits requests of more than 2 edits into parts.
const request: fc.Arbitrary<Item[]> = fc.oneof(fc.array(create, { minLength: 1, maxLength: 5 }), fc.array(branch, { minLength: 1, maxLength: 5 }));

function toDocs(items: Item[]): { docs: Record<string, unknown>[]; newEdits: boolean } {
  const docs = items.map((r) => {
    const id = IDS[r.id]!;
    if (r.kind === 'create') return { _id: id, n: r.n };
    const ids = r.hashes.map((h, i) => `${h}${i}`).reverse();
    return { _id: id, _rev: `${ids.length}-${ids[0]}`, _revisions: { start: ids.length, ids }, n: r.n, ...(r.deleted ? { _deleted: true } : {}) };
  });
  return { docs, newEdits: items[0]!.kind === 'create' };
}

// Small pipeline sizes by default, so that the drawn requests are split into parts and
// groups of one or two edits start (or wait) behind those in flight.
async function open(worker: boolean, pipeline: PipelineSizes = { partEdits: 2, minEditsAhead: 2 }): Promise<{ docs: DocEngine; store: Store; indexed: unknown[]; close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'firkin-pipelined-'));
  const store = await Store.open(dir, { writeWorker: worker });
  const docs = await DocEngine.open({ store, hlc: new HybridClock(systemClock), log: pino({ level: 'silent' }), clock: systemClock, revsLimit: 1000, compactAfterWrites: 0, pipeline });
  // What indexers are told (the old and new winner's bodies): read from in-flight groups too.
  const indexed: unknown[] = [];
  docs.addIndexer((change) => indexed.push([change.db, change.docId, change.before, change.after]));
  return {
    docs,
    store,
    indexed,
    async close() {
      await docs.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Everything observable about a database, sequences aside (clocks differ between runs). */
async function observe(docs: DocEngine, db: string) {
  const records = await docs.getRecords(db, IDS);
  const out: Record<string, unknown> = {};
  for (const [i, rec] of records.entries()) {
    if (rec === undefined) continue;
    const { seq: _seq, ...rest } = rec;
    const revs = Object.keys(rec.leaves).map((rev) => ({ id: IDS[i]!, rev }));
    out[IDS[i]!] = { ...rest, bodies: await docs.getRevisions(db, revs) };
  }
  const { doc_count, doc_del_count, data_size } = docs.dbInfo(db) as unknown as Record<string, number>;
  const feed = (await docs.changes(db, { since: undefined, limit: undefined, descending: false, docIds: undefined, includeDocs: false })).results.map((c) => [c.id, c.rev, c.deleted]);
  return { out, counts: [doc_count, doc_del_count, data_size], feed };
}

t.test('requests sent without waiting end as the same requests applied in order', async (t) => {
  const piped = await open(true);
  const serial = await open(false);
  t.teardown(async () => {
    await piped.close();
    await serial.close();
  });
  t.ok(piped.store.pipelinesWrites, 'the write thread pipelines groups');
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 14 }), fc.array(fc.boolean(), { minLength: 14, maxLength: 14 }), async (requests, yields) => {
      const db = `p${run++}`;
      await piped.docs.createDb(db);
      await serial.docs.createDb(db);
      // Sent one by one without waiting for answers; a pause between two lets the first
      // one's group start, so the next request opens a group built on it while it writes.
      const pending: Promise<EditResult[]>[] = [];
      for (const [i, r] of requests.entries()) {
        const { docs, newEdits } = toDocs(r);
        pending.push(piped.docs.bulkDocs(db, docs, newEdits, () => 'unused'));
        if (yields[i]) await new Promise((resolve) => setImmediate(resolve));
      }
      const pipedAnswers = await Promise.all(pending);
      const serialAnswers: EditResult[][] = [];
      for (const r of requests) {
        const { docs, newEdits } = toDocs(r);
        serialAnswers.push(await serial.docs.bulkDocs(db, docs, newEdits, () => 'unused'));
      }
      // A create's revision hashes its body and parent only: both runs name it the same.
      assert.deepStrictEqual(pipedAnswers, serialAnswers);
      assert.deepStrictEqual(await observe(piped.docs, db), await observe(serial.docs, db));
      assert.deepStrictEqual(piped.indexed.splice(0), serial.indexed.splice(0));
    }),
    { numRuns: 80 },
  );
  t.pass('80 random request sequences');
});

/**
 * The write thread's contract (test/storage/write-worker.test.ts) played by a wrapper, so that
 * a chosen batch fails: `fails()` says whether the batch being handed over fails (its answer
 * comes a turn later, as the thread's would), and a batch built on a failed or refused one is
 * refused without being written.
 */
function failingBatches(store: Store, fails: () => boolean): void {
  const real = store.batchAfter.bind(store);
  const refused = new WeakSet<WriteTicket>();
  const realTicket = new WeakMap<WriteTicket, WriteTicket>();
  store.batchAfter = (ops, after) => {
    const ticket: WriteTicket = { id: -1 };
    if ((after !== undefined && refused.has(after)) || fails()) {
      refused.add(ticket);
      const durable = new Promise<void>((_, reject) => setImmediate(() => reject(new FirkinError('unavailable', 'storage write failed: injected'))));
      return { ticket, durable };
    }
    const written = real(ops, after === undefined ? undefined : realTicket.get(after));
    realTicket.set(ticket, written.ticket);
    return { ticket, durable: written.durable };
  };
}

t.test('a failed batch fails the groups built on it; what was answered is what the engine holds', async (t) => {
  // Requests are not split here (a split request's parts may land apart), so the requests
  // that succeeded, applied in order without the thread, must give the same state.
  const piped = await open(true, { partEdits: 1_000, minEditsAhead: 1 });
  const serial = await open(false);
  t.teardown(async () => {
    await piped.close();
    await serial.close();
  });
  let batches = 0;
  let failAt = -1;
  failingBatches(piped.store, () => batches++ === failAt);
  let run = 0;
  let failedRequests = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 12 }), fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), fc.nat(5), async (requests, yields, failing) => {
      const db = `f${run++}`;
      await piped.docs.createDb(db);
      await serial.docs.createDb(db);
      batches = 0;
      failAt = failing;
      // Settled as they come: a request may fail while later ones are still being sent.
      const pending: Promise<PromiseSettledResult<EditResult[]>>[] = [];
      for (const [i, r] of requests.entries()) {
        const { docs, newEdits } = toDocs(r);
        pending.push(Promise.allSettled([piped.docs.bulkDocs(db, docs, newEdits, () => 'unused')]).then(([outcome]) => outcome!));
        if (yields[i]) await new Promise((resolve) => setImmediate(resolve));
      }
      const outcomes = await Promise.all(pending);
      failAt = -1;
      const expected: EditResult[][] = [];
      for (const [i, r] of requests.entries()) {
        const outcome = outcomes[i]!;
        if (outcome.status === 'rejected') {
          failedRequests++;
          assert.equal((outcome.reason as FirkinError).code, 'unavailable');
          continue;
        }
        const { docs, newEdits } = toDocs(r);
        expected.push(await serial.docs.bulkDocs(db, docs, newEdits, () => 'unused'));
      }
      assert.deepStrictEqual(outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : [])), expected);
      assert.deepStrictEqual(await observe(piped.docs, db), await observe(serial.docs, db));
      // And the database goes on from there: one more request gets the same answer.
      const next = toDocs(requests[0]!);
      assert.deepStrictEqual(await piped.docs.bulkDocs(db, next.docs, next.newEdits, () => 'unused'), await serial.docs.bulkDocs(db, next.docs, next.newEdits, () => 'unused'));
      assert.deepStrictEqual(await observe(piped.docs, db), await observe(serial.docs, db));
    }),
    { numRuns: 80 },
  );
  t.ok(failedRequests > 0, `${failedRequests} requests failed with their batch or one it was built on`);
});
