// Raft over real processes: 3 test KV nodes (test/raft/kv-node.ts) on loopback, gRPC between
// them, RocksDB with synced writes. 256-byte proposals through the leader's HTTP endpoint
// (the figures include one loopback HTTP round trip per proposal). The `inproc` cases run
// three RaftGroups over real RocksDB in this process, wired by an in-memory router: the
// cost of consensus + synced writes without HTTP and gRPC.
//   npx tsx bench/raft.ts [filter]
import { findLeader, freePorts, put, spawnKv, status, type KvProc } from '../test/raft/kv-cluster.js';
import { tempDir } from '../test/support/node.js';
import { waitFor } from '../test/support/wait.js';
import { Store } from '../src/storage/db.js';
import { RocksLog } from '../src/raft/rocks-log.js';
import { mathRand } from '../src/core/rand.js';
import { RaftGroup } from '../src/raft/group.js';
import { RaftTicker } from '../src/raft/ticker.js';
import type { Message } from '../src/raft/types.js';
import { percentile, report, selected, type BenchResult } from './support.js';

const value = 'x'.repeat(256);
const durationMs = Number(process.env.BENCH_MS ?? 5_000);
const failoverRuns = 5;

async function cluster() {
  const ids = ['n1', 'n2', 'n3'];
  const ports = await freePorts(3);
  const peers = ids.map((id, i) => `${id}=127.0.0.1:${ports[i]}`).join(',');
  const dirs = new Map(ids.map((id) => [id, tempDir(`firkin-raft-bench-${id}-`)]));
  const nodes = new Map<string, KvProc>();
  await Promise.all(ids.map(async (id) => nodes.set(id, await spawnKv(id, dirs.get(id)!, peers))));
  return { ids, peers, dirs, nodes, all: () => [...nodes.values()] };
}

async function throughput(leader: KvProc, proposers: number): Promise<BenchResult> {
  const latencies: number[] = [];
  const serverMs: number[] = [];
  let errors = 0;
  let seq = 0;
  for (let i = 0; i < 50; i++) await put(leader, `warm${i}`, value); // warm up
  const start = performance.now();
  const until = start + durationMs;
  await Promise.all(
    Array.from({ length: proposers }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        const r = await put(leader, `k${seq++}`, value);
        if (r.ok) {
          latencies.push(performance.now() - t0);
          serverMs.push(r.body.server_ms as number);
        } else errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  serverMs.sort((a, b) => a - b);
  return {
    bench: `raft-propose-c${proposers}`,
    proposalsPerSec: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    // Proposal to applied on the leader, without the HTTP round trip.
    serverP50Ms: percentile(serverMs, 50),
    proposals: latencies.length,
    errors,
  };
}

async function failover(c: Awaited<ReturnType<typeof cluster>>): Promise<BenchResult> {
  const times: number[] = [];
  for (let run = 0; run < failoverRuns; run++) {
    const leader = await waitFor(() => findLeader(c.all()), { timeoutMs: 15_000, what: 'leader' });
    await put(leader, `before${run}`, value);
    await leader.kill9();
    c.nodes.delete(leader.id);
    const t0 = performance.now();
    await waitFor(
      async () => {
        for (const n of c.all()) if ((await put(n, `after${run}`, value)).ok) return true;
        return false;
      },
      { timeoutMs: 15_000, intervalMs: 10, what: 'write after failover' },
    );
    times.push(performance.now() - t0);
    const back = await spawnKv(leader.id, c.dirs.get(leader.id)!, c.peers);
    c.nodes.set(leader.id, back);
    const l = (await findLeader(c.all()))!;
    const target = (await status(l))!.commit;
    await waitFor(async () => ((await status(back))?.applied ?? 0) >= target, { timeoutMs: 15_000, what: 'catch up' });
  }
  times.sort((a, b) => a - b);
  return { bench: 'raft-failover-kill9', medianMs: percentile(times, 50), minMs: times[0]!, maxMs: times[times.length - 1]!, runs: failoverRuns };
}

async function inProcess(proposersList: number[]): Promise<BenchResult[]> {
  const ids = ['a', 'b', 'c'];
  const groups = new Map<string, RaftGroup>();
  const stores: Store[] = [];
  const route = (ms: readonly Message[]) => {
    for (const m of ms) setImmediate(() => groups.get(m.to)?.step(m));
  };
  for (const id of ids) {
    const store = await Store.open(tempDir(`firkin-raft-bench-inproc-${id}-`));
    stores.push(store);
    const log = await RocksLog.open(store, 'g', { voters: ids, learners: [] });
    const group = new RaftGroup({
      id, group: 'g', log, fsm: { apply: (e) => e.index, snapshot: () => new Uint8Array(0), restore: () => undefined },
      rand: mathRand, ticker: new RaftTicker(50), electionTicks: 10, heartbeatTicks: 1, proposalTimeoutMs: 10_000,
      snapshotEveryEntries: 100_000, retainEntries: 0, send: route,
    });
    groups.set(id, group);
    await group.start();
  }
  const leader = await waitFor(() => [...groups.values()].find((g) => g.core.role === 'leader'), { timeoutMs: 15_000, what: 'leader' });
  const data = new TextEncoder().encode(value);
  const out: BenchResult[] = [];
  for (const proposers of proposersList) {
    const latencies: number[] = [];
    const until = performance.now() + durationMs;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: proposers }, async () => {
        while (performance.now() < until) {
          const t0 = performance.now();
          await leader.propose(data);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    out.push({ bench: `raft-inproc-c${proposers}`, proposalsPerSec: latencies.length / ((performance.now() - start) / 1000), p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), proposals: latencies.length, errors: 0 });
  }
  for (const g of groups.values()) await g.close();
  for (const s of stores) await s.close();
  return out;
}

const results: BenchResult[] = [];
const inprocCases = [1, 64].filter((p) => selected(`raft-inproc-c${p}`));
if (inprocCases.length > 0) results.push(...(await inProcess(inprocCases)));
const processCases = [1, 64].filter((p) => selected(`raft-propose-c${p}`));
if (processCases.length > 0 || selected('raft-failover-kill9')) {
  const c = await cluster();
  try {
    const leader = await waitFor(() => findLeader(c.all()), { timeoutMs: 15_000, what: 'leader' });
    for (const proposers of processCases) results.push(await throughput(leader, proposers));
    if (selected('raft-failover-kill9')) results.push(await failover(c));
  } finally {
    for (const n of c.all()) await n.kill9();
  }
}
report(results);
