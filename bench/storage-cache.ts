// Point reads against RocksDB's block cache: the 10-key `getManySync` a vector search makes
// for its hits, over a hot set of 10,000 records (1,000 queries x 10 hits) among 100,000 of
// 600 bytes in SST files (300,000 more written after them push them out of the memtables),
// with the binding's default cache (8 MB a column) and with SERVICE_STORAGE_CACHE_MB's default.
// Usage: npx tsx bench/storage-cache.ts
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { encodeKey } from '../src/core/keys.js';
import { Store } from '../src/storage/db.js';
import { tempDir } from '../test/support/node.js';
import { type BenchResult, report } from './support.js';

const RECORDS = 100_000;
const FILLER = 300_000;
const results: BenchResult[] = [];
for (const cacheMb of [undefined, 128]) {
  const dir = tempDir('firkin-bench-cache-');
  const store = await Store.open(dir, { cacheMb });
  try {
    const fill = async (prefix: number, n: number) => {
      for (let i = 0; i < n; i += 1000) {
        await store.batch(Array.from({ length: 1000 }, (_, j) => ({ type: 'put' as const, cf: 'vec' as const, key: encodeKey([prefix, 'd', String(i + j)]), value: randomBytes(600) })), { sync: false });
      }
    };
    await fill(1, RECORDS);
    await fill(2, FILLER);
    const hot = Array.from({ length: 10_000 }, (_, i) => encodeKey([1, 'd', String((i * 7919) % RECORDS)]));
    const pass = () => {
      for (let q = 0; q < 1000; q++) store.getManySync('vec', hot.slice(q * 10, q * 10 + 10));
    };
    pass();
    pass(); // warm
    const t0 = performance.now();
    for (let r = 0; r < 5; r++) pass();
    results.push({ bench: `getManySync 10 keys, cache ${cacheMb ?? 'default 8'} MB`, us_per_read: ((performance.now() - t0) * 1000) / 5000 });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
report(results);
