// Vector search against pgvector, back to back, on bench/vector.ts's data: 100k × 128 vectors
// from a Gaussian mixture of 100 clusters (seed 42), 1000 queries, L2, exact top-10 truth.
// pgvector: an HNSW index (m 16, ef_construction 200, `vector_l2_ops`), queried as its users
// do (`ORDER BY embedding <-> $1 LIMIT 10`, a prepared statement per connection, the `pg`
// client over loopback TCP). Firkin: a standalone node in its own process, default settings,
// searched over keep-alive HTTP. For each system the smallest beam (`hnsw.ef_search`, `ef`)
// reaching recall 0.95 and 0.99 is found with one client, then both are run at it with 1 and
// 8 clients in PGVECTOR_BENCH_ROUNDS (5) rounds of one pass each, the systems' order swapped
// every round (this machine's speed drifts by tens of percent within minutes); QPS and
// latencies are the rounds' medians, `vs_pgvector` the median of the rounds' ratios.
//
// Not in the project's install, on purpose: the PostgreSQL server with pgvector is yours to
// run (docs/benchmarks.md, "pgvector", says how it was run here), and its client is a package
// of its own: `npm install --prefix bench/pgvector`. Without either the bench says so and
// ends (exit 0, as bench/text.ts skips LanceDB), so `npm run bench` goes on to the next.
// Usage: PGVECTOR_URL=postgres://postgres@127.0.0.1:5433/postgres npx tsx bench/pgvector.ts [filter]
//        (VECTOR_BENCH_N, VECTOR_BENCH_QUERIES, VECTOR_BENCH_PASSES as bench/vector.ts)
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../test/support/node.js';
import { agent, call, drive } from './http-client.js';
import { type BenchResult, report, selected, spawnBenchNode } from './support.js';
import { DIMS, EF_SWEEP, K, RECALL_TARGETS, issueVectors, recallOf } from './vector-data.js';

const N = Number(process.env.VECTOR_BENCH_N ?? 100_000);
const QUERIES = Number(process.env.VECTOR_BENCH_QUERIES ?? 1_000);
/** Unmeasured passes of the queries over each system before the sweep. */
const PASSES = Number(process.env.VECTOR_BENCH_PASSES ?? 3);
/** Alternating rounds per case (one pass of the queries per system each); QPS and ratios are their medians. */
const ROUNDS = Number(process.env.PGVECTOR_BENCH_ROUNDS ?? 5);
const BATCH = 1_000;
const PG_DIR = new URL('./pgvector/', import.meta.url);

