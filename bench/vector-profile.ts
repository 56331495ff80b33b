// Where an HTTP vector search spends its time: CPU profiles of the node *and* of this load
// generator during one-client searches, summarised by place and function
// (bench/profile-summary.ts). The data is bench/vector.ts's (Gaussian mixture, seed 42, L2).
// The node is filled by one process, stopped (it saves its index), and started again under
// bench/profiled-node.ts, whose profiler is on only while the measured searches run.
// Usage: npx tsx bench/vector-profile.ts   (VECTOR_PROFILE_N docs, default 100000;
//        VECTOR_PROFILE_SEARCHES, default 10000; VECTOR_PROFILE_EF, default 48;
//        VECTOR_PROFILE_BODY='{"include":[]}' merges extra fields into each search body;
//        VECTOR_PROFILE_CLIENTS, default 1)
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { spawnScript } from '../test/support/process.js';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { clusteredVectors } from '../test/vector/clustered.js';
import { call, drive } from './http-client.js';
import { profileWindow, summarise, table } from './profile-summary.js';
import { spawnBenchNode } from './support.js';

const N = Number(process.env.VECTOR_PROFILE_N ?? 100_000);
const SEARCHES = Number(process.env.VECTOR_PROFILE_SEARCHES ?? 10_000);
const EF = Number(process.env.VECTOR_PROFILE_EF ?? 48);
const CLIENTS = Number(process.env.VECTOR_PROFILE_CLIENTS ?? 1);
const EXTRA = JSON.parse(process.env.VECTOR_PROFILE_BODY ?? '{}') as Record<string, unknown>;
const DIMS = 128;

const dataDir = tempDir('firkin-bench-vprof-');
const profDir = tempDir('firkin-bench-vprof-cpu-');
mkdirSync(profDir, { recursive: true });
const env = { SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000', SERVICE_LOG_LEVEL: 'warn' };
try {
  const all = clusteredVectors({ seed: 42, count: N + 1_000, dims: DIMS, clusters: 100, noise: 0.25 });
  const queries = all.slice(N).map((q) => ({ vector: Array.from(q), k: 10, ef: EF, ...EXTRA }));

  const filler = await spawnBenchNode({ ...env, SERVICE_LOG_LEVEL: 'info' });
  await call(filler.url, 'PUT', '/vectordb/collections/bench', { dimensions: DIMS, metric: 'l2' });
  for (let i = 0; i < N; i += 1_000) {
    const documents = all.slice(i, Math.min(N, i + 1_000)).map((v, j) => ({ id: String(i + j), vector: Array.from(v) }));
    await call(filler.url, 'POST', '/vectordb/collections/bench/docs', { documents }, true);
  }
  await filler.stop();

  const serverProfile = path.join(profDir, 'server.cpuprofile');
  const node = await spawnScript({
    script: 'bench/profiled-node.ts',
    env: { ...env, SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', FIRKIN_PROFILE_OUT: serverProfile },
    ready: /listening on (https?:\/\/[^\s]+) /,
    what: 'profiled node',
  });
  const many = Array.from({ length: SEARCHES }, (_, i) => queries[i % queries.length]!);
  await drive(many.slice(0, 1_000), 1, async (q) => void (await call(node.url, 'POST', '/vectordb/collections/bench/search', q)));

  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  const { r, profile } = await profileWindow(node, async () => {
    const r = await drive(many, CLIENTS, async (q) => void (await call(node.url, 'POST', '/vectordb/collections/bench/search', q)));
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    return { r, profile };
  });
  await node.stop();
  console.log(`${SEARCHES} searches, ${CLIENTS} client(s), ef ${EF}, n ${N}: ${r.qps.toFixed(0)} QPS, p50 ${r.p50.toFixed(3)} ms, p99 ${r.p99.toFixed(3)} ms`);

  const client = summarise(profile as never);
  const server = summarise(JSON.parse(readFileSync(serverProfile, 'utf8')));
  if (process.env.VECTOR_PROFILE_KEEP !== undefined) copyFileSync(serverProfile, process.env.VECTOR_PROFILE_KEEP);
  table(`server by place (${server.totalMs.toFixed(0)} ms sampled)`, server.byPlace, server.totalMs, 18, SEARCHES);
  table('server by function (self time)', server.byFunction, server.totalMs, 30, SEARCHES);
  table(`client by place (${client.totalMs.toFixed(0)} ms sampled)`, client.byPlace, client.totalMs, 18, SEARCHES);
  table('client by function (self time)', client.byFunction, client.totalMs, 12, SEARCHES);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(profDir, { recursive: true, force: true });
}
