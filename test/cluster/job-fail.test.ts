// A job that fails (a FatalJobError in a step) ends `failed` only once nothing of it is left
// behind: the runner asks its `fail` again, with backoff, until that sticks (a fence that
// could not be lifted yet would otherwise stay up for good), and a VDB merge failing before
// its switch purges its copies from the target, as a cancel does. The coordinator runs here
// over the real metadata state machine, with the member and the shards faked.
import t from 'tap';
import pino from 'pino';
import { FatalJobError, MetadataJobRunner } from '../../src/cluster/job-runner.js';
import type { ClusterMember } from '../../src/cluster/member.js';
import { EMPTY_META, type MetaCommand, type MetaState, applyMeta } from '../../src/cluster/meta-state.js';
import { SWITCH_ATTEMPTS_MAX } from '../../src/cluster/switch-bound.js';
import { type RebalanceShards, VdbRebalanceCoordinator } from '../../src/cluster/vdb-rebalance.js';
import { FirkinError } from '../../src/core/errors.js';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import type { DocShardCommand } from '../../src/docdb/vdb/shard-commands.js';

const log = pino({ level: 'silent' });

/** A metadata member that leads, applying each proposal to its state at once. */
function fakeMember(cmds: readonly MetaCommand[]) {
  const m = {
    state: cmds.reduce((s, c) => applyMeta(s, c).state, EMPTY_META as MetaState),
    leads: true,
    proposed: [] as MetaCommand[],
    timings: { tickMs: 1, electionTicks: 1, proposalTimeoutMs: 1 },
    isLeader: () => m.leads,
    async propose(cmd: MetaCommand): Promise<void> {
      m.proposed.push(cmd);
      const next = applyMeta(m.state, cmd);
      if (!next.result.ok) throw new FirkinError(next.result.code, next.result.message);
      m.state = next.state;
    },
  };
  return m;
}

async function until(what: string, done: () => boolean, tick: () => void, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    tick();
    await new Promise((r) => setTimeout(r, 5));
  }
}

t.test('the runner asks `fail` again until it sticks, and stops when leadership goes', async (t) => {
  const member = fakeMember([]);
  member.state = { ...member.state, jobs: { j: { id: 'j', kind: 'reshard', target: 'c', step: 'switching', createdAtMs: 0, updatedAtMs: 0 } as never } };
  const runner = new MetadataJobRunner({ member: member as unknown as ClusterMember, log, kind: 'reshard', what: 'reshard' });
  let steps = 0;
  const fails: string[] = [];
  const errors: string[] = [];
  runner.drive({
    step: async () => {
      steps++;
      throw new FatalJobError('the log of vs1 was compacted');
    },
    fail: async (jobId, message) => {
      fails.push(message);
      if (fails.length < 3) throw new FirkinError('unavailable', 'vs1 has no leader');
      member.state = { ...member.state, jobs: { [jobId]: { ...member.state.jobs[jobId]!, step: 'failed' } } };
    },
    noteError: async (_jobId, message) => void errors.push(message),
  });
  await until('the job to end', () => member.state.jobs.j!.step === 'failed', () => runner.tick());
  t.equal(steps, 1, 'no step ran again between the tries');
  t.same(fails, ['the log of vs1 was compacted', 'the log of vs1 was compacted', 'the log of vs1 was compacted'], 'failed three times, the job ended on the third');
  t.same(errors, ['vs1 has no leader', 'vs1 has no leader'], 'each refusal is the job\'s last error meanwhile');

  // Leadership lost while failing: this node stops; the next leader's run fails the job again.
  member.state = { ...member.state, jobs: { k: { id: 'k', kind: 'reshard', target: 'c', step: 'switching', createdAtMs: 0, updatedAtMs: 0 } as never } };
  let kFails = 0;
  const runner2 = new MetadataJobRunner({ member: member as unknown as ClusterMember, log, kind: 'reshard', what: 'reshard' });
  runner2.drive({
    step: async () => {
      throw new FatalJobError('x');
    },
    fail: async () => {
      kFails++;
      member.leads = false;
      throw new FirkinError('not_leader', 'deposed');
    },
    noteError: async () => undefined,
  });
  await until('a first fail', () => kFails > 0, () => runner2.tick());
  await new Promise((r) => setTimeout(r, 300));
  t.equal(kFails, 1, 'a deposed leader does not go on failing the job');
  t.equal(member.state.jobs.k!.step, 'switching');
  runner.close();
  runner2.close();
});

/** A VDB of two shards, its merge of shard 0 into 1 caught up, its switch rolled back `rollbacks` times. */
function mergeMember(rollbacks: number) {
  const config = { hashFunction: 'phash2' as const, replicaFactor: 2, zones: [], createdMs: 0 };
  const cmds: MetaCommand[] = [
    { type: 'vdb.create', name: 'v', config, shards: [{ range: [0, 2147483647], replicas: ['n1', 'n2'] }, { range: [2147483648, 4294967295], replicas: ['n2', 'n3'] }] },
    { type: 'vdb.rebalance.begin', name: 'v', jobId: 'j', atMs: 1, op: 'merge', source: 0, target: 1, moving: [0, 2147483647] },
    { type: 'vdb.rebalance.progress', jobId: 'j', atMs: 2, from: [3, 0], targetFrom: [4, 0], copied: 10, step: 'catching_up' },
  ];
  for (let i = 0, attempt = 10; i < rollbacks; i++, attempt += 10) {
    cmds.push({ type: 'vdb.rebalance.progress', jobId: 'j', atMs: 3, step: 'switching', attempt });
    cmds.push({ type: 'vdb.rebalance.rollback', jobId: 'j', atMs: 4, attempt, error: 'the target has no leader' });
    cmds.push({ type: 'vdb.rebalance.progress', jobId: 'j', atMs: 5, lifted: attempt });
  }
  return fakeMember(cmds);
}

