// Replication throughput, one-shot: local -> local on one node, and node -> node between two
// node processes over HTTP (bearer auth), then a no-op rerun that starts from the checkpoint;
// and PouchDB 9 (memory adapter, in this process, its own replicator) -> Firkin and back.
// Usage: npx tsx bench/replication.ts [filter]   (REPL_DOCS=100000, REPL_BATCH=500 by default, the node's)
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { benchDoc, type BenchResult, report, selected, spawnBenchNode } from './support.js';

const docs = Number(process.env.REPL_DOCS ?? 100_000);
// The node's default (SERVICE_REPLICATION_BATCH_SIZE) unless REPL_BATCH says otherwise.
const batchSize = process.env.REPL_BATCH ?? '500';
const loadBatch = 1_000;
const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

async function call(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const headers = body === undefined ? auth : { ...auth, 'content-type': 'application/json' };
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(3_600_000) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

function doc(i: number) {
  return { _id: `doc${String(i).padStart(7, '0')}`, ...benchDoc(i) };
}

async function load(url: string, db: string): Promise<void> {
  await call(url, 'PUT', `/db/${db}`);
  let next = 0;
  const worker = async () => {
    for (let start = next; start < docs; start = next) {
      next += loadBatch;
      await call(url, 'POST', `/db/${db}/_bulk_docs`, { docs: Array.from({ length: Math.min(loadBatch, docs - start) }, (_, i) => doc(start + i)) });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

async function timed(name: string, run: () => Promise<{ docs_written: number }>): Promise<BenchResult> {
  const start = process.hrtime.bigint();
  const result = await run();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { bench: name, docs: docs, docs_written: result.docs_written, seconds, 'docs/s': result.docs_written / seconds, batch: Number(batchSize) };
}

/**
 * PouchDB's replicator with the same batch size, both ways: the memory adapter is loaded with
 * the same documents first (not timed), pushed to a new Firkin database, then a fresh PouchDB
 * pulls it back.
 */
async function pouchdb(url: string): Promise<BenchResult[]> {
  const require = createRequire(import.meta.url);
  // PouchDB ships no types; it is a bench and test peer only.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const PouchDB: any = require('pouchdb-core').plugin(require('pouchdb-adapter-memory')).plugin(require('pouchdb-adapter-http')).plugin(require('pouchdb-replication'));
  const remote = (db: string) =>
    new PouchDB(`${url}/db/${db}`, {
      fetch: (u: string, opts: { headers: Headers }) => {
        opts.headers.set('Authorization', auth.authorization);
        return PouchDB.fetch(u, opts);
      },
    });
  const local = new PouchDB(`bench-${Date.now()}`, { adapter: 'memory' });
  for (let start = 0; start < docs; start += loadBatch) {
    await local.bulkDocs(Array.from({ length: Math.min(loadBatch, docs - start) }, (_, i) => doc(start + i)));
  }
  const options = { batch_size: Number(batchSize), batches_limit: 10 };
  const results = [
    await timed('pouchdb->firkin one-shot', async () => ({ docs_written: (await PouchDB.replicate(local, remote('frompouch'), options)).docs_written as number })),
  ];
  const back = new PouchDB(`bench-back-${Date.now()}`, { adapter: 'memory' });
  results.push(await timed('firkin->pouchdb one-shot', async () => ({ docs_written: (await PouchDB.replicate(remote('src'), back, options)).docs_written as number })));
  return results;
}

const dirs = [tempDir(), tempDir()];
const env = { SERVICE_REPLICATION_BATCH_SIZE: batchSize };
const a = await spawnBenchNode({ ...env, SERVICE_DATA_DIR: dirs[0]! });
const b = await spawnBenchNode({ ...env, SERVICE_DATA_DIR: dirs[1]! });
const results: BenchResult[] = [];
try {
  const loadStart = Date.now();
  await load(a.url, 'src');
  console.error(`loaded ${docs} docs in ${((Date.now() - loadStart) / 1000).toFixed(1)} s`);
  if (selected('local->local')) {
    results.push(await timed('local->local one-shot', () => call(a.url, 'POST', '/db/src/_replicate', { target: 'copy', create_target: true })));
  }
  if (selected('pouchdb')) results.push(...(await pouchdb(a.url)));
  if (selected('node->node')) {
    const body = { target: `${b.url}/db/copy`, create_target: true, auth: { bearer_token: TEST_ADMIN_KEY } };
    results.push(await timed('node->node one-shot', () => call(a.url, 'POST', '/db/src/_replicate', body)));
    results.push(await timed('node->node rerun from checkpoint (no-op)', () => call(a.url, 'POST', '/db/src/_replicate', body)));
  }
} finally {
  await a.stop();
  await b.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
report(results);
