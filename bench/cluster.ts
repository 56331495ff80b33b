// The cluster on real node processes (src/main.ts, gRPC, RocksDB):
// - metadata writes through consensus and metadata leader failover (3 nodes), and the longest
//   pause a writer sees while the leader is stopped gracefully (SIGTERM: it hands leadership
//   over first) or killed (`meta-leader-stop-write-gap`, `meta-leader-kill9-write-gap`; the
//   same for the node leading most vector shards: `vector-shard-leader-*-write-gap`);
// - how the metadata group's cost grows with learners (pure Raft cores in this process, no
//   I/O: the CPU and messages of consensus alone);
// - replicated vector collections (`vector-*`): a collection of 3 shards with replication
//   factor 3 on 3 nodes against one standalone node on the same machine: batch insert
//   docs/s, single writes, search QPS at 1 and 8 clients (linearizable, and stale), p50/p99,
//   and shard leader failover after kill -9. Cluster requests go round-robin over the nodes.
//   Both sides run with the default settings.
// - VDBs (`doc-*`): a VDB of 4 shards, replica_factor 3 on 3 nodes (each shard a Raft group)
//   against a 4-shard VDB on one standalone node: `_bulk_docs` docs/s (batches of 500, 2
//   clients), single PUT/s and GET/s at 16 clients, and shard primary failover after kill -9.
//   DOC_COUNT: documents loaded (default 50,000).
//   `doc-pouchdb-pull-*`, `doc-pouchdb-push-*`: PouchDB's replicator pulling the loaded VDB
//   through one node, and pushing it into a new VDB of the same shape.
// - shard leader placement (`doc-leaders-*`): a VDB of 6 shards after a rolling restart of two
//   nodes, without leader balancing (the leaders piled on the node never restarted) and with
//   it: single GET/s and PUT/s at 16 clients, and where the leaders were.
// - keyword search (`text-*`): BM25 top-10 QPS at 1 and 8 clients over a collection of 3
//   shards (TEXT_DOCS documents of the Zipf corpus, default 20,000), cluster
//   (replication factor 3, the shards' statistics summed first) against standalone.
//   npx tsx bench/cluster.ts [filter]      (BENCH_MS: length of each throughput case;
//   VECTOR_DOCS, VECTOR_DIMS: the loaded collection, default 5000 x 128)
import { MemoryStorage } from '../src/raft/storage.js';
import { DEFAULT_RAFT_OPTIONS, RaftCore } from '../src/raft/core.js';
import type { Message } from '../src/raft/types.js';
import { TestCluster } from '../test/cluster/harness.js';
import { compiledMainArgs } from '../test/support/built-node.js';
import { waitFor } from '../test/support/wait.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_ADMIN_KEY, request } from '../test/support/node.js';
import { type BenchResult, percentile, report, selected, spawnBenchNode } from './support.js';
import { textCorpus, textQueries } from './text-corpus.js';

// The cluster's nodes run compiled, as the product ships (built-node.ts: built now if stale).
compiledMainArgs();

const durationMs = Number(process.env.BENCH_MS ?? 5_000);
const failoverRuns = Number(process.env.FAILOVER_RUNS ?? 7);

/** One metadata write: an API key created through the metadata group (propose, commit, apply here). */
async function write(c: TestCluster, node: string): Promise<boolean> {
  const r = await c.request(node, 'POST', '/_keys', { body: { permissions: ['read'] } }).catch(() => undefined);
  return r?.status === 201;
}

async function metaWrites(c: TestCluster, clients: number, via: 'leader' | 'follower'): Promise<BenchResult> {
  const leader = await c.leader();
  const node = via === 'leader' ? leader : c.running().find((n) => n !== leader)!;
  for (let i = 0; i < 20; i++) await write(c, node);
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const until = start + durationMs;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        if (await write(c, node)) latencies.push(performance.now() - t0);
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { bench: `meta-write-${via}-c${clients}`, writesPerSec: latencies.length / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), writes: latencies.length, errors };
}

