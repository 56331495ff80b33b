// Before/after between two checkouts, interleaved: this machine's speed drifts by tens of
// percent within minutes (the same code, runs a minute apart), so one node per checkout runs
// over the same data, and short slices of one workload alternate between them (ABBA order)
// until each has done AB_ROUNDS slices. Reported per node: throughput over its slices, and CPU
// per unit (search, document) of its main thread (the event loop: steadier than throughput,
// and free of RocksDB's background threads) and of the whole process.
// Workloads:
//   vector-search  HTTP searches, ef AB_EF (48), AB_CLIENTS (8) clients, slices of 1,000, on
//                  bench/vector.ts's data (100k × 128, Gaussian mixture, seed 42), filled once
//                  into AB_FILL (default /tmp/firkin-ab-vector-fill) by the first checkout's
//                  node and copied for each; AB_PAYLOAD=false for `with_payload: false`;
//                  AB_BATCH=N sends them N at a time in `search/batch` requests
//   bm25-search    BM25 searches, AB_CLIENTS (8) clients, slices of 1,000 queries, on
//                  bench/text.ts's corpus (100k documents) in a collection with the AB_BM25
//                  backend (disk), filled once like vector-search's data
//   bm25-insert    bench/text.ts's corpus inserted in CBOR batches of 1,000 (one request at a
//                  time, as its insert rows) into a collection with the AB_BM25 backend (memory)
//                  and no HNSW graph (`index.m: 0`; AB_INDEX_M for another m), slices of 10,000
//                  new documents, so each node's collection grows alike
//   bm25-update    rewrites of documents of a collection of 20,000 of bench/text.ts's corpus
//                  (AB_BM25 backend, disk; index m 0), each given another document's text, in
//                  requests of AB_BATCH (1) documents from AB_CLIENTS (4) clients, slices of 2,000
//   bulk-docs      `_bulk_docs` of bench/docs.ts's documents, batches of 500, AB_CLIENTS (1)
//                  clients, slices of 10,000 new documents into one database per node (ids in
//                  order; AB_IDS=random: hashes, in no order)
//   put-docs       single-document PUTs of new documents, AB_CLIENTS (16) clients, slices of
//                  2,000, into one database per node
//   get-docs       GETs by id of 1,000 of bench/docs.ts's documents, AB_CLIENTS (16) clients,
//                  slices of 5,000 (the documents written and read once first: cached)
//   replicate-local one-shot `_replicate` of a database of 10,000 of bench/docs.ts's documents
//                  into a new database on the same node, one slice each
// Usage: npx tsx bench/ab.ts <workload> <before-checkout> <after-checkout>   (AB_ROUNDS, default 8;
// AB_FILL_EACH=1: each node fills its own data instead of copies of the first checkout's;
// AB_ORDERS=1: one experiment instead of one in each start order; AB_THREADS=1: CPU by thread too)
// A checkout is a directory with this repository and its node_modules (a `git worktree` of
// another commit with a symlink to this one's node_modules will do). Each runs compiled, as the
// product ships (built-node.ts's `compiledMainArgs`: its test build, made first if stale).
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { NODE_FLAGS } from '../src/core/node-flags.js';
import { compiledMainArgs } from '../test/support/built-node.js';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { waitFor } from '../test/support/wait.js';
import { clusteredVectors } from '../test/vector/clustered.js';
import { agent, call, drive } from './http-client.js';
import { type BenchResult, benchDoc, report } from './support.js';
import { SEED, textCorpus, textQueries } from './text-corpus.js';

const ROUNDS = Number(process.env.AB_ROUNDS ?? 8);
/** AB_THREADS=1: also each node's CPU by thread name (RocksDB's, the write thread, libuv's pool). */
const BY_THREAD = process.env.AB_THREADS === '1';
const [workloadName, ...checkouts] = process.argv.slice(2);
const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

/** CPU time in µs of a process (`/proc/<pid>/stat`) or of one of its threads (`task/<tid>`). */
function cpuMicros(statFile: string): number {
  const fields = readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime, in 10 ms ticks
}

/**
 * CPU µs of a process's threads by name and thread id (`task/<tid>/comm`: Node names its main
 * thread, libuv's pool and worker threads all `node`), the main thread as `main`.
 */
