// Vector search against in-process usearch, on the issue's data, in one run. The data is
// generated deterministically: VECTOR_BENCH_N vectors (default 100000) of 128 dimensions from
// a Gaussian mixture of 100 clusters (seed 42), VECTOR_BENCH_QUERIES queries (default 1000)
// from the same mixture, L2, exact top-10 ground truth (usearch's exact search).
// The node runs in its own process; the load generator and the baseline here. Cases (filter
// by name with the first argument):
//   raw insert / raw ef=E   usearch in this process (M 16, ef_construction 200): add() in
//                           batches, then searches one at a time for every ef of the sweep
//   insert                  HTTP batched inserts (CBOR, 1000 docs per request), docs/s
//   search ef=E c=C         HTTP search at the smallest swept ef reaching recall 0.95 and
//                           0.99 on the raw index, with 1 and 8 clients; `vs_raw` is the
//                           QPS ratio to the raw index at the same ef (the figure to report);
//                           each with payload (the default) and with `with_payload: false`.
//                           This machine's speed drifts by tens of percent within minutes, so
//                           the raw index is searched again right before and after each HTTP
//                           case, and `vs_raw` divides by the mean of those two (`raw_qps`).
//                           Each case runs the queries VECTOR_BENCH_PASSES times (default 3),
//                           after as many unmeasured passes; recall is from the first pass.
//   raw f16 ...             the same in-process index keeping f16 vectors (a collection's default
//                           index precision), at the chosen beams: for reference; the ratios
//                           divide by the f32 index, the issue's baseline
//   raw batch ... threads=T usearch's batch search in this process, 100 queries a call on T threads
//   search/batch ...        the same queries 100 per `search/batch` request (QPS in queries)
// Usage: npx tsx bench/vector.ts [filter]   (VECTOR_BENCH_N=2000 for a quick check)
import { rmSync } from 'node:fs';
import { usearchEngine } from '../src/vector/ann/usearch.js';
import { tempDir } from '../test/support/node.js';
import { agent, call, drive } from './http-client.js';
import { type BenchResult, report, selected, spawnBenchNode } from './support.js';
import { DIMS, EF_SWEEP, K, RECALL_TARGETS, issueVectors, recallOf } from './vector-data.js';

const N = Number(process.env.VECTOR_BENCH_N ?? 100_000);
const QUERIES = Number(process.env.VECTOR_BENCH_QUERIES ?? 1_000);
const PASSES = Number(process.env.VECTOR_BENCH_PASSES ?? 3);
const BATCH = 1_000;
/** Queries per `search/batch` request. */
const BATCH_SEARCHES = 100;

