// ValueCounts against the truth (a walk of the value's posting keys), with a real store and
// document engine: random writes, deletes and purges issued while counts are being built,
// drop and re-create of a database, and eviction.
import fc from 'fast-check';
import t from 'tap';
import { tempDocEngine } from '../../support/doc-engine.js';
import { encodeKey } from '../../../src/core/keys.js';
import { ValueCounts } from '../../../src/docdb/query/counts.js';
import { TYPE_TAG, leafKey } from '../../../src/docdb/query/postings.js';
import { Store } from '../../../src/storage/db.js';
import { fcParams } from '../../support/fc.js';

const VALUES = ['a', 'b', 1, 2, true, null] as const;
type Value = (typeof VALUES)[number];

async function open(t: { teardown(fn: () => Promise<void>): void }, options: { max?: number; walkBatch?: number } = {}) {
  const { docs, store } = await tempDocEngine(t, { prefix: 'firkin-counts-', writeWorker: true });
  const counts = new ValueCounts(store, docs, options);
  docs.addIndexer(counts.indexer);
  docs.onCommitted(counts.committed);
  docs.onDrop(counts.dropped);
  return { store, docs, counts };
}

/** The value prefix of `field = value` (what `_find` passes for an equality). */
function prefixOf(db: string, field: string, value: Value): Buffer {
  const leaf = leafKey(value)!;
  return encodeKey([db, field, leaf.tag, ...(leaf.value === undefined ? [] : [leaf.value])]);
}

function prefixOfElement(db: string, field: string, value: string): Buffer {
  return encodeKey([db, field, Uint8Array.of(0), TYPE_TAG.string, value]);
}

async function truth(store: Store, prefix: Buffer): Promise<number> {
  return store.count('paths', { gte: prefix, lt: Buffer.concat([prefix, Buffer.from([0xff])]) });
}

type Op =
  | { kind: 'put'; id: number; v: Value; tags: string[] }
  | { kind: 'delete'; id: number }
  | { kind: 'purge'; id: number }
  | { kind: 'count'; v: Value };

const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('put' as const), id: fc.nat(15), v: fc.constantFrom(...VALUES), tags: fc.array(fc.constantFrom('x', 'y'), { maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), id: fc.nat(15) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('purge' as const), id: fc.nat(15) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('count' as const), v: fc.constantFrom(...VALUES) }) },
);

t.test('counts equal the posting walk, with writes racing the builds', async (t) => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(arbOp, { maxLength: 40 }), async (ops) => {
      const { store, docs, counts } = await open(t, { walkBatch: 1 });
      const db = `db${run++}`;
      await docs.createDb(db);
      const revs = new Map<number, string>();
      const inFlight: Promise<unknown>[] = [];
      // Writes of one id are chained (each needs the previous rev); different ids and the
      // count builds run concurrently.
      const chains = new Map<number, Promise<void>>();
      const chain = (id: number, step: () => Promise<void>) => {
        const next = (chains.get(id) ?? Promise.resolve()).then(step);
        chains.set(id, next);
        inFlight.push(next);
      };
      for (const op of ops) {
        if (op.kind === 'count') {
          inFlight.push(counts.count(db, prefixOf(db, 'v', op.v)));
          continue;
        }
        chain(op.id, async () => {
          const id = `d${op.id}`;
          const rev = revs.get(op.id);
          if (op.kind === 'put') {
            const [r] = await docs.bulkDocs(db, [{ _id: id, ...(rev ? { _rev: rev } : {}), v: op.v, tags: op.tags }], true, () => 'x');
            if (r!.ok) revs.set(op.id, r!.rev!);
          } else if (op.kind === 'delete') {
            if (rev === undefined) return;
            const [r] = await docs.bulkDocs(db, [{ _id: id, _rev: rev, _deleted: true }], true, () => 'x');
            if (r!.ok) revs.delete(op.id);
          } else {
            await docs.purge(db, [id]);
            revs.delete(op.id);
          }
        });
      }
      await Promise.all(inFlight);
      for (const v of VALUES) {
        const prefix = prefixOf(db, 'v', v);
        if ((await counts.count(db, prefix)) !== (await truth(store, prefix))) return false;
      }
      for (const tag of ['x', 'y']) {
        const prefix = prefixOfElement(db, 'tags', tag);
        if ((await counts.count(db, prefix)) !== (await truth(store, prefix))) return false;
      }
      return true;
    }),
    fcParams(15),
  );
});

t.test('writes committed while a count is being built are counted once', async (t) => {
  const { store, docs, counts } = await open(t, { walkBatch: 1 });
  await docs.createDb('w');
  await docs.bulkDocs('w', Array.from({ length: 300 }, (_, i) => ({ _id: `old${i}`, v: 'a' })), true, () => 'x');
  const prefix = prefixOf('w', 'v', 'a');
  const writes = Array.from({ length: 40 }, (_, i) => docs.bulkDocs('w', [{ _id: `new${i}`, v: 'a' }, { _id: `old${i}`, v: 'b', _rev: undefined }], true, () => 'x'));
  const building = counts.count('w', prefix);
  const more = Array.from({ length: 40 }, (_, i) => docs.bulkDocs('w', [{ _id: `late${i}`, v: 'a' }], true, () => 'x'));
  await Promise.all([...writes, ...more]);
  await building;
  t.equal(await counts.count('w', prefix), await truth(store, prefix));
  t.equal(await truth(store, prefix), 380);
});

t.test('a dropped and re-created database starts from zero', async (t) => {
  const { docs, counts } = await open(t);
  await docs.createDb('d');
  await docs.bulkDocs('d', [{ v: 'a' }, { v: 'a' }, { v: 'b' }], true, (() => { let i = 0; return () => `id${i++}`; })());
  t.equal(await counts.count('d', prefixOf('d', 'v', 'a')), 2);
  await docs.deleteDb('d');
  await docs.createDb('d');
  t.equal(await counts.count('d', prefixOf('d', 'v', 'a')), 0);
  await docs.bulkDocs('d', [{ _id: 'n', v: 'a' }], true, () => 'x');
  t.equal(await counts.count('d', prefixOf('d', 'v', 'a')), 1);
});

t.test('evicted counts are rebuilt, and still exact', async (t) => {
  const { store, docs, counts } = await open(t, { max: 2 });
  await docs.createDb('e');
  const bodies = Array.from({ length: 60 }, (_, i) => ({ _id: `k${i}`, v: VALUES[i % VALUES.length] }));
  await docs.bulkDocs('e', bodies, true, () => 'x');
  for (let round = 0; round < 2; round++) {
    for (const v of VALUES) t.equal(await counts.count('e', prefixOf('e', 'v', v)), await truth(store, prefixOf('e', 'v', v)), `${String(v)} round ${round}`);
    await docs.bulkDocs('e', [{ _id: `extra${round}`, v: 'a' }], true, () => 'x');
  }
  t.equal(counts.peek(prefixOf('e', 'v', 'a')), undefined, 'only the last two built are kept');
});