function threadMicros(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = tid === String(pid) ? 'main' : `${readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()}:${tid}`;
      const micros = cpuMicros(`/proc/${pid}/task/${tid}/stat`);
      byName.set(name, (byName.get(name) ?? 0) + micros);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

interface Workload {
  readonly label: string;
  /** Fills the data every node starts from (then copied for each); none: empty nodes. */
  fill?(url: string): Promise<void>;
  /** Unmeasured: the first thousands of requests run slower (caches filling, code warming up). */
  warm(url: string): Promise<void>;
  /** One measured slice against a node (`slice` counts that node's slices); the units done. */
  slice(url: string, slice: number): Promise<number>;
}

/** Searches of a filled collection: slices of the query set, after three passes unmeasured. */
function searchWorkload<Q>(label: string, queries: readonly Q[], clients: number, fill: (url: string) => Promise<void>, search: (url: string, q: Q) => Promise<unknown>, searchesPerQuery = 1): Workload {
  const run = (url: string, qs: readonly Q[]) => drive(qs, clients, async (q) => void (await search(url, q)));
  return {
    label,
    fill,
    warm: (url) => run(url, [...queries, ...queries, ...queries]).then(() => undefined),
    async slice(url) {
      await run(url, queries);
      return queries.length * searchesPerQuery;
    },
  };
}

function vectorSearch(): Workload {
  const n = 100_000;
  const dims = 128;
  const clients = Number(process.env.AB_CLIENTS ?? 8);
  const ef = Number(process.env.AB_EF ?? 48);
  const payload = process.env.AB_PAYLOAD !== 'false';
  // AB_BATCH > 1: the queries go AB_BATCH at a time in `search/batch` requests.
  const batch = Number(process.env.AB_BATCH ?? 1);
  const all = clusteredVectors({ seed: 42, count: n + 1_000, dims, clusters: 100, noise: 0.25 });
  const body = (v: number[]) => (payload ? { vector: v, k: 10, ef } : { vector: v, k: 10, ef, with_payload: false });
  const vectors = all.slice(n).map((q) => Array.from(q));
  const queries = Array.from({ length: Math.floor(vectors.length / batch) }, (_, i) => vectors.slice(i * batch, (i + 1) * batch));
  return searchWorkload(
    `vector search${batch > 1 ? `/batch of ${batch}` : ''} c=${clients} ef=${ef}${payload ? '' : ' with_payload=false'} (per search)`,
    queries,
    clients,
    async (url) => {
      await call(url, 'PUT', '/vectordb/collections/bench', { dimensions: dims, metric: 'l2' });
      for (let i = 0; i < n; i += 1_000) {
        const documents = all.slice(i, i + 1_000).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
        await call(url, 'POST', '/vectordb/collections/bench/docs', { documents }, true);
      }
    },
    (url, vs) =>
      batch > 1 ? call(url, 'POST', '/vectordb/collections/bench/search/batch', { searches: vs.map(body) }) : call(url, 'POST', '/vectordb/collections/bench/search', body(vs[0]!)),
    batch,
  );
}

/** Texts [from, to) of `texts` into collection `text`, in CBOR batches of 1,000 (ids: their positions). */
async function insertTexts(url: string, texts: readonly string[], from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 1_000) {
    const documents = texts.slice(i, Math.min(i + 1_000, to)).map((text, j) => ({ id: String(i + j), text }));
    await call(url, 'POST', '/vectordb/collections/text/docs', { documents }, true);
  }
}

function bm25Search(): Workload {
  const clients = Number(process.env.AB_CLIENTS ?? 8);
  const backend = process.env.AB_BM25 ?? 'disk';
  return searchWorkload(
    `BM25 ${backend} c=${clients} (per search)`,
    textQueries(1_000, SEED + 1),
    clients,
    async (url) => {
      const texts = textCorpus(100_000, SEED);
      await call(url, 'PUT', '/vectordb/collections/text', { dimensions: 16, metric: 'cosine', embedder: { type: 'hash' }, bm25_backend: backend });
      await insertTexts(url, texts, 0, texts.length);
    },
    (url, query) => call(url, 'POST', '/vectordb/collections/text/search/bm25', { query, k: 10 }),
  );
}

