// What idle Raft groups cost a node. Three in-process nodes, real gRPC transports on loopback
// (link heartbeats every 250 ms, as a node runs them), one RocksDB per node; N groups, each
// replicated on all three, leaders spread evenly. Three shapes of the driver:
//   timer-per-group  one interval timer per group (the driver before the shared ticker);
//   one-ticker       one ticker per node; every group still heartbeats each tick, and the
//                    transport coalesces a turn's messages into one batch per node pair;
//   quiesce          one ticker, and idle groups go silent (SERVICE_RAFT_QUIESCE_TICKS).
// Per node: CPU (% of one core), Raft messages and batches sent per second, event-loop delay p99.
// The process hosts all three nodes, so the CPU figure is the process's divided by three.
//   npx tsx bench/multiraft.ts [filter]        (e.g. `quiesce-1000`); BENCH_MS (default 5000)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Store } from '../src/storage/db.js';
import { RocksLog } from '../src/raft/rocks-log.js';
import { mathRand } from '../src/core/rand.js';
import { RaftGroup } from '../src/raft/group.js';
import { RaftTicker } from '../src/raft/ticker.js';
import { Transport } from '../src/cluster/transport.js';
import { freePorts } from '../test/raft/kv-cluster.js';
import { waitFor } from '../test/support/wait.js';
import { report, selected, type BenchResult } from './support.js';

type Shape = 'timer-per-group' | 'one-ticker' | 'quiesce';
const TICK_MS = 50;
const measureMs = Number(process.env.BENCH_MS ?? 5_000);
const ids = ['a', 'b', 'c'];

interface BenchNode {
  id: string;
  dir: string;
  store: Store;
  transport: Transport;
  groups: Map<string, RaftGroup>;
}

async function run(shape: Shape, groupCount: number): Promise<BenchResult> {
  const ports = await freePorts(3);
  const peers = new Map(ids.map((id, i) => [id, `127.0.0.1:${ports[i]}`]));
  const nodes: BenchNode[] = [];
  for (const id of ids) {
    const dir = mkdtempSync(join(tmpdir(), `firkin-multiraft-${id}-`));
    const store = await Store.open(dir);
    const groups = new Map<string, RaftGroup>();
    const transport = new Transport({
      nodeId: id,
      cookie: 'bench-cookie',
      listen: peers.get(id)!,
      peers,
      heartbeatIntervalMs: 250,
      onMessages: (ms) => {
        for (const m of ms) groups.get(m.group)?.step(m);
      },
    });
    nodes.push({ id, dir, store, transport, groups });
  }
  await Promise.all(nodes.map((n) => n.transport.start()));
  const shared = new Map(nodes.map((n) => [n.id, new RaftTicker(TICK_MS)]));
  const alive = (node: BenchNode) => (peer: string) => node.transport.isConnected(peer) && Date.now() - (node.transport.lastSeenMs(peer) ?? 0) < 10 * TICK_MS;
  for (const node of nodes) {
    for (let g = 0; g < groupCount; g++) {
      const name = `g${g}`;
      const log = await RocksLog.open(node.store, name, { voters: ids, learners: [] });
      const group = new RaftGroup({
        id: node.id,
        group: name,
        log,
        fsm: { apply: (e) => e.index, snapshot: () => new Uint8Array(0), restore: () => undefined },
        send: (ms) => node.transport.send(ms),
        rand: mathRand,
        ticker: shape === 'timer-per-group' ? new RaftTicker(TICK_MS) : shared.get(node.id)!,
        electionTicks: 10,
        heartbeatTicks: 1,
        quiesceAfterTicks: shape === 'quiesce' ? 20 : 0,
        peerAlive: alive(node),
        proposalTimeoutMs: 10_000,
        snapshotEveryEntries: 1_000_000,
        retainEntries: 0,
      });
      node.groups.set(name, group);
    }
  }
  for (const node of nodes) for (const group of node.groups.values()) await group.start();
  // Spread leaders: group g campaigns on node g % 3.
  for (let g = 0; g < groupCount; g++) nodes[g % 3]!.groups.get(`g${g}`)!.core.campaign();
  await waitFor(() => nodes.every((n) => [...n.groups.values()].every((gr) => gr.core.leader !== null)), { timeoutMs: 120_000, intervalMs: 100, what: 'every group has a leader' });
  // One write per group, so each has something committed, then let it settle.
  const leaders = nodes.flatMap((n) => [...n.groups.values()].filter((gr) => gr.core.role === 'leader'));
  const payload = new Uint8Array(64);
  for (let i = 0; i < leaders.length; i += 100) await Promise.all(leaders.slice(i, i + 100).map((gr) => gr.propose(payload)));
  if (shape === 'quiesce') {
    await waitFor(() => nodes.every((n) => [...n.groups.values()].every((gr) => gr.core.quiesced)), { timeoutMs: 60_000, intervalMs: 100, what: 'every group quiesced' });
  } else {
    await new Promise((r) => setTimeout(r, 2_000)); // steady state (a settling period, not synchronisation)
  }

  const sent0 = nodes.map((n) => ({ ...n.transport.stats }));
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, measureMs));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  delay.disable();
  const messages = nodes.reduce((sum, n, i) => sum + n.transport.stats.messagesSent - sent0[i]!.messagesSent, 0);
  const batches = nodes.reduce((sum, n, i) => sum + n.transport.stats.batchesSent - sent0[i]!.batchesSent, 0);
  const leaderChanges = nodes.reduce((sum, n) => sum + [...n.groups.values()].filter((gr) => gr.core.term > 2).length, 0);

  for (const n of nodes) for (const gr of n.groups.values()) await gr.close();
  for (const n of nodes) await n.transport.close();
  for (const n of nodes) {
    await n.store.close();
    rmSync(n.dir, { recursive: true, force: true });
  }
  return {
    bench: `multiraft-${shape}-${groupCount}`,
    groupsPerNode: groupCount,
    cpuPctPerNode: ((cpu.user + cpu.system) / 1e4 / seconds) / 3,
    msgsPerSecPerNode: messages / seconds / 3,
    batchesPerSecPerNode: batches / seconds / 3,
    loopDelayP99Ms: delay.percentile(99) / 1e6,
    groupsPastTerm2: leaderChanges,
  };
}

const results: BenchResult[] = [];
for (const shape of ['timer-per-group', 'one-ticker', 'quiesce'] as const) {
  for (const n of [10, 100, 1000]) {
    if (!selected(`multiraft-${shape}-${n}`)) continue;
    results.push(await run(shape, n));
    console.error(JSON.stringify(results[results.length - 1]));
  }
}
report(results);
