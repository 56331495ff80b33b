// The cluster foundation: metadata writes through consensus and metadata leader failover on
// three real node processes (src/main.ts, gRPC, RocksDB), and how the metadata group's cost
// grows with learners (pure Raft cores in this process, no I/O: the CPU and messages of
// consensus alone).
//   npx tsx bench/cluster.ts [filter]      (BENCH_MS: length of each throughput case)
import { MemoryStorage } from '../src/raft/storage.js';
import { DEFAULT_RAFT_OPTIONS, RaftCore } from '../src/raft/core.js';
import type { Message } from '../src/raft/types.js';
import { TestCluster } from '../test/cluster/harness.js';
import { waitFor } from '../test/support/wait.js';
import { percentile, report, selected, type BenchResult } from './support.js';

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
        for (const m of rd.messages as Message[]) {
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

const results: BenchResult[] = [];
for (const learners of [0, 10, 50]) if (selected(`meta-fanout-5v-${learners}l`)) results.push(fanOut(learners, 2_000));
if (selected('meta-write') || selected('meta-failover')) {
  const c = await TestCluster.start(3);
  await c.waitVoters(3);
  try {
    for (const [clients, via] of [[1, 'leader'], [16, 'leader'], [1, 'follower'], [16, 'follower']] as const) {
      if (selected(`meta-write-${via}-c${clients}`)) results.push(await metaWrites(c, clients, via));
    }
    if (selected('meta-failover')) results.push(await failover(c));
  } finally {
    await c.close();
  }
}
report(results);