interface PgClient {
  connect(): Promise<void>;
  query(q: string | { name?: string; text: string; values?: unknown[] }, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}
type PgModule = { default: { Client: new (o: { connectionString: string }) => PgClient } };
type Run = Awaited<ReturnType<typeof drive>>;

const url = process.env.PGVECTOR_URL;
if (url === undefined) {
  console.error('bench/pgvector.ts: skipped: set PGVECTOR_URL to a PostgreSQL with pgvector (docs/benchmarks.md, "pgvector")');
  process.exit(0);
}
if (!existsSync(new URL('node_modules/pg', PG_DIR))) {
  console.error('bench/pgvector.ts: skipped: the pg client is not installed (npm install --prefix bench/pgvector)');
  process.exit(0);
}
const pg = (await import(pathToFileURL(createRequire(new URL('package.json', PG_DIR)).resolve('pg')).href)) as PgModule;

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const literal = (v: Float32Array) => `[${Array.from(v).join(',')}]`;

const { data, queries, truth } = issueVectors(N, QUERIES);
const queryLiterals = queries.map(literal);
const indices = Array.from({ length: QUERIES }, (_, i) => i);
const warmUp = Array.from({ length: PASSES * QUERIES }, (_, i) => i % QUERIES);

const results: BenchResult[] = [];
const clients: PgClient[] = [];
const dataDir = tempDir('firkin-bench-pgvector-');
const node = await spawnBenchNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000', SERVICE_LOG_LEVEL: 'info' });
try {
  for (let i = 0; i < 8; i++) {
    const c = new pg.default.Client({ connectionString: url });
    await c.connect();
    clients.push(c);
  }
  const admin = clients[0]!;
  const version = (await admin.query("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).rows[0]?.extversion;
  if (version === undefined) throw new Error('pgvector is not installed in that database (CREATE EXTENSION vector)');

  // pgvector: load, then build the index (timed apart, and together as "inserted and indexed").
  await admin.query('DROP TABLE IF EXISTS firkin_bench_items');
  await admin.query(`CREATE TABLE firkin_bench_items (id integer PRIMARY KEY, embedding vector(${DIMS}))`);
  const loadStart = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const rows = data.slice(i, i + BATCH);
    await admin.query('INSERT INTO firkin_bench_items (id, embedding) SELECT * FROM unnest($1::integer[], $2::vector[])', [rows.map((_, j) => i + j), rows.map(literal)]);
  }
  const loadS = (performance.now() - loadStart) / 1000;
  const buildStart = performance.now();
  await admin.query('CREATE INDEX ON firkin_bench_items USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 200)');
  const buildS = (performance.now() - buildStart) / 1000;
  await admin.query('VACUUM ANALYZE firkin_bench_items');
  const plan = (await admin.query(`EXPLAIN SELECT id FROM firkin_bench_items ORDER BY embedding <-> '${queryLiterals[0]}'::vector LIMIT ${K}`)).rows.map((r) => String(r['QUERY PLAN'])).join('\n');
  if (!/Index Scan using \S+ on firkin_bench_items/.test(plan)) throw new Error(`pgvector would not use its HNSW index:\n${plan}`);
  results.push({ bench: `pgvector ${String(version)} load + index n=${N}`, 'docs/s': N / (loadS + buildS), load_s: loadS, index_s: buildS });

  // Firkin: the same vectors, CBOR batches of 1000 over HTTP (inserted and indexed).
  await call(node.url, 'PUT', '/vectordb/collections/bench', { dimensions: DIMS, metric: 'l2' });
  const insertStart = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const documents = data.slice(i, i + BATCH).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
    await call(node.url, 'POST', '/vectordb/collections/bench/docs', { documents }, true);
  }
  results.push({ bench: `firkin insert n=${N} batch=${BATCH}`, 'docs/s': N / ((performance.now() - insertStart) / 1000) });

  // Each concurrent worker takes a connection of its own for its query (one in flight each).
  const idle = [...clients];
  const pgSearch = async (q: number, found: number[][]) => {
    const c = idle.pop()!;
    try {
      const { rows } = await c.query({ name: 'knn', text: `SELECT id FROM firkin_bench_items ORDER BY embedding <-> $1::vector LIMIT ${K}`, values: [queryLiterals[q]] });
      found[q] ??= rows.map((r) => r.id as number);
    } finally {
      idle.push(c);
    }
  };
  const setEf = (ef: number) => Promise.all(clients.map((c) => c.query(`SET hnsw.ef_search = ${ef}`)));
  const firkinSearch = async (q: number, ef: number, payload: boolean, found: number[][]) => {
    const body = payload ? { vector: Array.from(queries[q]!), k: K, ef } : { vector: Array.from(queries[q]!), k: K, ef, with_payload: false };
    const res = await call(node.url, 'POST', '/vectordb/collections/bench/search', body);
    found[q] ??= res.results.map((h: { id: string }) => Number(h.id));
  };

  // Warm both (the first passes after a load run slower), then sweep each system's beam.
  await setEf(40);
  await drive(warmUp, 8, (q) => pgSearch(q, []));
  await drive(warmUp, 8, (q) => firkinSearch(q, 64, true, []));
  const chosen = { pgvector: new Map<number, number>(), firkin: new Map<number, number>() };
  for (const ef of EF_SWEEP) {
    await setEf(ef);
    const pgFound: number[][] = [];
    const p = await drive(indices, 1, (q) => pgSearch(q, pgFound));
    const fFound: number[][] = [];
    const f = await drive(indices, 1, (q) => firkinSearch(q, ef, false, fFound));
    const [pr, fr] = [recallOf(pgFound, truth), recallOf(fFound, truth)];
    if (selected('sweep')) results.push({ bench: `sweep ef=${ef}`, pg_qps: p.qps, pg_recall: pr, firkin_qps: f.qps, firkin_recall: fr });
    for (const target of RECALL_TARGETS) {
      if (pr >= target && !chosen.pgvector.has(target)) chosen.pgvector.set(target, ef);
      if (fr >= target && !chosen.firkin.has(target)) chosen.firkin.set(target, ef);
    }
  }

  for (const target of RECALL_TARGETS) {
    const pgEf = chosen.pgvector.get(target);
    const fEf = chosen.firkin.get(target);
    if (pgEf === undefined || fEf === undefined) {
      results.push({ bench: `recall >= ${target}: not reached within the sweep`, pgvector_ef: pgEf ?? 'none', firkin_ef: fEf ?? 'none' });
      continue;
    }
    for (const c of [1, 8]) {
      if (!selected(`c=${c}`)) continue;
      await setEf(pgEf);
      // ROUNDS rounds of one pass each, the systems' order swapped every round; medians.
      const runs = { pg: [] as Run[], firkin: [] as Run[], bare: [] as Run[] };
      const found = { pg: [] as number[][], firkin: [] as number[][], bare: [] as number[][] };
      const cases: [keyof typeof runs, () => Promise<Run>][] = [
        ['pg', () => drive(indices, c, (q) => pgSearch(q, found.pg))],
        ['firkin', () => drive(indices, c, (q) => firkinSearch(q, fEf, true, found.firkin))],
        ['bare', () => drive(indices, c, (q) => firkinSearch(q, fEf, false, found.bare))],
      ];
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, run] of round % 2 === 0 ? cases : [...cases].reverse()) runs[name].push(await run());
      }
      const row = (name: keyof typeof runs, bench: string): BenchResult => ({
        bench,
        qps: median(runs[name].map((r) => r.qps)),
        p50_ms: median(runs[name].map((r) => r.p50)),
        p99_ms: median(runs[name].map((r) => r.p99)),
        recall: recallOf(found[name], truth),
      });
      const ratio = (name: 'firkin' | 'bare') => median(runs[name].map((r, i) => r.qps / runs.pg[i]!.qps));
      results.push(row('pg', `pgvector recall>=${target} ef=${pgEf} c=${c}`));
      results.push({ ...row('firkin', `firkin recall>=${target} ef=${fEf} c=${c}`), vs_pgvector: ratio('firkin') });
      results.push({ ...row('bare', `firkin with_payload=false recall>=${target} ef=${fEf} c=${c}`), vs_pgvector: ratio('bare') });
    }
  }
  await admin.query('DROP TABLE IF EXISTS firkin_bench_items');
} finally {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  agent.destroy();
  await node.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
report(results);
