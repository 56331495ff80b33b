// Before/after of the HTTP vector search between two checkouts, interleaved: this machine's
// speed drifts by tens of percent within minutes (the same code, runs a minute apart), so one
// node per checkout runs over a copy of the same data, and short slices of searches alternate
// between them (ABBA order) until each has served ROUNDS slices. Reported per node: QPS over
// its slices, and CPU per search of its main thread (the event loop: steadier than QPS, and
// free of RocksDB's background threads) and of the whole process (usearch's batch threads).
// The data is bench/vector.ts's (100k × 128, Gaussian mixture, seed 42), filled once into
// VECTOR_AB_FILL (default /tmp/firkin-vector-ab-fill) by the first checkout's node.
// Usage: npx tsx bench/vector-ab.ts <before-checkout> <after-checkout>
//        (VECTOR_AB_CLIENTS default 8, VECTOR_AB_ROUNDS 8, VECTOR_AB_SLICE 1000 searches,
//        VECTOR_AB_EF 48, VECTOR_AB_PAYLOAD=false for `with_payload: false`)
// A checkout is a directory with this repository and its node_modules (a `git worktree` of
// another commit with a symlink to this one's node_modules will do).
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { waitFor } from '../test/support/wait.js';
import { clusteredVectors } from '../test/vector/clustered.js';
import { agent, call, drive } from './http-client.js';
import { type BenchResult, report } from './support.js';

const N = 100_000;
const DIMS = 128;
const CLIENTS = Number(process.env.VECTOR_AB_CLIENTS ?? 8);
const ROUNDS = Number(process.env.VECTOR_AB_ROUNDS ?? 8);
const SLICE = Number(process.env.VECTOR_AB_SLICE ?? 1_000);
const EF = Number(process.env.VECTOR_AB_EF ?? 48);
const PAYLOAD = process.env.VECTOR_AB_PAYLOAD !== 'false';
const FILL = process.env.VECTOR_AB_FILL ?? '/tmp/firkin-vector-ab-fill';
const checkouts = process.argv.slice(2);
if (checkouts.length !== 2) throw new Error('usage: npx tsx bench/vector-ab.ts <before-checkout> <after-checkout>');

/** CPU time in µs of a process (`/proc/<pid>/stat`) or of one of its threads (`task/<tid>`). */
function cpuMicros(statFile: string): number {
  const fields = readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime, in 10 ms ticks
}

interface Node {
  checkout: string;
  proc: ChildProcess;
  url: string;
  dataDir: string;
  ms: number;
  mainMicros: number;
  processMicros: number;
  searches: number;
}

async function start(checkout: string, dataDir: string): Promise<Node> {
  const env = { ...process.env, SERVICE_DATA_DIR: dataDir, SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' };
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4096)));
  const url = await waitFor(() => /listening on (https?:\/\/[^\s]+) /.exec(out)?.[1], { timeoutMs: 60_000, what: `the node of ${checkout} to listen` });
  return { checkout, proc, url, dataDir, ms: 0, mainMicros: 0, processMicros: 0, searches: 0 };
}

async function stop(node: Node): Promise<void> {
  const exited = new Promise((resolve) => node.proc.once('exit', resolve));
  node.proc.kill('SIGTERM');
  await exited;
}

const all = clusteredVectors({ seed: 42, count: N + 1_000, dims: DIMS, clusters: 100, noise: 0.25 });
const queries = all.slice(N).map((q) => Array.from(q));
if (!existsSync(FILL)) {
  const filler = await start(checkouts[0]!, FILL);
  await call(filler.url, 'PUT', '/vectordb/collections/bench', { dimensions: DIMS, metric: 'l2' });
  for (let i = 0; i < N; i += 1_000) {
    const documents = all.slice(i, i + 1_000).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
    await call(filler.url, 'POST', '/vectordb/collections/bench/docs', { documents }, true);
  }
  await stop(filler);
}

const nodes: Node[] = [];
try {
  for (const checkout of checkouts) {
    const dataDir = tempDir('firkin-bench-vector-ab-');
    cpSync(FILL, dataDir, { recursive: true });
    nodes.push(await start(checkout, dataDir));
  }
  const body = (v: number[]) => (PAYLOAD ? { vector: v, k: 10, ef: EF } : { vector: v, k: 10, ef: EF, with_payload: false });
  const search = (node: Node) => async (v: number[]) => void (await call(node.url, 'POST', '/vectordb/collections/bench/search', body(v)));
  // Unmeasured: the first thousands of searches run slower (caches filling, code warming up).
  for (const node of nodes) await drive([...queries, ...queries, ...queries], CLIENTS, search(node));
  let next = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const node of round % 2 === 0 ? nodes : [...nodes].reverse()) {
      const slice = Array.from({ length: SLICE }, () => queries[next++ % queries.length]!);
      const pid = node.proc.pid!;
      const main0 = cpuMicros(`/proc/${pid}/task/${pid}/stat`);
      const process0 = cpuMicros(`/proc/${pid}/stat`);
      const t0 = performance.now();
      await drive(slice, CLIENTS, search(node));
      node.ms += performance.now() - t0;
      node.mainMicros += cpuMicros(`/proc/${pid}/task/${pid}/stat`) - main0;
      node.processMicros += cpuMicros(`/proc/${pid}/stat`) - process0;
      node.searches += SLICE;
    }
  }
  const results: BenchResult[] = nodes.map((n, i) => ({
    bench: `${i === 0 ? 'before' : 'after'} ${n.checkout} c=${CLIENTS} ef=${EF}${PAYLOAD ? '' : ' with_payload=false'}`,
    qps: (n.searches / n.ms) * 1000,
    main_us_per_search: n.mainMicros / n.searches,
    process_us_per_search: n.processMicros / n.searches,
  }));
  report(results);
} finally {
  agent.destroy();
  for (const node of nodes) {
    await stop(node);
    rmSync(node.dataDir, { recursive: true, force: true });
  }
}
