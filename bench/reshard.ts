// Online reshard on three real node processes (default settings): a replicated collection of
// RESHARD_DOCS documents (default 100,000, dimension 32) goes from 2 to 5 shards while one
// writer and one searcher run. Reports the documents migrated per second, the longest write
// pause (a write's latency) during the job, and search p50/p99 during the job against before it.
// RESHARD_WRITERS writers (default 1) write new ids, or with RESHARD_HOT=n update n hot
// documents over and over (the replay then carries long runs of one document's writes).
//   npx tsx bench/reshard.ts            (RESHARD_DOCS, RESHARD_TO, RESHARD_WRITERS, RESHARD_HOT)
import { TestCluster } from '../test/cluster/harness.js';
import { compiledMainArgs } from '../test/support/built-node.js';
import { waitFor } from '../test/support/wait.js';
import { percentile, report, type BenchResult } from './support.js';

// The cluster's nodes run compiled, as the product ships (built-node.ts: built now if stale).
compiledMainArgs();

const docs = Number(process.env.RESHARD_DOCS ?? 100_000);
const to = Number(process.env.RESHARD_TO ?? 5);
const writers = Number(process.env.RESHARD_WRITERS ?? 1);
const hot = Number(process.env.RESHARD_HOT ?? 0);
const dims = 32;
const DEFAULT_TIMINGS = { SERVICE_FD_SUSPECT_MS: '1500', SERVICE_FD_DOWN_MS: '4000', SERVICE_FD_MIN_DWELL_MS: '3000', SERVICE_CLUSTER_HEARTBEAT_MS: '250', SERVICE_CLUSTER_PROPOSAL_TIMEOUT_MS: '5000' };
let seed = 42;
const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const vector = () => Array.from({ length: dims }, rnd);

const c = await TestCluster.start(3, DEFAULT_TIMINGS);
const results: BenchResult[] = [];
try {
  await c.waitVoters(3);
  const node = (i: number) => c.running()[i % 3]!;
  const created = await c.request('n1', 'PUT', '/vectordb/collections/rb', { body: { dimensions: dims, num_shards: 2, replication_factor: 3 } });
  if (created.status !== 201) throw new Error(`create: ${created.status}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async (_, client) => {
      while (next < docs) {
        const from = next;
        next += 500;
        const documents = Array.from({ length: Math.min(500, docs - from) }, (_, j) => ({ id: `d${from + j}`, text: `doc ${from + j}`, metadata: { n: from + j }, vector: vector() }));
        const r = await c.request(node(client), 'POST', '/vectordb/collections/rb/docs', { body: { documents } });
        if (r.status !== 200) throw new Error(`load: ${r.status}`);
      }
    }),
  );
  const queries = Array.from({ length: 100 }, vector);
  const searchFor = async (ms: number, until?: () => boolean): Promise<number[]> => {
    const lat: number[] = [];
    const end = Date.now() + ms;
    for (let i = 0; until === undefined ? Date.now() < end : !until(); i++) {
      const t0 = performance.now();
      const r = await c.request(node(i), 'POST', '/vectordb/collections/rb/search', { body: { vector: queries[i % queries.length], k: 10 } });
      if (r.status === 200) lat.push(performance.now() - t0);
    }
    return lat.sort((a, b) => a - b);
  };
  const before = await searchFor(10_000);

  let running = true;
  let maxWriteMs = 0;
  let writes = 0;
  const writer = Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; running; i++) {
        const t0 = performance.now();
        const id = hot > 0 ? `hot${(i + w) % hot}` : `w${w}-${i}`;
        const r = await c.request(node(i + w), 'POST', '/vectordb/collections/rb/docs', { body: { id, text: 'w', metadata: { i }, vector: vector() } }).catch(() => undefined);
        if (r?.status === 201 || r?.status === 200) {
          writes++;
          maxWriteMs = Math.max(maxWriteMs, performance.now() - t0);
        }
      }
    }),
  );
  const t0 = performance.now();
  const started = await c.request('n2', 'POST', '/vectordb/collections/rb/reshard', { body: { num_shards: to } });
  if (started.status !== 200) throw new Error(`reshard: ${started.status} ${JSON.stringify(started.body)}`);
  let finished = false;
  const during = searchFor(0, () => finished);
  const job = await waitFor(async () => {
    const j = (await c.request('n1', 'GET', '/vectordb/collections/rb/reshard')).body;
    if (j.state === 'failed' || j.state === 'cancelled') throw new Error(`reshard ${j.state}: ${j.last_error}`);
    return j.state === 'done' ? j : undefined;
  }, { timeoutMs: 600_000, intervalMs: 200, what: 'the reshard to finish' });
  const seconds = (performance.now() - t0) / 1000;
  finished = true;
  running = false;
  const [lat] = await Promise.all([during, writer]);
  results.push({
    bench: `reshard-2-to-${to}${hot > 0 ? `-hot${hot}` : ''}`,
    docs,
    writers,
    seconds,
    switchRollbacks: job.switch_rollbacks,
    migratedPerSec: job.documents_migrated / seconds,
    writesDuring: writes,
    longestWriteMs: maxWriteMs,
    searchP50BeforeMs: percentile(before, 50),
    searchP99BeforeMs: percentile(before, 99),
    searchP50DuringMs: percentile(lat, 50),
    searchP99DuringMs: percentile(lat, 99),
  });
} finally {
  await c.close();
}
report(results);