const results: BenchResult[] = [];
const dataDir = tempDir('firkin-bench-vector-');
const node = await spawnBenchNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000', SERVICE_LOG_LEVEL: 'info' });
try {
  const { data, queries, flat, qflat, truth } = issueVectors(N, QUERIES);

  // The baseline first: its synchronous inserts block this event loop, and a keep-alive
  // socket whose close went unnoticed meanwhile would fail the next HTTP request.
  const index = usearchEngine.create({ dimensions: DIMS, metric: 'l2', m: 16, efConstruction: 200 });
  const start = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    index.add(BigUint64Array.from({ length: Math.min(BATCH, N - i) }, (_, j) => BigInt(i + j)), flat.subarray(i * DIMS, Math.min(N, i + BATCH) * DIMS));
  }
  results.push({ bench: `raw insert n=${N}`, 'docs/s': N / ((performance.now() - start) / 1000) });
  const rawQps = new Map<number, number>();
  const chosen = new Map<number, number>(); // recall target -> smallest ef reaching it
  for (const ef of EF_SWEEP) {
    const found: number[][] = [];
    const r = await drive(queries, 1, async (q, i) => {
      found[i] = Array.from(index.search(q, K, Math.max(K, ef)).keys, Number);
    });
    const recall = recallOf(found, truth);
    rawQps.set(ef, r.qps);
    if (selected('raw')) results.push({ bench: `raw ef=${ef}`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, recall });
    for (const target of RECALL_TARGETS) if (recall >= target && !chosen.has(target)) chosen.set(target, ef);
  }

  // usearch's own batch search: BATCH_SEARCHES queries per call on 1 and 2 threads (the
  // calling thread waits), the in-process ceiling for `search/batch`.
  for (const ef of new Set(chosen.values())) {
    for (const threads of [1, 2]) {
      if (!selected(`raw batch ef=${ef} threads=${threads}`)) continue;
      const found: number[][] = [];
      const t0 = performance.now();
      for (let first = 0; first < QUERIES; first += BATCH_SEARCHES) {
        const n = Math.min(BATCH_SEARCHES, QUERIES - first);
        index.searchMany(qflat.subarray(first * DIMS, (first + n) * DIMS), K, Math.max(K, ef), threads).forEach((m, j) => (found[first + j] = Array.from(m.keys, Number)));
      }
      const qps = QUERIES / ((performance.now() - t0) / 1000);
      results.push({ bench: `raw batch of ${BATCH_SEARCHES} ef=${ef} threads=${threads}`, qps, recall: recallOf(found, truth), vs_raw: qps / rawQps.get(ef)! });
    }
  }

  if (selected('insert') || selected('search')) {
    await call(node.url, 'PUT', '/vectordb/collections/bench', { dimensions: DIMS, metric: 'l2' });
    const insertStart = performance.now();
    for (let i = 0; i < N; i += BATCH) {
      const documents = data.slice(i, i + BATCH).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
      await call(node.url, 'POST', '/vectordb/collections/bench/docs', { documents }, true);
    }
    const seconds = (performance.now() - insertStart) / 1000;
    results.push({ bench: `insert n=${N} batch=${BATCH}`, 'docs/s': N / seconds, seconds });

    // Unmeasured passes first: the first thousands of searches after the inserts run up to 2×
    // slower (caches filling, code warming up) and the first measured case would pay for it.
    const passes = Array.from({ length: PASSES * queries.length }, (_, i) => i % queries.length);
    await drive(passes, 8, async (i) => void (await call(node.url, 'POST', '/vectordb/collections/bench/search', { vector: Array.from(queries[i]!), k: K })));
    // The raw index's QPS now (one pass, one at a time), to set beside the case just run.
    const rawNow = async (ef: number) => (await drive(queries, 1, async (q) => void index.search(q, K, Math.max(K, ef)))).qps;
    const targetsByEf = new Map<number, number[]>();
    for (const [target, ef] of chosen) targetsByEf.set(ef, [...(targetsByEf.get(ef) ?? []), target]);
    for (const [ef, targets] of targetsByEf) {
      // with payload (text and metadata, the default) and without (ids and scores, as the raw index)
      for (const payload of [true, false]) {
        for (const clients of [1, 8]) {
          const found: number[][] = [];
          const rawBefore = await rawNow(ef);
          const r = await drive(passes, clients, async (i) => {
            const q = queries[i]!;
            const body = payload ? { vector: Array.from(q), k: K, ef } : { vector: Array.from(q), k: K, ef, with_payload: false };
            const res = await call(node.url, 'POST', '/vectordb/collections/bench/search', body);
            found[i] ??= res.results.map((h: { id: string }) => Number(h.id));
          });
          const raw = (rawBefore + (await rawNow(ef))) / 2;
          const name = `search ef=${ef} c=${clients}${payload ? '' : ' with_payload=false'} (recall >= ${targets.join(', ')})`;
          results.push({ bench: name, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, recall: recallOf(found, truth), raw_qps: raw, vs_raw: r.qps / raw });
        }
      }
      // search/batch: BATCH_SEARCHES queries per request; QPS counts queries, latency is per request
      const batches = Array.from({ length: Math.ceil(queries.length / BATCH_SEARCHES) }, (_, b) => b * BATCH_SEARCHES);
      for (const clients of [1, 8]) {
        const found: number[][] = [];
        const rawBefore = await rawNow(ef);
        const r = await drive(batches, clients, async (first) => {
          const searches = queries.slice(first, first + BATCH_SEARCHES).map((q) => ({ vector: Array.from(q), k: K, ef }));
          const res = await call(node.url, 'POST', '/vectordb/collections/bench/search/batch', { searches });
          res.results.forEach((hits: { id: string }[], j: number) => (found[first + j] = hits.map((h) => Number(h.id))));
        });
        const qps = (r.qps * queries.length) / batches.length;
        const raw = (rawBefore + (await rawNow(ef))) / 2;
        results.push({ bench: `search/batch of ${BATCH_SEARCHES} ef=${ef} c=${clients} (recall >= ${targets.join(', ')})`, qps, p50_ms: r.p50, p99_ms: r.p99, recall: recallOf(found, truth), raw_qps: raw, vs_raw: qps / raw });
      }
    }
  }
  // The same index keeping its vectors as f16 (what a collection's index does by default since
  // index.precision): its recall and QPS at the chosen beams, for reference beside the f32
  // baseline the ratios divide by. Last: its synchronous build would outlast the node's
  // keep-alive timeout and leave a dead socket for the next HTTP request.
  if (selected('raw f16')) {
    const half = usearchEngine.create({ dimensions: DIMS, metric: 'l2', m: 16, efConstruction: 200, precision: 'f16' });
    const t0 = performance.now();
    for (let i = 0; i < N; i += BATCH) half.add(BigUint64Array.from({ length: Math.min(BATCH, N - i) }, (_, j) => BigInt(i + j)), flat.subarray(i * DIMS, Math.min(N, i + BATCH) * DIMS));
    results.push({ bench: `raw f16 insert n=${N}`, 'docs/s': N / ((performance.now() - t0) / 1000) });
    for (const ef of new Set(chosen.values())) {
      const found: number[][] = [];
      const r = await drive(queries, 1, async (q, i) => {
        found[i] = Array.from(half.search(q, K, Math.max(K, ef)).keys, Number);
      });
      results.push({ bench: `raw f16 ef=${ef}`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, recall: recallOf(found, truth), vs_raw: r.qps / rawQps.get(ef)! });
    }
  }
} finally {
  agent.destroy();
  await node.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
report(results);
