// A VDB of 4 shards against a plain database: insert (bulk of 500), read by id, and _find
// (equality, limit 100). Usage: N=20000 npx tsx bench/vdb.ts [filter]
import { TEST_ADMIN_KEY, request, tempDir } from '../test/support/node.js';
import { type BenchResult, percentile, report, selected, spawnBenchNode } from './support.js';

const n = Number(process.env.N ?? 20_000);
const reads = Number(process.env.READS ?? 2_000);

const node = await spawnBenchNode({ SERVICE_DATA_DIR: tempDir('firkin-bench-vdb-'), SERVICE_LOG_LEVEL: 'info' });
try {
  const call = (method: string, path: string, body?: unknown) => request(node.url, method, path, { body, key: TEST_ADMIN_KEY });
  await call('PUT', '/db/plain');
  await call('POST', '/vdb', { name: 'sharded', shard_count: 4 });
  const results: BenchResult[] = [];
  for (const [label, base] of [['db', '/db/plain'], ['vdb(4)', '/vdb/sharded']] as const) {
    if (!selected(label)) continue;
    const start = performance.now();
    for (let i = 0; i < n; i += 500) {
      const docs = Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ _id: `doc${i + j}`, group: `g${(i + j) % 50}`, n: i + j }));
      const res = await call('POST', `${base}/_bulk_docs`, { docs });
      if (res.status !== 201) throw new Error(`insert failed: ${res.status}`);
    }
    results.push({ bench: `${label} insert (bulk 500)`, docs_per_s: n / ((performance.now() - start) / 1000) });
    const lat: number[] = [];
    for (let i = 0; i < reads; i++) {
      const t0 = performance.now();
      await call('GET', `${base}/doc${(i * 7919) % n}`);
      lat.push(performance.now() - t0);
    }
    lat.sort((a, b) => a - b);
    results.push({ bench: `${label} GET by id`, ops_per_s: 1000 / (lat.reduce((a, b) => a + b, 0) / lat.length), p50_ms: percentile(lat, 50), p99_ms: percentile(lat, 99) });
    const flat: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      await call('POST', `${base}/_find`, { where: [{ path: ['group'], value: `g${i % 50}` }], limit: 100 });
      flat.push(performance.now() - t0);
    }
    flat.sort((a, b) => a - b);
    results.push({ bench: `${label} _find eq limit 100`, ops_per_s: 1000 / (flat.reduce((a, b) => a + b, 0) / flat.length), p50_ms: percentile(flat, 50), p99_ms: percentile(flat, 99) });
  }
  report(results);
} finally {
  await node.stop();
}