function coordinator(member: ReturnType<typeof fakeMember>, shards: RebalanceShards): VdbRebalanceCoordinator {
  return new VdbRebalanceCoordinator({ member: member as unknown as ClusterMember, shards, hlc: new HybridClock(systemClock), newId: () => 'id', log, batchSize: 100, docsPerSecond: 1_000, switchTimeoutMs: 1_000 });
}

/** A source with nothing more to copy; the target's answers to proposals from `answer`. */
function fakeShards(answer: (group: string, c: DocShardCommand) => Promise<unknown>): RebalanceShards & { proposed: [string, DocShardCommand][] } {
  const proposed: [string, DocShardCommand][] = [];
  return {
    proposed,
    read: async () => ({ results: [], scanned: null, more: false }),
    propose: async (shard, c) => {
      proposed.push([shard.group, c]);
      return (await answer(shard.group, c)) as never;
    },
  };
}

t.test('a merge failing before its switch purges its copies from the target, then ends failed', async (t) => {
  const member = mergeMember(SWITCH_ATTEMPTS_MAX);
  t.match(member.state.jobs.j, { step: 'catching_up', vdb: { rollbacks: SWITCH_ATTEMPTS_MAX } }, 'the last rollback allowed');
  let refusals = 2;
  const shards = fakeShards(async (_group, c) => {
    if (c.kind === 'purge' && refusals-- > 0) throw new FirkinError('unavailable', 'ds1 has no leader');
    return { kind: c.kind, purged: 10 };
  });
  const co = coordinator(member, shards);
  t.teardown(() => co.close());
  await until('the job to end', () => member.state.jobs.j!.step === 'failed', () => co.tick());
  t.same(
    shards.proposed.map(([g, c]) => [g, c.kind, 'range' in c ? c.range : null, c.rid]),
    [
      ['ds1', 'purge', [0, 2147483647], 'fail-purge-j'],
      ['ds1', 'purge', [0, 2147483647], 'fail-purge-j'],
      ['ds1', 'purge', [0, 2147483647], 'fail-purge-j'],
    ],
    "the moving range purged from the target (retried with one request id), never from the source",
  );
  const job = member.state.jobs.j!;
  t.match(job.vdb, { error: /rolled back 20 times/ });
  t.notMatch(job.vdb!.error, /copies stay/, 'nothing left behind');
  t.same(member.state.vdbs.v!.shards.map((s) => [s.range, s.retired ?? false]), [[[0, 2147483647], false], [[2147483648, 4294967295], false]], 'the ranges never moved');
});

t.test('a failed merge whose target stays unreachable ends failed anyway, and says its copies stayed', async (t) => {
  const member = mergeMember(SWITCH_ATTEMPTS_MAX);
  const shards = fakeShards(async () => {
    throw new FirkinError('unavailable', 'ds1 has no leader');
  });
  const co = coordinator(member, shards);
  t.teardown(() => co.close());
  await until('the job to end', () => member.state.jobs.j!.step === 'failed', () => co.tick(), 30_000);
  t.equal(shards.proposed.length, 5, 'five tries');
  t.match(member.state.jobs.j!.vdb!.error, /its copies stay in the merge's target/);
});

t.test('a merge begun on a stale map with no plan (an older proposer) fails before any fence, its copies purged', async (t) => {
  // Chaos seed 134's sequence: shard 2 sits between shards 1 and 3 now; a merge of 3 into 1
  // would widen shard 1 over it. The log takes a begin without `planned` as before.
  const config = { hashFunction: 'phash2' as const, replicaFactor: 2, zones: [], createdMs: 0 };
  const member = fakeMember([
    { type: 'vdb.create', name: 'v', config, shards: [{ range: [0, 2147483647], replicas: ['n1', 'n2'] }, { range: [2147483648, 2684354559], replicas: ['n2', 'n3'] }, { range: [2684354560, 3221225471], replicas: ['n1', 'n3'] }, { range: [3221225472, 4294967295], replicas: ['n1', 'n2'] }] },
    { type: 'vdb.rebalance.begin', name: 'v', jobId: 'j', atMs: 1, op: 'merge', source: 3, target: 1, moving: [3221225472, 4294967295] },
  ]);
  t.match(member.state.jobs.j, { step: 'copying' }, 'begun');
  const shards = fakeShards(async (_group, c) => ({ kind: c.kind, purged: 0 }));
  const co = coordinator(member, shards);
  t.teardown(() => co.close());
  await until('the job to end', () => member.state.jobs.j!.step === 'failed', () => co.tick());
  t.match(member.state.jobs.j!.vdb!.error, /cannot merge into shard 1 \[2147483648, 2684354559\] moving \[3221225472, 4294967295\]: the merge was planned on an older map/);
  t.same(shards.proposed.map(([g, c]) => [g, c.kind]), [['ds1', 'purge']], 'no fence, no copy: only the purge of the target');
  t.same(member.state.vdbs.v!.shards.map((s) => [s.range, s.retired ?? false]), [[[0, 2147483647], false], [[2147483648, 2684354559], false], [[2684354560, 3221225471], false], [[3221225472, 4294967295], false]], 'the map never moved');
});
