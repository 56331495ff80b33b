// A VDB `_find` on one value answers its total from the per-value counts (no posting walk)
// outside a rebalance, and stays exact: the same total and page as filtering every document.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { HybridClock, systemClock } from '../../../src/core/hlc.js';
import { DocEngine } from '../../../src/docdb/engine.js';
import { ValueCounts } from '../../../src/docdb/query/counts.js';
import { parseFind } from '../../../src/docdb/query/parse.js';
import { VdbEngine } from '../../../src/docdb/vdb/engine.js';
import { Store } from '../../../src/storage/db.js';

t.test('equality totals on a VDB come from the per-value counts, and are exact', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'firkin-vdb-counts-'));
  const store = await Store.open(dir, { writeWorker: true });
  const log = pino({ level: 'silent' });
  const hlc = new HybridClock(systemClock);
  const docs = await DocEngine.open({ store, hlc, log, clock: systemClock, revsLimit: 1000, compactAfterWrites: 0 });
  const counts = new ValueCounts(store, docs);
  docs.addIndexer(counts.indexer);
  docs.onCommitted(counts.committed);
  docs.onDrop(counts.dropped);
  // Posting keys read from the index: the counts' first build walks a value once; after
  // that an equality page reads only the keys of its window.
  let postingsRead = 0;
  type Walk = (cf: Parameters<Store['keyBatches']>[0], range?: object, size?: number) => AsyncGenerator<unknown[]>;
  for (const name of ['keyBatches', 'keyStringBatches'] as const) {
    const walk = (store[name] as Walk).bind(store);
    (store as unknown as Record<typeof name, Walk>)[name] = async function* (cf, range, size) {
      for await (const batch of walk(cf, range, size)) {
        if (cf === 'paths') postingsRead += batch.length;
        yield batch;
      }
    };
  }
  let n = 0;
  const vdbs = await VdbEngine.open({ store, counts, docs, hlc, log, nodeName: 'n1', clock: systemClock, newId: () => `gen${n++}` });
  t.teardown(async () => {
    await docs.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  await vdbs.create({ name: 'v', shardCount: 4, hashFunction: 'phash2', replicaFactor: 1, zones: [] });
  const colours = ['red', 'green', 'blue'];
  const written = Array.from({ length: 300 }, (_, i) => ({ _id: `d${String(i).padStart(3, '0')}`, colour: colours[i % 7 === 0 ? 0 : i % 3]!, i }));
  const results = await vdbs.bulkDocs('v', written);
  t.ok(results.every((r) => r.ok), 'every document written');

  for (const colour of colours) {
    const expected = written.filter((d) => d.colour === colour).map((d) => d._id).sort();
    const query = { where: [{ path: ['colour'], value: colour }], limit: 5, offset: 2, include_docs: false };
    parseFind(query);
    await vdbs.find('v', query);
    const before = postingsRead;
    const page = await vdbs.find('v', query);
    t.ok(postingsRead - before <= 4 * 7, `${colour}: the total came from the counts; each shard read at most its window (${postingsRead - before} keys for ${expected.length} matches)`);
    t.equal(page.meta.total, expected.length, `${colour}: total is exact`);
    t.same((page.docs as { _id: string }[]).map((d) => d._id), expected.slice(2, 7), `${colour}: the page is the right slice`);
  }
});
