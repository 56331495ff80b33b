// Vector service throughput and recall. The node runs in its own process; the load generator
// here. Cases (filter by name with the first argument):
//   insert          batched inserts (CBOR, 1000 docs per request), docs/s
//   search ef=E     HTTP vector search, 1 client, QPS, p50/p99, recall@10 vs exact search
//   search c=8      the same with 8 concurrent clients
//   raw ef=E        the same queries on an in-process usearch index with the same settings
//                   (the ceiling: no HTTP, no JSON, no RocksDB reads)
//   bm25 / hybrid   keyword and hybrid search QPS over a synthetic text corpus (disk backend)
// Sizes: VECTOR_BENCH_N (default 20000; the size is 100000), VECTOR_BENCH_TEXT_N
// (default 20000), VECTOR_BENCH_QUERIES (default 1000).
// Usage: npx tsx bench/vector.ts [filter]
import { rmSync } from 'node:fs';
import http from 'node:http';
import usearch from 'usearch';
import { encodeCbor } from '../src/core/codec.js';
import { usearchEngine } from '../src/vector/ann/usearch.js';
import { tempDir } from '../test/support/node.js';
import { spawnNode } from '../test/support/process.js';
import { clusteredVectors, mulberry32 } from '../test/vector/clustered.js';
import { type BenchResult, percentile, report, selected } from './support.js';

const N = Number(process.env.VECTOR_BENCH_N ?? 20_000);
const TEXT_N = Number(process.env.VECTOR_BENCH_TEXT_N ?? 20_000);
const QUERIES = Number(process.env.VECTOR_BENCH_QUERIES ?? 1_000);
const DIMS = 128;
const K = 10;
const BATCH = 1_000;
const EFS = [16, 64];

