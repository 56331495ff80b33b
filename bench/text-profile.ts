// Where an HTTP BM25 search spends its time: a CPU profile of the node during one-client BM25
// searches on bench/text.ts's corpus, summarised by place and function (bench/profile-summary.ts).
// The node is filled by one process, stopped, and started again under bench/profiled-node.ts,
// whose profiler is on only while the measured searches run.
// Usage: npx tsx bench/text-profile.ts   (TEXT_PROFILE_N docs, default 100000;
//        TEXT_PROFILE_SEARCHES, default 5000; TEXT_PROFILE_BACKEND memory | disk, default memory;
//        TEXT_PROFILE_WHAT=insert profiles the inserts instead: TEXT_PROFILE_N documents in
//        CBOR batches of 1000 into the profiled node, per document instead of per request;
//        TEXT_PROFILE_INDEX_M=0 makes the collection's vector index flat (no HNSW graph);
//        KEEP_PROF=1 keeps the server's .cpuprofile and prints its path)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnScript } from '../test/support/process.js';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { call, drive } from './http-client.js';
import { profileWindow, summarise, table } from './profile-summary.js';
import { SEED, textCorpus, textQueries } from './text-corpus.js';
import { spawnBenchNode } from './support.js';

const N = Number(process.env.TEXT_PROFILE_N ?? 100_000);
const SEARCHES = Number(process.env.TEXT_PROFILE_SEARCHES ?? 5_000);
const BACKEND = process.env.TEXT_PROFILE_BACKEND ?? 'memory';
const INSERTS = process.env.TEXT_PROFILE_WHAT === 'insert';
const INDEX_M = process.env.TEXT_PROFILE_INDEX_M === undefined ? undefined : Number(process.env.TEXT_PROFILE_INDEX_M);

const dataDir = tempDir('firkin-bench-tprof-');
// A kept profile must outlive this process: tempDir's directories are removed at exit.
const profDir = process.env.KEEP_PROF === undefined ? tempDir('firkin-bench-tprof-cpu-') : mkdtempSync(path.join(tmpdir(), 'firkin-bench-tprof-cpu-'));
const env = { SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000', SERVICE_LOG_LEVEL: 'warn' };
try {
  const texts = textCorpus(N, SEED);
  const queries = textQueries(1_000, SEED + 1);
  const fill = async (url: string) => {
    await call(url, 'PUT', '/vectordb/collections/text', { dimensions: 16, metric: 'cosine', embedder: { type: 'hash' }, bm25_backend: BACKEND, ...(INDEX_M === undefined ? {} : { index: { m: INDEX_M } }) });
    for (let i = 0; i < N; i += 1_000) {
      const documents = texts.slice(i, i + 1_000).map((text, j) => ({ id: String(i + j), text }));
      await call(url, 'POST', '/vectordb/collections/text/docs', { documents }, true);
    }
  };
  if (!INSERTS) {
    const filler = await spawnBenchNode({ ...env, SERVICE_LOG_LEVEL: 'info' });
    await fill(filler.url);
    await filler.stop();
  }

  const serverProfile = path.join(profDir, 'server.cpuprofile');
  const node = await spawnScript({
    script: 'bench/profiled-node.ts',
    env: { ...env, SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', FIRKIN_PROFILE_OUT: serverProfile },
    ready: /listening on (https?:\/\/[^\s]+) /,
    what: 'profiled node',
  });
  if (INSERTS) {
    const seconds = await profileWindow(node, async () => {
      const t0 = performance.now();
      await fill(node.url);
      return (performance.now() - t0) / 1000;
    });
    await node.stop();
    console.log(`${N} documents inserted (${BACKEND}) in batches of 1000: ${(N / seconds).toFixed(0)} docs/s`);
    const server = summarise(JSON.parse(readFileSync(serverProfile, 'utf8')));
    table(`server by place (${server.totalMs.toFixed(0)} ms sampled), per document`, server.byPlace, server.totalMs, 18, N);
    table('server by function (self time), per document', server.byFunction, server.totalMs, 30, N);
  } else {
    const ask = async (query: string) => void (await call(node.url, 'POST', '/vectordb/collections/text/search/bm25', { query, k: 10 }));
    await drive(queries, 1, ask);
    const many = Array.from({ length: SEARCHES }, (_, i) => queries[i % queries.length]!);
    const r = await profileWindow(node, () => drive(many, 1, ask));
    await node.stop();
    console.log(`${SEARCHES} BM25 searches (${BACKEND}), 1 client, n ${N}: ${r.qps.toFixed(0)} QPS, p50 ${r.p50.toFixed(3)} ms, p99 ${r.p99.toFixed(3)} ms`);
    const server = summarise(JSON.parse(readFileSync(serverProfile, 'utf8')));
    table(`server by place (${server.totalMs.toFixed(0)} ms sampled)`, server.byPlace, server.totalMs, 18, SEARCHES);
    table('server by function (self time)', server.byFunction, server.totalMs, 30, SEARCHES);
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  if (process.env.KEEP_PROF === undefined) rmSync(profDir, { recursive: true, force: true });
  else console.log(`profile kept in ${profDir}`);
}
