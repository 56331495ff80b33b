// Replication throughput, one-shot: local -> local on one node, and node -> node between two
// node processes over HTTP (bearer auth), then a no-op rerun that starts from the checkpoint.
// Usage: npx tsx bench/replication.ts [filter]   (REPL_DOCS=100000, REPL_BATCH=500 by default, the node's)
import { rmSync } from 'node:fs';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { spawnNode } from '../test/support/process.js';
import { type BenchResult, report, selected } from './support.js';

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
  return { _id: `doc${String(i).padStart(7, '0')}`, type: 'bench', n: i, name: `user ${i}`, tags: ['a', 'b', String(i % 10)], nested: { score: i % 1000, ok: i % 2 === 0 } };
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

const dirs = [tempDir(), tempDir()];
const env = { SERVICE_REPLICATION_BATCH_SIZE: batchSize };
const a = await spawnNode({ ...env, SERVICE_DATA_DIR: dirs[0]! });
const b = await spawnNode({ ...env, SERVICE_DATA_DIR: dirs[1]! });
const results: BenchResult[] = [];
try {
  const loadStart = Date.now();
  await load(a.url, 'src');
  console.error(`loaded ${docs} docs in ${((Date.now() - loadStart) / 1000).toFixed(1)} s`);
  if (selected('local->local')) {
    results.push(await timed('local->local one-shot', () => call(a.url, 'POST', '/db/src/_replicate', { target: 'copy', create_target: true })));
  }
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