// node:http with keep-alive rather than fetch: on this 2-core machine the client shares the
// CPU with the node, and fetch (undici's WHATWG layer) costs about as much per request as
// the server's whole search, which made the HTTP figures mostly a client measurement.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function call(url: string, method: string, path: string, body?: unknown, cbor = false): Promise<any> {
  const headers: Record<string, string | number> = {};
  let payload: string | Buffer | undefined;
  if (body !== undefined) {
    headers['content-type'] = cbor ? 'application/cbor' : 'application/json';
    payload = cbor ? encodeCbor(body) : JSON.stringify(body);
    headers['content-length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const req = http.request(url + path, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode! >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`));
        else resolve(JSON.parse(text));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Runs `queries` through `run` with `clients` concurrent workers; QPS and latency percentiles. */
async function drive<Q>(queries: readonly Q[], clients: number, run: (q: Q, i: number) => Promise<void>): Promise<{ qps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < queries.length; i = next++) {
        const t0 = performance.now();
        await run(queries[i]!, i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { qps: queries.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

function recallOf(found: readonly (readonly number[])[], truth: readonly Set<number>[]): number {
  let hits = 0;
  found.forEach((ids, i) => (hits += ids.filter((id) => truth[i]!.has(id)).length));
  return hits / (K * found.length);
}

/** A Zipf-ish vocabulary of 5000 words; each document 8 to 40 words. */
function textCorpus(count: number, seed: number): string[] {
  const rand = mulberry32(seed);
  const vocab = Array.from({ length: 5_000 }, (_, i) => `w${i.toString(36)}`);
  const word = () => vocab[Math.min(vocab.length - 1, Math.floor(vocab.length * rand() ** 3))]!;
  return Array.from({ length: count }, () => Array.from({ length: 8 + Math.floor(rand() * 33) }, word).join(' '));
}

const results: BenchResult[] = [];
const dataDir = tempDir('firkin-bench-vector-');
const node = await spawnNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000', SERVICE_LOG_LEVEL: 'info' });
try {
  const all = clusteredVectors({ seed: 7, count: N + QUERIES, dims: DIMS, clusters: 100, noise: 0.25 });
  const data = all.slice(0, N);
  const queries = all.slice(N);
  const flat = new Float32Array(N * DIMS);
  data.forEach((v, i) => flat.set(v, i * DIMS));
  const qflat = new Float32Array(QUERIES * DIMS);
  queries.forEach((v, i) => qflat.set(v, i * DIMS));
  const exact = usearch.exactSearch(flat, qflat, DIMS, K, usearch.MetricKind.Cos, 0) as InstanceType<typeof usearch.BatchMatches>;
  const truth = queries.map((_, i) => new Set(Array.from(exact.get(i).keys, Number)));

  // In-process first: its synchronous inserts block this event loop, and a keep-alive socket
  // whose close went unnoticed meanwhile would fail the next HTTP request.
  if (selected('raw')) {
    const index = usearchEngine.create({ dimensions: DIMS, metric: 'cosine', m: 16, efConstruction: 200 });
    const start = performance.now();
    for (let i = 0; i < N; i += BATCH) {
      index.add(BigUint64Array.from({ length: Math.min(BATCH, N - i) }, (_, j) => BigInt(i + j)), flat.subarray(i * DIMS, Math.min(N, i + BATCH) * DIMS));
    }
    results.push({ bench: `raw insert n=${N}`, 'docs/s': N / ((performance.now() - start) / 1000) });
    for (const ef of EFS) {
      const found: number[][] = [];
      const r = await drive(queries, 1, async (q, i) => {
        found[i] = Array.from(index.search(q, K, Math.max(K, ef)).keys, Number);
      });
      results.push({ bench: `raw ef=${ef}`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, recall: recallOf(found, truth) });
    }
  }

  if (selected('insert') || selected('search')) {
    await call(node.url, 'PUT', '/vectordb/collections/bench', { dimensions: DIMS });
    const start = performance.now();
    for (let i = 0; i < N; i += BATCH) {
      const documents = data.slice(i, i + BATCH).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
      await call(node.url, 'POST', '/vectordb/collections/bench/docs', { documents }, true);
    }
    const seconds = (performance.now() - start) / 1000;
    results.push({ bench: `insert n=${N} batch=${BATCH}`, 'docs/s': N / seconds, seconds });

    for (const ef of EFS) {
      const found: number[][] = [];
      const r = await drive(queries, 1, async (q, i) => {
        const res = await call(node.url, 'POST', '/vectordb/collections/bench/search', { vector: Array.from(q), k: K, ef });
        found[i] = res.results.map((h: { id: string }) => Number(h.id));
      });
      results.push({ bench: `search ef=${ef} c=1`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, recall: recallOf(found, truth) });
    }
    const found: number[][] = [];
    const r8 = await drive(queries, 8, async (q, i) => {
      const res = await call(node.url, 'POST', '/vectordb/collections/bench/search', { vector: Array.from(q), k: K });
      found[i] = res.results.map((h: { id: string }) => Number(h.id));
    });
    results.push({ bench: 'search ef=64 c=8', qps: r8.qps, p50_ms: r8.p50, p99_ms: r8.p99, recall: recallOf(found, truth) });
  }

  if (selected('bm25') || selected('hybrid')) {
    const texts = textCorpus(TEXT_N, 11);
    await call(node.url, 'PUT', '/vectordb/collections/text', { dimensions: 64, embedder: { type: 'hash' }, bm25_backend: 'disk' });
    await call(node.url, 'PUT', '/vectordb/collections/textmem', { dimensions: 64, embedder: { type: 'hash' }, bm25_backend: 'memory' });
    for (const c of ['text', 'textmem']) {
      const start = performance.now();
      for (let i = 0; i < TEXT_N; i += BATCH) {
        const documents = texts.slice(i, i + BATCH).map((text, j) => ({ id: String(i + j), text }));
        await call(node.url, 'POST', `/vectordb/collections/${c}/docs`, { documents }, true);
      }
      results.push({ bench: `text insert ${c} n=${TEXT_N}`, 'docs/s': TEXT_N / ((performance.now() - start) / 1000) });
    }
    const rand = mulberry32(99);
    const textQueries = Array.from({ length: Math.min(QUERIES, 500) }, () => {
      const words = texts[Math.floor(rand() * texts.length)]!.split(' ');
      return [words[Math.floor(rand() * words.length)], words[Math.floor(rand() * words.length)]].join(' ');
    });
    for (const [name, c, path] of [
      ['bm25 disk', 'text', 'search/bm25'],
      ['bm25 memory', 'textmem', 'search/bm25'],
      ['hybrid rrf disk', 'text', 'search/hybrid'],
    ] as const) {
      for (const clients of [1, 8]) {
        const r = await drive(textQueries, clients, async (query) => void (await call(node.url, 'POST', `/vectordb/collections/${c}/${path}`, { query, k: K })));
        results.push({ bench: `${name} c=${clients}`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99 });
      }
    }
  }
} finally {
  agent.destroy();
  await node.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
report(results);
