// One vector shard replicated by a Raft group of three, in one process over real RocksDB and
// an in-memory router that can isolate a member: every acknowledged write is applied on every
// replica, a replica cut off past log compaction catches up by snapshot, and a restarted or
// deposed member converges to the same digest at the same applied index.
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { RaftGroup } from '../../src/raft/group.js';
import { RaftTicker } from '../../src/raft/ticker.js';
import { mathRand } from '../../src/core/rand.js';
import { RocksLog } from '../../src/raft/rocks-log.js';
import type { Message } from '../../src/raft/types.js';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { type ShardCommand, encodeShardCommand } from '../../src/vector/commands.js';
import { Shard, type ShardStateChunk, dropShardData } from '../../src/vector/shard.js';
import { ShardFsm } from '../../src/vector/shard-fsm.js';
import { smallShardConfig } from './engine-harness.js';
import { tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';

const IDS = ['a', 'b', 'c'];
const GROUP = 'shard-7';
const SHARD_ID = 7;
const CONFIG = smallShardConfig({ dimensions: 4, replication_factor: 3 });

interface Replica {
  id: string;
  dir: string;
  store: Store;
  fsm: ShardFsm;
  group: RaftGroup;
}

const log = pino({ level: 'silent' });
const vec = (i: number) => Float32Array.from([Math.sin(i), Math.cos(i), i % 7, 1]);
const upsert = (from: number, n: number): ShardCommand => ({
  kind: 'upsert',
  docs: Array.from({ length: n }, (_, k) => ({ id: `d${from + k}`, text: `doc number ${from + k}`, metadata: { n: from + k }, vector: vec(from + k) })),
});

/** Snapshot transfers stream the state of the replica that leads (what the cluster asks over gRPC). */
let leaderState: (() => AsyncIterable<ShardStateChunk>) | undefined;
/** Every chunk a transfer delivered: a transfer streams in pieces, never the whole state at once. */
const transferred: number[] = [];

/** A shard replica's store and state machine in `dir`, loading snapshots from `source`. */
async function openShardFsm(dir: string, source?: () => AsyncIterable<ShardStateChunk>): Promise<{ store: Store; fsm: ShardFsm }> {
  const store = await Store.open(path.join(dir, 'db'));
  const deps = { store, ann: usearchEngine, indexDir: dir, log };
  const shard = await Shard.open(SHARD_ID, CONFIG, deps);
  const fsm = new ShardFsm(shard, {
    reopenEmpty: async (old) => {
      await old.close({ save: false, reason: 'dropped' });
      await dropShardData(store, SHARD_ID, dir);
      return Shard.open(SHARD_ID, CONFIG, deps);
    },
    ...(source === undefined ? {} : { source }),
  });
  return { store, fsm };
}

async function startReplica(id: string, dir: string, route: (ms: readonly Message[]) => void): Promise<Replica> {
  const { store, fsm } = await openShardFsm(dir, async function* () {
    if (leaderState === undefined) throw new Error('no leader to stream from');
    for await (const chunk of leaderState()) {
      if ('docs' in chunk) transferred.push(chunk.docs.length);
      yield chunk;
    }
  });
  const raftLog = await RocksLog.open(store, GROUP, { voters: IDS, learners: [] });
  const group = new RaftGroup({
    id, group: GROUP, log: raftLog, fsm, rand: mathRand, ticker: new RaftTicker(10), electionTicks: 10, heartbeatTicks: 1,
    proposalTimeoutMs: 5_000, snapshotEveryEntries: 10, retainEntries: 2, send: route,
  });
  await group.start();
  return { id, dir, store, fsm, group };
}

async function stop(r: Replica): Promise<void> {
  await r.group.close();
  await r.fsm.shard.close({ save: false });
  await r.store.close();
}

t.test('a replicated shard: acknowledged writes everywhere, snapshot catch-up, restart, failover', async (t) => {
  const replicas = new Map<string, Replica>();
  const cut = new Set<string>();
  const route = (ms: readonly Message[]) => {
    for (const m of ms) if (!cut.has(m.from) && !cut.has(m.to)) setImmediate(() => replicas.get(m.to)?.group.step(m));
  };
  for (const id of IDS) replicas.set(id, await startReplica(id, tempDir('firkin-rshard-'), route));
  t.teardown(async () => {
    for (const r of replicas.values()) await stop(r);
  });
  const leader = () => waitFor(() => [...replicas.values()].find((r) => r.group.core.role === 'leader' && !cut.has(r.id)), { timeoutMs: 15_000, what: 'a leader' });
  const digests = () => Promise.all([...replicas.values()].map((r) => r.fsm.shard.digest()));
  const converged = async () => {
    const all = await digests();
    return all.every((d) => d.sha256 === all[0]!.sha256 && d.applied === all[0]!.applied) ? all[0]! : undefined;
  };
  const acknowledged = new Set<string>();
  const write = async (l: Replica, c: ShardCommand) => {
    await l.group.propose(encodeShardCommand(c));
    if (c.kind === 'upsert') for (const d of c.docs) acknowledged.add(d.id);
    else for (const id of c.ids) acknowledged.delete(id);
  };

  let l = await leader();
  // Small chunks, so the transfer below takes several.
  leaderState = () => [...replicas.values()].find((r) => r.group.core.role === 'leader')!.fsm.shard.exportState(2_000);
  for (let i = 0; i < 10; i++) await write(l, upsert(i * 5, 5));
  await write(l, { kind: 'delete', ids: ['d3', 'd4'] });
  let same = await waitFor(converged, { what: 'three replicas with one digest' });
  t.equal(same.docs, acknowledged.size, 'every acknowledged write is on every replica');

  // Cut one follower off while the log moves past its compaction point: it needs a snapshot.
  const lagging = [...replicas.values()].find((r) => r.id !== l.id)!;
  cut.add(lagging.id);
  for (let i = 10; i < 40; i++) await write(l, upsert(i * 5, 5));
  await write(l, { kind: 'delete', ids: ['d100', 'd101', 'd102'] });
  t.ok(l.group.core.log.firstIndex() > lagging.fsm.shard.appliedIndex + 1, 'the leader compacted the entries the lagging replica misses');
  const shardBefore = lagging.fsm.shard;
  cut.delete(lagging.id);
  same = await waitFor(converged, { timeoutMs: 20_000, what: 'the lagging replica to catch up' });
  t.not(lagging.fsm.shard, shardBefore, 'it caught up by loading a snapshot');
  t.ok(transferred.length > 1 && transferred.every((n) => n < same.docs), `streamed in ${transferred.length} chunks (${transferred.join(', ')} documents), none of them the whole shard`);
  t.equal(same.docs, acknowledged.size);

  // Restart a follower from its RocksDB: same data, nothing applied twice.
  const follower = [...replicas.values()].find((r) => r.id !== l.id)!;
  const appliedBefore = follower.fsm.shard.appliedIndex;
  await stop(follower);
  replicas.delete(follower.id);
  replicas.set(follower.id, await startReplica(follower.id, follower.dir, route));
  t.ok(replicas.get(follower.id)!.fsm.shard.appliedIndex >= appliedBefore, 'the applied index survived the restart');
  await waitFor(converged, { what: 'the restarted replica to converge' });

  // Depose the leader (stop it as a crash would: no index save), write through the new one.
  const old = l;
  await stop(old);
  replicas.delete(old.id);
  l = await leader();
  t.not(l.id, old.id, 'a new leader');
  for (let i = 40; i < 45; i++) await write(l, upsert(i * 5, 5));
  replicas.set(old.id, await startReplica(old.id, old.dir, route));
  same = await waitFor(converged, { timeoutMs: 20_000, what: 'the old leader to rejoin and converge' });
  t.equal(same.docs, acknowledged.size, 'nothing acknowledged is lost across the failover');
  for (const r of replicas.values()) {
    const hits = await r.fsm.shard.search(vec(201), 1, 64, undefined);
    t.equal(hits[0]?.id, 'd201', `${r.id} finds a document written after the failover`);
  }
});

// A snapshot is at the index of the last entry applied, of any kind; a replica loading it needs
// a source applied that far. Entries without data for the shard (a leader's empty entry, a
// membership change, a fence) did not move its applied index: a group whose last entries carried
// none, and no write to come, could never add a replica; the loader retried for ever (chaos seed
// 150: a reshard's new shard, waiting on its copy while its replicas moved).
t.test('a snapshot taken after entries without data loads from a replica (they move its applied index)', async (t) => {
  const a = await openShardFsm(tempDir('firkin-vshard-a-'));
  await a.fsm.apply({ index: 1, term: 1, kind: 'normal', data: encodeShardCommand(upsert(0, 3)) });
  await a.fsm.apply({ index: 2, term: 2, kind: 'noop' });
  await a.fsm.apply({ index: 3, term: 2, kind: 'conf', change: { voters: ['x', 'y'], learners: [] } } as never);
  t.equal(a.fsm.shard.appliedIndex, 3, 'the applied index is past the entries without data');
  const b = await openShardFsm(tempDir('firkin-vshard-b-'), () => a.fsm.shard.exportState());
  t.teardown(async () => {
    b.fsm.stop();
    for (const r of [a, b]) {
      await r.fsm.shard.close({ save: false });
      await r.store.close();
    }
  });
  // A bounded wait: without the change the load retries for ever.
  const outcome = await Promise.race([b.fsm.restore(a.fsm.snapshot()).then(() => 'loaded'), new Promise<string>((r) => setTimeout(() => r('still retrying'), 10_000).unref())]);
  t.equal(outcome, 'loaded', 'the snapshot at index 3 loads from a replica applied to 3');
  if (outcome === 'loaded') {
    t.equal(b.fsm.shard.count, 3, 'with its documents');
    t.equal(b.fsm.shard.appliedIndex, 3);
  }
});