/** kill -9 the metadata leader; time until a metadata write succeeds through a survivor. */
async function failover(c: TestCluster): Promise<BenchResult> {
  const times: number[] = [];
  for (let run = 0; run < failoverRuns; run++) {
    await c.waitMembers();
    await c.waitVoters(3); // a node that just (re)joined may still be a learner
    const leader = await c.leader();
    const survivor = c.running().find((n) => n !== leader)!;
    const t0 = performance.now();
    await c.kill9(leader);
    await waitFor(() => write(c, survivor), { timeoutMs: 30_000, intervalMs: 10, what: 'a write after failover' });
    times.push(performance.now() - t0);
    await c.startNode(leader);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { bench: 'meta-failover', runs: times.length, medianMs: percentile(sorted, 50), maxMs: sorted[sorted.length - 1]!, allMs: times.map((t) => Math.round(t)).join(' ') };
}

/**
 * What one client writing back to back through a survivor sees while `victim` goes away: the
 * longest time between two of its acknowledged writes (a few ms when nothing happens), from
 * the moment the victim is told to go until 20 writes after the cluster answers again.
 * `stop`: SIGTERM, the node's graceful shutdown, which hands the leaderships it holds to a live
 * voter first; `kill9`: no hand-over, an election.
 */
async function writeGapWhileGone(c: TestCluster, victim: string, how: 'stop' | 'kill9', writeOnce: (attempt: number) => Promise<boolean>): Promise<{ gapMs: number; failed: number }> {
  let writing = true;
  let acked = 0;
  let failed = 0;
  let attempt = 0;
  let last = performance.now();
  let gapMs = 0;
  const writer = (async () => {
    while (writing) {
      const ok = await writeOnce(attempt++);
      const now = performance.now();
      if (!ok) {
        failed++;
        continue;
      }
      gapMs = Math.max(gapMs, now - last);
      last = now;
      acked++;
    }
  })();
  try {
    await waitFor(() => acked >= 20, { timeoutMs: 30_000, intervalMs: 5, what: 'writes before the node goes' });
    gapMs = 0;
    failed = 0;
    await (how === 'stop' ? c.stop(victim) : c.kill9(victim));
    const after = acked;
    await waitFor(() => acked >= after + 20, { timeoutMs: 60_000, intervalMs: 5, what: 'writes after the node went' });
  } finally {
    writing = false;
    await writer;
  }
  return { gapMs, failed };
}

function gapResult(bench: string, gaps: readonly { gapMs: number; failed: number }[]): BenchResult {
  const sorted = gaps.map((g) => g.gapMs).sort((a, b) => a - b);
  return {
    bench,
    runs: gaps.length,
    medianMs: percentile(sorted, 50),
    maxMs: sorted[sorted.length - 1]!,
    allMs: gaps.map((g) => Math.round(g.gapMs)).join(' '),
    failedWrites: gaps.reduce((n, g) => n + g.failed, 0),
  };
}

/** The metadata leader stopped or killed, under one writer of metadata through a survivor. */
async function metaLeaderGap(c: TestCluster, how: 'stop' | 'kill9'): Promise<BenchResult> {
  const gaps: { gapMs: number; failed: number }[] = [];
  for (let run = 0; run < failoverRuns; run++) {
    await c.waitMembers();
    await c.waitVoters(3);
    const leader = await c.leader();
    const survivor = c.running().find((n) => n !== leader)!;
    gaps.push(await writeGapWhileGone(c, leader, how, () => write(c, survivor)));
    await c.startNode(leader);
  }
  return gapResult(`meta-leader-${how}-write-gap`, gaps);
}

/**
 * Pure cores wired by an in-memory router: 5 voters plus `learners` learners, `proposals`
 * proposals through the leader. Reports messages and leader-side CPU per committed proposal:
 * what the metadata group costs as the cluster grows (every member gets every entry).
 */
function fanOut(learners: number, proposals: number): BenchResult {
  const voters = ['v1', 'v2', 'v3', 'v4', 'v5'];
  const learnerIds = Array.from({ length: learners }, (_, i) => `l${i + 1}`);
  const conf = { voters, learners: learnerIds };
  let seed = 1;
  const rand = { int: (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n };
  const cores = new Map<string, { core: RaftCore; storage: MemoryStorage }>();
  for (const id of [...voters, ...learnerIds]) {
    const storage = new MemoryStorage(conf);
    cores.set(id, { storage, core: new RaftCore({ ...DEFAULT_RAFT_OPTIONS, id, group: 'meta', storage, rand, appendEntriesMax: 256 }) });
  }
  let messages = 0;
  let leaderMs = 0;
  const pump = () => {
    let moved = true;
    while (moved) {
      moved = false;
      for (const [id, { core, storage }] of cores) {
        const t0 = id === 'v1' ? performance.now() : 0;
        const rd = core.ready();
        if (rd === undefined) continue;
        moved = true;
        if (rd.snapshot !== undefined) storage.applySnapshot(rd.snapshot);
        storage.append(rd.entries);
        if (rd.hardState !== undefined) storage.setHardState(rd.hardState);
        core.advance(rd);
        if (id === 'v1') leaderMs += performance.now() - t0;
        for (const m of [...rd.earlyMessages, ...rd.messages] as Message[]) {
          messages++;
          const to = cores.get(m.to)!;
          const t1 = m.to === 'v1' ? performance.now() : 0;
          to.core.step(m);
          if (m.to === 'v1') leaderMs += performance.now() - t1;
        }
      }
    }
  };
  cores.get('v1')!.core.campaign();
  pump();
  messages = 0;
  leaderMs = 0;
  const data = new Uint8Array(200);
  for (let i = 0; i < proposals; i++) {
    const t0 = performance.now();
    cores.get('v1')!.core.propose(data);
    leaderMs += performance.now() - t0;
    pump();
  }
  const last = learners > 0 ? `l${learners}` : 'v5';
  const committed = cores.get(last)!.core.log.committed;
  return { bench: `meta-fanout-5v-${learners}l`, members: 5 + learners, messagesPerProposal: messages / proposals, leaderUsPerProposal: (leaderMs * 1000) / proposals, committedOnLastMember: committed };
}

// ---- replicated vector collections ---------------------------------------------------------

const vectorDocs = Number(process.env.VECTOR_DOCS ?? 5_000);
const textDocs = Number(process.env.TEXT_DOCS ?? 20_000);
const dims = Number(process.env.VECTOR_DIMS ?? 128);
/** The node defaults (the test harness shortens the failure detector; a bench should not). */
const DEFAULT_TIMINGS = { SERVICE_FD_SUSPECT_MS: '1500', SERVICE_FD_DOWN_MS: '4000', SERVICE_FD_MIN_DWELL_MS: '3000', SERVICE_CLUSTER_HEARTBEAT_MS: '250', SERVICE_CLUSTER_PROPOSAL_TIMEOUT_MS: '5000' };
let seed = 42;
const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = () => Array.from({ length: dims }, rnd);

/** A target: the URLs requests go to (round-robin). */
interface Target {
  name: 'standalone' | 'cluster';
  urls: () => string[];
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await request(url, method, path, { key: TEST_ADMIN_KEY, body }).catch(() => ({ status: 0, body: undefined }));
  return { status: r.status, body: r.body };
}

async function timed(clients: number, op: (client: number, i: number) => Promise<boolean>): Promise<{ perSec: number; p50Ms: number; p99Ms: number; ops: number; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const start = performance.now();
  const until = start + durationMs;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        if (await op(client, i++)) latencies.push(performance.now() - t0);
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSec: latencies.length / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), ops: latencies.length, errors };
}