function bm25Insert(): Workload {
  const backend = process.env.AB_BM25 ?? 'memory';
  const m = Number(process.env.AB_INDEX_M ?? 0);
  const perSlice = 10_000;
  const texts = textCorpus(perSlice * (ROUNDS + 1), SEED);
  const load = (url: string, first: number) => insertTexts(url, texts, first, first + perSlice);
  return {
    label: `BM25 ${backend} insert, index m ${m} (per document)`,
    async warm(url) {
      await call(url, 'PUT', '/vectordb/collections/text', { dimensions: 16, metric: 'cosine', embedder: { type: 'hash' }, bm25_backend: backend, index: { m } });
      await load(url, 0);
    },
    async slice(url, slice) {
      await load(url, (slice + 1) * perSlice);
      return perSlice;
    },
  };
}

function bm25Update(): Workload {
  const backend = process.env.AB_BM25 ?? 'disk';
  const batch = Number(process.env.AB_BATCH ?? 1);
  const clients = Number(process.env.AB_CLIENTS ?? 4);
  const docs = 20_000;
  const perSlice = 2_000;
  const texts = textCorpus(docs * 2, SEED);
  // Deterministic and alike for every node: slice s rewrites documents (s * 7919 + k * 104729) mod docs.
  const rewrite = async (url: string, slice: number) => {
    const starts = Array.from({ length: Math.ceil(perSlice / batch) }, (_, b) => b * batch);
    await drive(starts, clients, async (from) => {
      const documents = Array.from({ length: Math.min(batch, perSlice - from) }, (_, k) => {
        const n = (slice * 7_919 + (from + k) * 104_729) % docs;
        return { id: String(n), text: texts[docs + ((n + slice) % docs)]! };
      });
      await call(url, 'POST', '/vectordb/collections/text/docs', { documents }, true);
    });
  };
  return {
    label: `BM25 ${backend} rewrites x${batch} c=${clients} (per document)`,
    async warm(url) {
      await call(url, 'PUT', '/vectordb/collections/text', { dimensions: 16, metric: 'cosine', embedder: { type: 'hash' }, bm25_backend: backend, index: { m: 0 } });
      await insertTexts(url, texts, 0, docs);
      await rewrite(url, 1_000);
    },
    async slice(url, slice) {
      await rewrite(url, slice);
      return perSlice;
    },
  };
}

function bulkDocs(): Workload {
  const clients = Number(process.env.AB_CLIENTS ?? 1);
  const batch = 500;
  // AB_IDS=random: ids in no order (as UUIDs), every key of a batch somewhere else in its column.
  const docId = process.env.AB_IDS === 'random' ? (n: number) => createHash('sha1').update(String(n)).digest('hex').slice(0, 24) : (n: number) => `d${String(n).padStart(8, '0')}`;
  const perSlice = 10_000;
  const load = async (url: string, first: number, count: number) => {
    const starts = Array.from({ length: Math.ceil(count / batch) }, (_, b) => first + b * batch);
    await drive(starts, clients, async (from) => {
      const docs = Array.from({ length: batch }, (_, k) => ({ _id: docId(from + k), ...benchDoc(from + k) }));
      const results = (await call(url, 'POST', '/db/bench/_bulk_docs', { docs }, false, auth)) as { ok?: boolean }[];
      if (results.some((r) => r.ok !== true)) throw new Error('a bulk entry failed');
    });
  };
  return {
    label: `_bulk_docs x${batch} c=${clients} (per document)`,
    async warm(url) {
      await call(url, 'PUT', '/db/bench', undefined, false, auth);
      await load(url, 0, perSlice);
    },
    async slice(url, slice) {
      await load(url, (slice + 1) * perSlice, perSlice);
      return perSlice;
    },
  };
}

function putDocs(): Workload {
  const clients = Number(process.env.AB_CLIENTS ?? 16);
  const perSlice = 2_000;
  const put = (url: string) => async (n: number) => void (await call(url, 'PUT', `/db/bench/p${n}`, benchDoc(n), false, auth));
  const numbers = (first: number) => Array.from({ length: perSlice }, (_, i) => first + i);
  return {
    label: `PUT c=${clients} (per document)`,
    async warm(url) {
      await call(url, 'PUT', '/db/bench', undefined, false, auth);
      await drive(numbers(0), clients, put(url));
    },
    async slice(url, slice) {
      await drive(numbers((slice + 1) * perSlice), clients, put(url));
      return perSlice;
    },
  };
}

