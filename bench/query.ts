// _find over N generated user documents (default 100k; N=20000 for a quick run): equality,
// selective equality, nested path, range, prefix, regex, in, several conditions, top-K with
// order_by, counting.
// The node runs in its own process. Usage: N=100000 npx tsx bench/query.ts [filter]
import { request, tempDir, TEST_ADMIN_KEY } from '../test/support/node.js';
import { type BenchResult, percentile, report, selected, spawnBenchNode } from './support.js';

const n = Number(process.env.N ?? 100_000);
const iterations = Number(process.env.ITERATIONS ?? 200);
const CITIES = ['Paris', 'London', 'Berlin', 'Madrid', 'Rome', 'Oslo', 'Vienna', 'Prague', 'Lisbon', 'Dublin'];
const STATUSES = ['active', 'inactive', 'banned'];
const TAGS = ['red', 'green', 'blue', 'admin', 'beta'];

function user(i: number) {
  return {
    _id: `user${String(i).padStart(7, '0')}`,
    type: i % 10 === 0 ? 'admin' : 'user',
    name: `name${(i * 7919) % n}`,
    age: 18 + (i % 70),
    status: STATUSES[i % 3],
    profile: { city: CITIES[i % CITIES.length] },
    tags: [TAGS[i % 5], TAGS[(i * 3) % 5]],
    created_at: 1_700_000_000_000 + i * 1000,
  };
}

const node = await spawnBenchNode({ SERVICE_DATA_DIR: tempDir('firkin-bench-query-'), SERVICE_LOG_LEVEL: 'info' });
try {
  const call = (method: string, path: string, body?: unknown) => request(node.url, method, path, { body, key: TEST_ADMIN_KEY });
  await call('PUT', '/db/users');
  const loadStart = performance.now();
  for (let i = 0; i < n; i += 1000) {
    const res = await call('POST', '/db/users/_bulk_docs', { docs: Array.from({ length: Math.min(1000, n - i) }, (_, j) => user(i + j)) });
    if (res.status >= 300) throw new Error(`load failed: ${res.status} ${res.text.slice(0, 200)}`);
  }
  const loadS = (performance.now() - loadStart) / 1000;
  // A deep page by bookmark: where the page after the first 5,000 newest documents starts.
  const deep = await call('POST', '/db/users/_find', { selector: {}, sort: [{ created_at: 'desc' }], limit: 5000, fields: ['_id'] });
  const cases: Record<string, unknown> = {
    'equality limit 10': { where: [{ path: ['type'], value: 'user' }], limit: 10 },
    'selective equality': { where: [{ path: ['name'], value: 'name4242' }] },
    'nested path limit 100': { where: [{ path: ['profile', 'city'], value: 'Oslo' }], limit: 100 },
    'range limit 100': { where: [{ path: ['age'], op: '>=', value: 80 }], limit: 100 },
    'prefix limit 100': { where: [{ path: ['name'], op: 'prefix', value: 'name99' }], limit: 100 },
    'regex limit 10': { where: [{ path: ['name'], op: 'regex', value: '^name12' }], limit: 10 },
    'in limit 100': { where: [{ path: ['status'], op: 'in', value: ['banned', 'inactive'] }], limit: 100 },
    'top-K order_by age desc': { where: [{ path: ['type'], value: 'admin' }], order_by: [{ path: ['age'], dir: 'desc' }], limit: 10 },
    'top-K range sorted by itself': { where: [{ path: ['age'], op: '>=', value: 60 }], order_by: [{ path: ['age'] }], limit: 10 },
    'top-K newest first (every document)': { selector: {}, sort: [{ created_at: 'desc' }], limit: 20 },
    'top-K $gt null asc': { selector: { created_at: { $gt: null } }, sort: [{ created_at: 'asc' }], limit: 20 },
    'top-K _id desc (type = admin)': { selector: { type: 'admin' }, sort: [{ _id: 'desc' }], limit: 20 },
    'top-K _id desc (every document)': { selector: {}, sort: [{ _id: 'desc' }], limit: 20 },
    'top-K bookmark after 5000 (every document, created_at desc)': { selector: {}, sort: [{ created_at: 'desc' }], limit: 20, bookmark: deep.body.bookmark },
    'two equalities limit 10': { selector: { type: 'user', status: 'active' }, limit: 10 },
    'selective and common equality': { selector: { name: 'name4242', type: 'user' } },
    'equality and range limit 10': { selector: { type: 'admin', age: { $gte: 60 } }, limit: 10 },
    'top-K two equalities, created_at desc': { selector: { type: 'admin', status: 'banned' }, sort: [{ created_at: 'desc' }], limit: 20 },
    'count equality': { selector: { type: 'user' }, limit: 0 },
    'count all': { where: [], limit: 0 },
  };
  const results: BenchResult[] = [{ bench: `load ${n} docs via _bulk_docs x1000`, docs_per_s: n / loadS }];
  for (const [name, body] of Object.entries(cases)) {
    if (!selected(name)) continue;
    const runs = name.startsWith('count') || name.startsWith('regex') || name.startsWith('top') ? Math.min(iterations, 30) : iterations;
    for (let i = 0; i < 3; i++) await call('POST', '/db/users/_find', body); // warm up
    const lat: number[] = [];
    let total = 0;
    for (let i = 0; i < runs; i++) {
      const start = performance.now();
      const res = await call('POST', '/db/users/_find', body);
      lat.push(performance.now() - start);
      total = res.body.meta?.total ?? -1;
    }
    lat.sort((a, b) => a - b);
    results.push({ bench: name, total, ops_per_s: 1000 / (lat.reduce((a, b) => a + b, 0) / lat.length), p50_ms: percentile(lat, 50), p99_ms: percentile(lat, 99) });
  }
  report(results);
} finally {
  await node.stop();
}
