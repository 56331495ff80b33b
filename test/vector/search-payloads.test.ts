// A search's hits carry their documents' live text and metadata. The shard keeps recent hits'
// payloads decoded (an LRU keyed by doc id, good only while the doc's write sequence is
// unchanged), so updates, deletes, re-inserts and evictions must never show an old payload.
import fc from 'fast-check';
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { parseFilter } from '../../src/vector/filter.js';
import { newPostingCache } from '../../src/vector/bm25-index.js';
import { Shard, dropShardData, newPayloadCache } from '../../src/vector/shard.js';
import { smallShardConfig } from './engine-harness.js';
import { fcParams } from '../support/fc.js';
import { tempDir } from '../support/node.js';

const DIMS = 4;
const IDS = ['a', 'b', 'c', 'd', 'e', 'f'];
const id = fc.constantFrom(...IDS);
const vector = fc.array(fc.float({ noNaN: true, noDefaultInfinity: true, min: -10, max: 10 }), { minLength: DIMS, maxLength: DIMS }).map((v) => Float32Array.from(v));
const doc = fc.record({ id, text: fc.string({ maxLength: 12 }), metadata: fc.dictionary(fc.constantFrom('x', 'y'), fc.oneof(fc.integer({ min: 0, max: 2 }), fc.string({ maxLength: 4 }))), vector });

type Op = { kind: 'upsert'; docs: { id: string; text: string; metadata: Record<string, unknown>; vector: Float32Array }[] } | { kind: 'delete'; id: string } | { kind: 'search'; query: Float32Array };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('upsert' as const), docs: fc.array(doc, { minLength: 1, maxLength: 3 }) }),
  fc.record({ kind: fc.constant('delete' as const), id }),
  fc.record({ kind: fc.constant('search' as const), query: vector }),
  fc.record({ kind: fc.constant('search' as const), query: vector }),
);

const config = smallShardConfig({ dimensions: DIMS, bm25_backend: 'none' });

t.test('every hit shows its document as last written, whatever the cache holds', async (t) => {
  const dir = tempDir('firkin-payloads-');
  const store = await Store.open(path.join(dir, 'db'), { writeWorker: false });
  t.teardown(() => store.close());
  let run = 0;
  await fc.assert(
    // 1 byte keeps nothing, 200 a couple of entries (evictions), undefined the default.
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), fc.constantFrom(1, 200, undefined), async (ops, payloadCacheBytes) => {
      const shard = await Shard.open(run++, config, { store, ann: usearchEngine, indexDir: dir, log: pino({ level: 'silent' }), caches: { payloads: newPayloadCache(payloadCacheBytes), postings: newPostingCache() } });
      try {
        const live = new Map<string, { text: string; metadata: Record<string, unknown> }>();
        for (const o of ops) {
          if (o.kind === 'upsert') {
            await shard.upsert(o.docs);
            for (const d of o.docs) live.set(d.id, { text: d.text, metadata: d.metadata });
          } else if (o.kind === 'delete') {
            await shard.remove(o.id);
            live.delete(o.id);
          } else {
            const hits = await shard.search(o.query, IDS.length, 64, undefined);
            for (const h of hits) {
              const want = live.get(h.id);
              if (want === undefined) throw new Error(`hit ${h.id} is not a live document`);
              t.same({ text: h.text, metadata: h.metadata }, want, `payload of ${h.id}`);
            }
            // A filter reads the same payloads: it must judge the live metadata too.
            const filtered = await shard.search(o.query, IDS.length, 64, parseFilter({ x: 1 }));
            for (const h of filtered) t.equal(live.get(h.id)?.metadata.x, 1, `filtered hit ${h.id} matches its live metadata`);
          }
        }
        return true;
      } finally {
        await shard.close({ save: false });
      }
    }),
    fcParams(60),
  );
  t.end();
});

t.test('a shard reopened over dropped data never sees its old instance\'s payloads in a shared cache', async (t) => {
  // A replica installing a snapshot drops its data and reopens: its writes number from 1 again.
  const dir = tempDir('firkin-payloads-reopen-');
  const store = await Store.open(path.join(dir, 'db'), { writeWorker: false });
  t.teardown(() => store.close());
  const payloads = newPayloadCache();
  const deps = { store, ann: usearchEngine, indexDir: dir, log: pino({ level: 'silent' }), payloads };
  const v = Float32Array.of(1, 2, 3, 4);
  const old = await Shard.open(7, config, deps);
  await old.upsert([{ id: 'a', text: 'old', metadata: {}, vector: v }]);
  t.equal((await old.search(v, 1, 64, undefined))[0]?.text, 'old');
  await old.close({ save: false, reason: 'dropped' });
  await dropShardData(store, 7, dir);
  const fresh = await Shard.open(7, config, deps);
  t.teardown(() => fresh.close({ save: false }));
  await fresh.upsert([{ id: 'a', text: 'new', metadata: {}, vector: v }]);
  t.equal((await fresh.search(v, 1, 64, undefined))[0]?.text, 'new');
});