function getDocs(): Workload {
  const clients = Number(process.env.AB_CLIENTS ?? 16);
  const perSlice = 5_000;
  const get = (url: string) => async (n: number) => void (await call(url, 'GET', `/db/bench/g${(n * 7919) % 1000}`, undefined, false, auth));
  const numbers = Array.from({ length: perSlice }, (_, i) => i);
  return {
    label: `GET c=${clients} (per document)`,
    async warm(url) {
      await call(url, 'PUT', '/db/bench', undefined, false, auth);
      await call(url, 'POST', '/db/bench/_bulk_docs', { docs: Array.from({ length: 1000 }, (_, i) => ({ _id: `g${i}`, ...benchDoc(i) })) }, false, auth);
      await drive(numbers, clients, get(url));
    },
    async slice(url) {
      await drive(numbers, clients, get(url));
      return perSlice;
    },
  };
}

/** One-shot local replication of the same 10,000 documents into a new database per slice. */
function replicateLocal(): Workload {
  const docs = 10_000;
  return {
    label: `local -> local replication of ${docs} (per document)`,
    async warm(url) {
      await call(url, 'PUT', '/db/src', undefined, false, auth);
      for (let from = 0; from < docs; from += 500) {
        const batch = Array.from({ length: 500 }, (_, k) => ({ _id: `d${String(from + k).padStart(8, '0')}`, ...benchDoc(from + k) }));
        await call(url, 'POST', '/db/src/_bulk_docs', { docs: batch }, false, auth);
      }
      await call(url, 'POST', '/db/src/_replicate', { target: 'warm', create_target: true }, false, auth);
    },
    async slice(url, slice) {
      const done = (await call(url, 'POST', '/db/src/_replicate', { target: `copy${slice}`, create_target: true }, false, auth)) as { docs_written?: number };
      if (done.docs_written !== docs) throw new Error(`replication wrote ${done.docs_written} of ${docs}`);
      return docs;
    },
  };
}

const workloads: Record<string, () => Workload> = { 'vector-search': vectorSearch, 'bm25-search': bm25Search, 'bm25-insert': bm25Insert, 'bm25-update': bm25Update, 'bulk-docs': bulkDocs, 'put-docs': putDocs, 'get-docs': getDocs, 'replicate-local': replicateLocal };
if (workloadName === undefined || workloads[workloadName] === undefined || checkouts.length !== 2) {
  throw new Error(`usage: npx tsx bench/ab.ts <${Object.keys(workloads).join('|')}> <before-checkout> <after-checkout>`);
}
const workload = workloads[workloadName]!();

interface Node {
  checkout: string;
  proc: ChildProcess;
  url: string;
  dataDir: string;
  ms: number;
  mainMicros: number;
  processMicros: number;
  units: number;
  slices: number;
  /** CPU µs by thread name over the measured slices (AB_THREADS=1). */
  threads: Map<string, number>;
}

async function start(checkout: string, dataDir: string): Promise<Node> {
  const env = { ...process.env, SERVICE_DATA_DIR: dataDir, SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' };
  const proc = spawn(process.execPath, [...NODE_FLAGS, ...compiledMainArgs(checkout)], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4096)));
  const url = await waitFor(() => /listening on (https?:\/\/[^\s]+) /.exec(out)?.[1], { timeoutMs: 60_000, what: `the node of ${checkout} to listen` });
  return { checkout, proc, url, dataDir, ms: 0, mainMicros: 0, processMicros: 0, units: 0, slices: 0, threads: new Map() };
}

async function stop(node: Node): Promise<void> {
  const exited = new Promise((resolve) => node.proc.once('exit', resolve));
  node.proc.kill('SIGTERM');
  await exited;
}

// AB_FILL_EACH=1: each checkout's node fills its own data (a change to how the data is stored
// or indexed would otherwise be measured on the first checkout's).
const fillEach = process.env.AB_FILL_EACH === '1';
const fillDir = process.env.AB_FILL ?? `/tmp/firkin-ab-${workloadName}${workloadName === 'bm25-search' ? `-${process.env.AB_BM25 ?? 'disk'}` : ''}-fill`;
if (workload.fill !== undefined && !fillEach && !existsSync(fillDir)) {
  const filler = await start(checkouts[0]!, fillDir);
  await workload.fill(filler.url);
  await stop(filler);
}