async function vectorCases(t: Target): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const pick = (i: number) => t.urls()[i % t.urls().length]!;
  const created = await call(pick(0), 'PUT', '/vectordb/collections/bench', { dimensions: dims, num_shards: 3, replication_factor: t.name === 'cluster' ? 3 : 1 });
  if (created.status !== 200 && created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  // Batch insert: 100 documents a request, 4 clients, until the collection holds vectorDocs.
  seed = 42;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async (_, client) => {
      while (next < vectorDocs) {
        const from = next;
        next += 100;
        const documents = Array.from({ length: Math.min(100, vectorDocs - from) }, (_, j) => ({ id: `d${from + j}`, text: `doc ${from + j}`, metadata: { n: from + j }, vector: randomVector() }));
        const r = await call(pick(client + from / 100), 'POST', '/vectordb/collections/bench/docs', { documents });
        if (r.status !== 200) throw new Error(`insert: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      }
    }),
  );
  out.push({ bench: `vector-insert-batch100-c4-${t.name}`, docsPerSec: vectorDocs / ((performance.now() - t0) / 1000), docs: vectorDocs, dims });
  if (selected(`vector-write-c1-${t.name}`)) {
    const r = await timed(1, async (_c, i) => (await call(pick(i), 'POST', '/vectordb/collections/bench/docs', { id: `w${i}`, text: 'w', metadata: {}, vector: randomVector() })).status === 201);
    out.push({ bench: `vector-write-c1-${t.name}`, writesPerSec: r.perSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors });
  }
  const queries = Array.from({ length: 200 }, randomVector);
  for (const [clients, consistency] of [[1, 'linearizable'], [8, 'linearizable'], [8, 'stale']] as const) {
    if (t.name === 'standalone' && consistency === 'stale') continue;
    const name = `vector-search-c${clients}${consistency === 'stale' ? '-stale' : ''}-${t.name}`;
    if (!selected(name)) continue;
    for (let i = 0; i < 50; i++) await call(pick(i), 'POST', '/vectordb/collections/bench/search', { vector: queries[i % queries.length], k: 10 }); // warm up
    const r = await timed(clients, async (c, i) => {
      const body = { vector: queries[i % queries.length], k: 10, ...(consistency === 'stale' ? { consistency } : {}) };
      const res = await call(pick(c + i), 'POST', '/vectordb/collections/bench/search', body);
      return res.status === 200 && res.body.partial !== true && res.body.results.length === 10;
    });
    out.push({ bench: name, qps: r.perSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors });
  }
  return out;
}

/**
 * Keyword search on a collection of 3 shards (the issue's Zipf corpus, `bench/text-corpus.ts`,
 * 8-d vectors beside it): on a cluster each search first sums the shards' BM25 statistics.
 */
async function textCases(t: Target): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const pick = (i: number) => t.urls()[i % t.urls().length]!;
  const created = await call(pick(0), 'PUT', '/vectordb/collections/text', { dimensions: 8, num_shards: 3, replication_factor: t.name === 'cluster' ? 3 : 1, bm25_backend: 'memory' });
  if (created.status !== 200 && created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const texts = textCorpus(textDocs, 42);
  for (let from = 0; from < texts.length; from += 500) {
    const documents = texts.slice(from, from + 500).map((text, j) => ({ id: `t${from + j}`, text, metadata: {}, vector: Array.from({ length: 8 }, rnd) }));
    const r = await call(pick(from / 500), 'POST', '/vectordb/collections/text/docs', { documents });
    if (r.status !== 200) throw new Error(`insert: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  const queries = textQueries(500, 43);
  for (const clients of [1, 8]) {
    const name = `text-bm25-c${clients}-${t.name}`;
    if (!selected(name)) continue;
    for (let i = 0; i < 50; i++) await call(pick(i), 'POST', '/vectordb/collections/text/search/bm25', { query: queries[i % queries.length], k: 10 }); // warm up
    const r = await timed(clients, async (c, i) => {
      const res = await call(pick(c + i), 'POST', '/vectordb/collections/text/search/bm25', { query: queries[i % queries.length], k: 10 });
      return res.status === 200 && res.body.partial !== true;
    });
    out.push({ bench: name, qps: r.perSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors, docs: textDocs });
  }
  return out;
}

/** Every shard led and every replica caught up; the node leading most shards. */
async function shardLeaderVictim(c: TestCluster): Promise<string> {
  const shards = await waitFor(async () => {
    const r = await c.request(c.running()[0]!, 'GET', '/_cluster/collections/bench/shards');
    const list = r.body?.shards as { leader?: string | null; lag?: Record<string, number | null> }[] | undefined;
    // Every shard led, every replica caught up (the restarted node included).
    return list !== undefined && list.every((s) => typeof s.leader === 'string' && Object.values(s.lag ?? {}).length === 3 && Object.values(s.lag ?? {}).every((l) => l === 0)) ? list : undefined;
  }, { timeoutMs: 60_000, intervalMs: 200, what: 'every shard led and caught up' });
  const led = new Map<string, number>();
  for (const s of shards) led.set(s.leader!, (led.get(s.leader!) ?? 0) + 1);
  return [...led].sort((a, b) => b[1] - a[1])[0]![0];
}

/** A batch with a document on every shard (30 random ids), written through `node`: all created. */
async function batchOnEveryShard(c: TestCluster, node: string, ids: string): Promise<boolean> {
  const documents = Array.from({ length: 30 }, (_, j) => ({ id: `${ids}-${j}`, text: 'f', metadata: {}, vector: randomVector() }));
  const r = await c.request(node, 'POST', '/vectordb/collections/bench/docs', { body: { documents } }).catch(() => undefined);
  return r?.status === 200 && (r.body.results as { status?: string }[]).every((x) => x.status === 'created');
}

/** kill -9 the node leading the most shards; time until a batch touching every shard is written through a survivor. */
async function shardFailover(c: TestCluster): Promise<BenchResult> {
  const times: number[] = [];
  for (let run = 0; run < failoverRuns; run++) {
    await c.waitMembers();
    await c.waitVoters(3);
    const victim = await shardLeaderVictim(c);
    const survivor = c.running().find((n) => n !== victim)!;
    const t0 = performance.now();
    await c.kill9(victim);
    let attempt = 0;
    await waitFor(() => batchOnEveryShard(c, survivor, `f${run}-${attempt++}`), { timeoutMs: 60_000, intervalMs: 10, what: 'a batch on every shard after the kill' });
    times.push(performance.now() - t0);
    await c.startNode(victim);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { bench: 'vector-shard-failover', runs: times.length, medianMs: percentile(sorted, 50), maxMs: sorted[sorted.length - 1]!, allMs: times.map((x) => Math.round(x)).join(' ') };
}

/** The node leading most vector shards stopped or killed, under one writer of batches on every shard. */
async function shardLeaderGap(c: TestCluster, how: 'stop' | 'kill9'): Promise<BenchResult> {
  const gaps: { gapMs: number; failed: number }[] = [];
  for (let run = 0; run < failoverRuns; run++) {
    await c.waitMembers();
    await c.waitVoters(3);
    const victim = await shardLeaderVictim(c);
    const survivor = c.running().find((n) => n !== victim)!;
    gaps.push(await writeGapWhileGone(c, victim, how, (attempt) => batchOnEveryShard(c, survivor, `g${how}${run}-${attempt}`)));
    await c.startNode(victim);
  }
  return gapResult(`vector-shard-leader-${how}-write-gap`, gaps);
}

// ---- VDBs --------------------------------------------------------------------------------------

const docCount = Number(process.env.DOC_COUNT ?? 50_000);

async function docCases(t: Target): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const pick = (i: number) => t.urls()[i % t.urls().length]!;
  const created = await call(pick(0), 'POST', '/vdb', { name: 'bench', shard_count: 4, placement: { replica_factor: t.name === 'cluster' ? 3 : 1 } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 2 }, async (_, client) => {
      while (next < docCount) {
        const from = next;
        next += 500;
        const docs = Array.from({ length: Math.min(500, docCount - from) }, (_, j) => ({ _id: `d${from + j}`, n: from + j, name: `user ${from + j}`, tags: ['a', 'b'], active: (from + j) % 2 === 0 }));
        const r = await call(pick(client + from / 500), 'POST', '/vdb/bench/_bulk_docs', { docs });
        if (r.status !== 201 || !(r.body.results as { ok: boolean }[]).every((x) => x.ok)) throw new Error(`bulk: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      }
    }),
  );
  out.push({ bench: `doc-bulk500-c2-${t.name}`, docsPerSec: docCount / ((performance.now() - t0) / 1000), docs: docCount });
  if (selected(`doc-put-c16-${t.name}`)) {
    const r = await timed(16, async (c, i) => (await call(pick(c + i), 'PUT', `/vdb/bench/p${i}`, { n: i })).status === 201);
    out.push({ bench: `doc-put-c16-${t.name}`, writesPerSec: r.perSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors });
  }
  if (selected(`doc-get-c16-${t.name}`)) {
    const r = await timed(16, async (c, i) => (await call(pick(c + i), 'GET', `/vdb/bench/d${(i * 7919) % docCount}`)).status === 200);
    out.push({ bench: `doc-get-c16-${t.name}`, readsPerSec: r.perSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors });
  }
  if (selected(`doc-pouchdb-pull-${t.name}`) || selected(`doc-pouchdb-push-${t.name}`)) out.push(...(await pouchdbCases(t, pick(0))));
  return out;
}

/**
 * PouchDB 9's replicator (memory adapter, in this process) with the VDB through one node:
 * pulling the loaded VDB whole, then pushing the same documents into a new VDB of the same
 * shape. Batches of 500, 10 in flight (as bench/replication.ts).
 */
// PouchDB ships no types; it is a bench and test peer only. Its plugins register once per process.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let pouchDb: any;
async function pouchdbCases(t: Target, url: string): Promise<BenchResult[]> {
  const require = createRequire(import.meta.url);
  pouchDb ??= require('pouchdb-core').plugin(require('pouchdb-adapter-memory')).plugin(require('pouchdb-adapter-http')).plugin(require('pouchdb-replication'));
  const PouchDB = pouchDb;
  const remote = (vdb: string) =>
    new PouchDB(`${url}/vdb/${vdb}`, {
      fetch: (u: string, opts: { headers: Headers }) => {
        opts.headers.set('Authorization', `Bearer ${TEST_ADMIN_KEY}`);
        return PouchDB.fetch(u, opts);
      },
    });
  const options = { batch_size: 500, batches_limit: 10 };
  const local = new PouchDB(`bench-pull-${Date.now()}`, { adapter: 'memory' });
  let t0 = performance.now();
  const pulled = await PouchDB.replicate(remote('bench'), local, options);
  const out: BenchResult[] = [{ bench: `doc-pouchdb-pull-${t.name}`, docsPerSec: pulled.docs_written / ((performance.now() - t0) / 1000), docs: pulled.docs_written }];
  const created = await call(url, 'POST', '/vdb', { name: 'pushed', shard_count: 4, placement: { replica_factor: t.name === 'cluster' ? 3 : 1 } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  t0 = performance.now();
  const pushed = await PouchDB.replicate(local, remote('pushed'), options);
  out.push({ bench: `doc-pouchdb-push-${t.name}`, docsPerSec: pushed.docs_written / ((performance.now() - t0) / 1000), docs: pushed.docs_written });
  return out;
}

/** kill -9 the node that is primary of the most VDB shards; time until a write to every shard succeeds through a survivor. */
async function docFailover(c: TestCluster): Promise<BenchResult> {
  const times: number[] = [];
  for (let run = 0; run < failoverRuns; run++) {
    await c.waitMembers();
    await c.waitVoters(3);
    const led = await vdbLeaders(c, 'bench');
    const victim = [...led].sort((a, b) => b[1] - a[1])[0]![0];
    const survivor = c.running().find((n) => n !== victim)!;
    let attempt = 0;
    const t0 = performance.now();
    await c.kill9(victim);
    await waitFor(async () => {
      const docs = Array.from({ length: 40 }, (_, j) => ({ _id: `f${run}-${attempt}-${j}` }));
      attempt++;
      const r = await c.request(survivor, 'POST', '/vdb/bench/_bulk_docs', { body: { docs } }).catch(() => undefined);
      return r?.status === 201 && (r.body.results as { ok: boolean }[]).every((x) => x.ok);
    }, { timeoutMs: 60_000, intervalMs: 10, what: 'a batch on every VDB shard after the kill' });
    times.push(performance.now() - t0);
    await c.startNode(victim);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { bench: 'doc-primary-failover', runs: times.length, medianMs: percentile(sorted, 50), maxMs: sorted[sorted.length - 1]!, allMs: times.map((x) => Math.round(x)).join(' ') };
}

/** Shards each node leads: `n1:4 n2:1 n3:1`, once every shard has a caught-up leader. */
async function vdbLeaders(c: TestCluster, vdb: string): Promise<Map<string, number>> {
  const shards = await waitFor(async () => {
    const r = await c.request(c.running()[0]!, 'GET', `/vdb/${vdb}/_shards`);
    const list = r.body?.shards as { primary: string | null; lag?: Record<string, number | null> }[] | undefined;
    return list !== undefined && list.every((s) => typeof s.primary === 'string' && Object.values(s.lag ?? {}).length === 3 && Object.values(s.lag ?? {}).every((l) => l === 0)) ? list : undefined;
  }, { timeoutMs: 60_000, intervalMs: 200, what: 'every VDB shard led and caught up' });
  const led = new Map(c.running().map((n) => [n, 0]));
  for (const s of shards) led.set(s.primary!, (led.get(s.primary!) ?? 0) + 1);
  return led;
}

/**
 * Where the shard leaders sit after a rolling restart, and what it costs: a VDB of 6 shards
 * (replica_factor 3, DOC_COUNT documents) on 3 nodes, n2 and n3 restarted twice in turn as an
 * upgrade would (n1 never: each stopping node hands its leaderships to the others, so they pile
 * up on n1). Without leader balancing they stay there; with it (the default) they spread
 * again. Then single GETs and PUTs at 16 clients round-robin over the nodes.
 */
async function leaderPlacement(balance: boolean): Promise<BenchResult[]> {
  const name = balance ? 'balanced' : 'unbalanced';
  const c = await TestCluster.start(3, { ...DEFAULT_TIMINGS, SERVICE_SHARD_LEADER_BALANCE: String(balance) });
  try {
    await c.waitVoters(3);
    const pick = (i: number) => c.url(c.running()[i % 3]!);
    const created = await call(pick(0), 'POST', '/vdb', { name: 'lead', shard_count: 6, placement: { replica_factor: 3 } });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
    for (let from = 0; from < docCount; from += 500) {
      const docs = Array.from({ length: Math.min(500, docCount - from) }, (_, j) => ({ _id: `d${from + j}`, n: from + j, name: `user ${from + j}` }));
      const r = await call(pick(from / 500), 'POST', '/vdb/lead/_bulk_docs', { docs });
      if (r.status !== 201) throw new Error(`bulk: ${r.status}`);
    }
    const before = await vdbLeaders(c, 'lead');
    for (const n of ['n2', 'n3', 'n2', 'n3']) {
      await c.stop(n);
      await c.startNode(n);
      await c.waitMembers();
      await vdbLeaders(c, 'lead');
    }
    let led = await vdbLeaders(c, 'lead');
    if (balance) {
      led = await waitFor(async () => {
        const now = await vdbLeaders(c, 'lead');
        return Math.max(...now.values()) - Math.min(...now.values()) <= 1 ? now : undefined;
      }, { timeoutMs: 60_000, intervalMs: 500, what: 'the leaders spread again' });
    }
    const leaders = [...led].map(([n, k]) => `${n}:${k}`).join(' ');
    const initial = [...before].map(([n, k]) => `${n}:${k}`).join(' ');
    const out: BenchResult[] = [];
    const get = await timed(16, async (client, i) => (await call(pick(client + i), 'GET', `/vdb/lead/d${(i * 7919) % docCount}`)).status === 200);
    out.push({ bench: `doc-leaders-${name}-get-c16`, readsPerSec: get.perSec, p50Ms: get.p50Ms, p99Ms: get.p99Ms, errors: get.errors, leaders, initial });
    const put = await timed(16, async (client, i) => (await call(pick(client + i), 'PUT', `/vdb/lead/p${i}`, { n: i })).status === 201);
    out.push({ bench: `doc-leaders-${name}-put-c16`, writesPerSec: put.perSec, p50Ms: put.p50Ms, p99Ms: put.p99Ms, errors: put.errors, leaders });
    return out;
  } finally {
    await c.close();
  }
}

const results: BenchResult[] = [];
for (const learners of [0, 10, 50]) if (selected(`meta-fanout-5v-${learners}l`)) results.push(fanOut(learners, 2_000));
if (['meta-write', 'meta-failover', 'meta-leader-stop-write-gap', 'meta-leader-kill9-write-gap'].some(selected)) {
  const c = await TestCluster.start(3);
  await c.waitVoters(3);
  try {
    for (const [clients, via] of [[1, 'leader'], [16, 'leader'], [1, 'follower'], [16, 'follower']] as const) {
      if (selected(`meta-write-${via}-c${clients}`)) results.push(await metaWrites(c, clients, via));
    }
    if (selected('meta-failover')) results.push(await failover(c));
    for (const how of ['stop', 'kill9'] as const) if (selected(`meta-leader-${how}-write-gap`)) results.push(await metaLeaderGap(c, how));
  } finally {
    await c.close();
  }
}
const vectorCaseNames = (target: Target['name']) =>
  ['vector-insert-batch100-c4', 'vector-write-c1', 'vector-search-c1', 'vector-search-c8', ...(target === 'cluster' ? ['vector-search-c8-stale'] : [])].map((n) => `${n}-${target}`);
const textCaseNames = (target: Target['name']) => ['text-bm25-c1', 'text-bm25-c8'].map((n) => `${n}-${target}`);
for (const target of ['standalone', 'cluster'] as const) {
  if (!textCaseNames(target).some(selected)) continue;
  if (target === 'standalone') {
    const dir = mkdtempSync(join(tmpdir(), 'firkin-bench-text-'));
    const node = await spawnBenchNode({ SERVICE_DATA_DIR: dir, SERVICE_LOG_LEVEL: 'info' });
    try {
      results.push(...(await textCases({ name: target, urls: () => [node.url] })));
    } finally {
      await node.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    const c = await TestCluster.start(3, DEFAULT_TIMINGS);
    try {
      await c.waitVoters(3);
      results.push(...(await textCases({ name: target, urls: () => c.running().map((n) => c.url(n)) })));
    } finally {
      await c.close();
    }
  }
}
{
  if (vectorCaseNames('standalone').some(selected)) {
    const dir = mkdtempSync(join(tmpdir(), 'firkin-bench-vector-'));
    const node = await spawnBenchNode({ SERVICE_DATA_DIR: dir, SERVICE_LOG_LEVEL: 'info' });
    try {
      results.push(...(await vectorCases({ name: 'standalone', urls: () => [node.url] })));
      console.error(JSON.stringify(results));
    } finally {
      await node.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const clusterCases = vectorCaseNames('cluster').some(selected);
  const shardGone = ['vector-shard-failover', 'vector-shard-leader-stop-write-gap', 'vector-shard-leader-kill9-write-gap'].some(selected);
  if (clusterCases || shardGone) {
    const c = await TestCluster.start(3, DEFAULT_TIMINGS);
    try {
      await c.waitVoters(3);
      if (clusterCases) results.push(...(await vectorCases({ name: 'cluster', urls: () => c.running().map((n) => c.url(n)) })));
      else await call(c.url('n1'), 'PUT', '/vectordb/collections/bench', { dimensions: dims, num_shards: 3, replication_factor: 3 });
      if (selected('vector-shard-failover')) results.push(await shardFailover(c));
      for (const how of ['stop', 'kill9'] as const) if (selected(`vector-shard-leader-${how}-write-gap`)) results.push(await shardLeaderGap(c, how));
    } finally {
      await c.close();
    }
  }
}
{
  const docCaseNames = (target: Target['name']) => ['doc-bulk500-c2', 'doc-put-c16', 'doc-get-c16', 'doc-pouchdb-pull', 'doc-pouchdb-push'].map((n) => `${n}-${target}`);
  if (docCaseNames('standalone').some(selected)) {
    const dir = mkdtempSync(join(tmpdir(), 'firkin-bench-doc-'));
    const node = await spawnBenchNode({ SERVICE_DATA_DIR: dir, SERVICE_LOG_LEVEL: 'info' });
    try {
      results.push(...(await docCases({ name: 'standalone', urls: () => [node.url] })));
    } finally {
      await node.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const clusterCases = docCaseNames('cluster').some(selected);
  if (clusterCases || selected('doc-primary-failover')) {
    const c = await TestCluster.start(3, DEFAULT_TIMINGS);
    try {
      await c.waitVoters(3);
      if (clusterCases) results.push(...(await docCases({ name: 'cluster', urls: () => c.running().map((n) => c.url(n)) })));
      else await call(c.url('n1'), 'POST', '/vdb', { name: 'bench', shard_count: 4, placement: { replica_factor: 3 } });
      if (selected('doc-primary-failover')) results.push(await docFailover(c));
    } finally {
      await c.close();
    }
  }
}
for (const balance of [false, true]) {
  const name = balance ? 'balanced' : 'unbalanced';
  if ([`doc-leaders-${name}-get-c16`, `doc-leaders-${name}-put-c16`].some(selected)) results.push(...(await leaderPlacement(balance)));
}
report(results);
