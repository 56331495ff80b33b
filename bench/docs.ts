// Document database throughput at 1 and 16 concurrent clients: single-document PUT (into one
// database, and spread over 16), GET by id, _bulk_docs of 100k documents in batches of 500,
// and a full changes read of 100k; and the floor of GET: the same answer from a bare node:http
// server and a bare fastify route (each in its own process), what any Node server pays here.
// The node runs in its own process. Usage: npx tsx bench/docs.ts [filter]
// (DURATION_S=10 per PUT/GET case, BULK_DOCS=100000 by default)
import autocannon from 'autocannon';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { spawnScript } from '../test/support/process.js';
import { benchDoc, type BenchResult, percentile, report, selected, spawnBenchNode } from './support.js';

const durationS = Number(process.env.DURATION_S ?? 10);
const bulkDocs = Number(process.env.BULK_DOCS ?? 100_000);
const batch = 500;
const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

async function call(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const headers = body === undefined ? auth : { ...auth, 'content-type': 'application/json' };
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

async function cannon(name: string, url: string, connections: number, setup: (n: number) => { method: 'GET' | 'PUT'; path: string; body?: string }): Promise<BenchResult> {
  let n = 0;
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    pipelining: 1,
    headers: { ...auth, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (req) => {
          const r = setup(n++);
          return { ...req, method: r.method, path: r.path, body: r.body };
        },
      },
    ],
  });
  return { bench: `${name} c=${connections}`, 'docs/s': result.requests.average, p50_ms: result.latency.p50, p99_ms: result.latency.p99, errors: result.errors + result.non2xx };
}

/** A server answering every GET with `body` from memory: node:http alone, or one fastify route. */
function bareServer(kind: 'node:http' | 'fastify', body: string): string {
  const listening = "console.log('listening on http://127.0.0.1:' + server.address().port + ' ')";
  return kind === 'node:http'
    ? `import http from 'node:http'; const body = ${JSON.stringify(body)}; const server = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }); res.end(body); }); server.listen(0, '127.0.0.1', () => ${listening});`
    : `import Fastify from 'fastify'; const body = ${JSON.stringify(body)}; const app = Fastify(); app.get('/db/:db/:id', (req, reply) => { reply.header('content-type', 'application/json').send(body); }); await app.listen({ port: 0, host: '127.0.0.1' }); const server = app.server; ${listening};`;
}

async function bulk(url: string, db: string, clients: number): Promise<BenchResult> {
  await call(url, 'PUT', `/db/${db}`);
  const batches = Math.ceil(bulkDocs / batch);
  let next = 0;
  const latencies: number[] = [];
  const worker = async () => {
    for (let b = next++; b < batches; b = next++) {
      const docs = Array.from({ length: Math.min(batch, bulkDocs - b * batch) }, (_, k) => ({ _id: `d${String(b * batch + k).padStart(8, '0')}`, ...benchDoc(b * batch + k) }));
      const start = performance.now();
      const results = await call(url, 'POST', `/db/${db}/_bulk_docs`, { docs });
      latencies.push(performance.now() - start);
      if (results.some((r: { ok: boolean }) => !r.ok)) throw new Error('a bulk entry failed');
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, worker));
  const elapsedS = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { bench: `_bulk_docs ${bulkDocs} x${batch} c=${clients}`, 'docs/s': bulkDocs / elapsedS, p50_ms: percentile(latencies, 50), p99_ms: percentile(latencies, 99), errors: 0 };
}

async function changesRead(url: string, db: string, pageSize: number | undefined): Promise<BenchResult> {
  const latencies: number[] = [];
  let since = '0';
  let total = 0;
  const started = performance.now();
  for (;;) {
    const start = performance.now();
    const page = await call(url, 'GET', `/db/${db}/_changes?since=${encodeURIComponent(since)}${pageSize === undefined ? '' : `&limit=${pageSize}`}`);
    latencies.push(performance.now() - start);
    total += page.results.length;
    since = page.last_seq;
    if (pageSize === undefined || page.results.length < pageSize) break;
  }
  const elapsedS = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { bench: `changes read ${total}${pageSize === undefined ? ' one request' : ` pages of ${pageSize}`}`, 'docs/s': total / elapsedS, p50_ms: percentile(latencies, 50), p99_ms: percentile(latencies, 99), errors: total === bulkDocs ? 0 : 1 };
}

const node = await spawnBenchNode({ SERVICE_DATA_DIR: tempDir('firkin-bench-docs-'), SERVICE_LOG_LEVEL: 'info' });
try {
  const url = node.url;
  const results: BenchResult[] = [];
  await call(url, 'PUT', '/db/single');
  const body = JSON.stringify(benchDoc(1));
  let written = 0;
  for (const c of [1, 16]) {
    if (selected(`PUT c=${c}`)) {
      const r = await cannon('PUT /db/single/:id', url, c, (n) => ({ method: 'PUT', path: `/db/single/c${c}-${n}`, body }));
      results.push(r);
      written = Math.max(written, 1);
    }
  }
  if (selected('PUT c=16 dbs=16')) {
    // Many databases written at once (one per tenant, say): each commits its own groups, and
    // the storage write thread merges what queues up into one write and fsync.
    for (let i = 0; i < 16; i++) await call(url, 'PUT', `/db/many${i}`);
    results.push(await cannon('PUT /db/many{0..15}/:id', url, 16, (n) => ({ method: 'PUT', path: `/db/many${n % 16}/d${n}`, body })));
  }
  if (selected('GET')) {
    // GET needs documents: make sure some exist even when the PUT cases were filtered out.
    await call(url, 'POST', '/db/single/_bulk_docs', { docs: Array.from({ length: 1000 }, (_, i) => ({ _id: `g${i}`, ...benchDoc(i) })) });
    for (const c of [1, 16]) {
      if (selected(`GET c=${c}`)) results.push(await cannon('GET /db/single/:id', url, c, (n) => ({ method: 'GET', path: `/db/single/g${(n * 7919) % 1000}` })));
    }
    for (const c of [1, 16]) {
      if (selected(`GET c=${c}`)) results.push(await cannon('GET /health (ceiling)', url, c, () => ({ method: 'GET', path: '/health' })));
    }
    if (selected('GET c=16')) {
      const doc = JSON.stringify(await call(url, 'GET', '/db/single/g17'));
      for (const kind of ['node:http', 'fastify'] as const) {
        const bare = await spawnScript({ entry: ['--input-type=module', '-e', bareServer(kind, doc)], env: {}, ready: /listening on (http:\/\/\S+) /, what: `a bare ${kind} server` });
        try {
          results.push(await cannon(`GET, bare ${kind} (floor)`, bare.url, 16, () => ({ method: 'GET', path: '/db/single/g17' })));
        } finally {
          await bare.stop();
        }
      }
    }
  }
  for (const c of [1, 16]) {
    if (selected(`bulk c=${c}`)) results.push(await bulk(url, `bulk${c}`, c));
  }
  if (selected('changes')) {
    if (!results.some((r) => r.bench.startsWith('_bulk_docs'))) await bulk(url, 'bulk1', 1);
    results.push(await changesRead(url, 'bulk1', undefined));
    results.push(await changesRead(url, 'bulk1', 10_000));
  }
  report(results);
} finally {
  await node.stop();
}