/**
 * One experiment: a node per checkout, started in `order`, warmed, then ABBA slices. The node
 * started first ran ~4 % faster in an A/A run (the same commit on both sides, bulk-docs: see
 * docs/benchmarks.md), so by default the experiment runs twice, once in each start order, and
 * the two are summed (AB_ORDERS=1: once, in the order named).
 */
async function experiment(order: readonly string[]): Promise<Node[]> {
  const nodes: Node[] = [];
  try {
    for (const checkout of order) {
      const dataDir = tempDir('firkin-bench-ab-');
      if (workload.fill !== undefined && !fillEach) cpSync(fillDir, dataDir, { recursive: true });
      const node = await start(checkout, dataDir);
      nodes.push(node);
      if (workload.fill !== undefined && fillEach) await workload.fill(node.url);
    }
    for (const node of nodes) await workload.warm(node.url);
    for (let round = 0; round < ROUNDS; round++) {
      for (const node of round % 2 === 0 ? nodes : [...nodes].reverse()) {
        const pid = node.proc.pid!;
        const main0 = cpuMicros(`/proc/${pid}/task/${pid}/stat`);
        const process0 = cpuMicros(`/proc/${pid}/stat`);
        const threads0 = BY_THREAD ? threadMicros(pid) : undefined;
        const t0 = performance.now();
        node.units += await workload.slice(node.url, node.slices++);
        node.ms += performance.now() - t0;
        node.mainMicros += cpuMicros(`/proc/${pid}/task/${pid}/stat`) - main0;
        node.processMicros += cpuMicros(`/proc/${pid}/stat`) - process0;
        if (threads0 !== undefined) for (const [name, micros] of threadMicros(pid)) node.threads.set(name, (node.threads.get(name) ?? 0) + micros - (threads0.get(name) ?? 0));
      }
    }
    return nodes;
  } finally {
    for (const node of nodes) {
      await stop(node);
      rmSync(node.dataDir, { recursive: true, force: true });
    }
  }
}

const bothOrders = process.env.AB_ORDERS !== '1';
const result = (label: string, ns: readonly Node[]): BenchResult => {
  const units = ns.reduce((a, n) => a + n.units, 0);
  const ms = ns.reduce((a, n) => a + n.ms, 0);
  return {
    bench: `${label}: ${workload.label}`,
    per_s: (units / ms) * 1000,
    main_us: ns.reduce((a, n) => a + n.mainMicros, 0) / units,
    process_us: ns.reduce((a, n) => a + n.processMicros, 0) / units,
  };
};
try {
  const runs = [await experiment(checkouts)];
  if (bothOrders) runs.push(await experiment([...checkouts].reverse()));
  const results: BenchResult[] = [];
  // CPU µs a unit by thread (AB_THREADS=1), a line per checkout.
  const threadLines: string[] = [];
  checkouts.forEach((checkout, i) => {
    const side = `${i === 0 ? 'before' : 'after'} ${checkout}`;
    const mine = runs.map((nodes) => nodes.find((n) => n.checkout === checkout)!);
    if (bothOrders) mine.forEach((n, k) => results.push(result(`${side} (started ${(k === 0) === (i === 0) ? 'first' : 'second'})`, [n])));
    results.push(result(bothOrders ? `${side} (both orders)` : side, mine));
    const units = mine.reduce((a, n) => a + n.units, 0);
    // `main` over both orders' units; any other thread (by id, so one order's node only) over
    // its own node's units, so it reads as a unit's cost in that run as `main` does.
    const perUnit: [string, number][] = [['main', mine.reduce((a, n) => a + (n.threads.get('main') ?? 0), 0) / units]];
    for (const n of mine) for (const [name, micros] of n.threads) if (name !== 'main') perUnit.push([name, micros / n.units]);
    const busiest = perUnit.filter(([, cost]) => cost > 0).sort((a, b) => b[1] - a[1]).slice(0, 10);
    threadLines.push(`${side}: ${busiest.map(([name, cost]) => `${name} ${cost.toFixed(1)}`).join(', ')}`);
  });
  report(results);
  if (BY_THREAD) console.log(`\nCPU µs a unit by thread (name:tid: each over its own run; main over both orders), the busiest ten:\n${threadLines.join('\n')}`);
} finally {
  agent.destroy();
}
