// The time bound on a switch (`src/cluster/switch-bound.ts`): the backoff between attempts,
// an attempt's deadline held across retries of its step, the race against it, and the count
// routers watch for a lifted fence.
import t from 'tap';
import type { Job } from '../../src/cluster/meta-state.js';
import { FatalJobError } from '../../src/cluster/job-runner.js';
import { SwitchDeadlines, SwitchTimeout, liftedRollbacks, nextAttemptAt, raceDeadline, switchRollbackProblems, undoSwitchBeforeFailing } from '../../src/cluster/switch-bound.js';

t.test('the next attempt waits the timeout, doubled with each rollback, at most five minutes', (t) => {
  t.equal(nextAttemptAt(1_000, 1, 10_000), 11_000);
  t.equal(nextAttemptAt(1_000, 2, 10_000), 21_000);
  t.equal(nextAttemptAt(1_000, 4, 10_000), 81_000);
  t.equal(nextAttemptAt(1_000, 12, 10_000), 301_000, 'capped');
  t.end();
});

t.test('an attempt\'s deadline counts from the first time it was asked for, until forgotten', (t) => {
  const d = new SwitchDeadlines(500);
  t.equal(d.deadline('j', 7, 100), 600);
  t.equal(d.deadline('j', 7, 400), 600, 'a retry of the step keeps the first deadline');
  t.equal(d.deadline('j', 8, 400), 900, 'another attempt has its own');
  d.forget('j', 7);
  t.equal(d.deadline('j', 7, 1_000), 1_500);
  t.end();
});

t.test('the race: the work\'s answer or failure, or SwitchTimeout at the deadline', async (t) => {
  await raceDeadline(Promise.resolve(), Date.now() + 1_000, () => 'x');
  await t.rejects(raceDeadline(Promise.reject(new Error('boom')), Date.now() + 1_000, () => 'x'), /boom/);
  const never = new Promise(() => undefined);
  const timedOut = await raceDeadline(never, Date.now() + 20, () => 'still draining').catch((err: unknown) => err);
  t.ok(timedOut instanceof SwitchTimeout && timedOut.message === 'still draining', 'SwitchTimeout at the deadline');
  t.equal((timedOut as SwitchTimeout).abandoned, never, 'carrying the work given up on, to wait for before going on');
});

t.test('routers watch the rollbacks whose fences are lifted, of the jobs on their collection or VDB', (t) => {
  const job = (id: string, kind: Job['kind'], target: string, detail: Record<string, unknown>): Job =>
    ({ id, kind, target, step: 'catching_up', createdAtMs: 0, updatedAtMs: 0, ...(kind === 'reshard' ? { reshard: detail } : { vdb: detail }) }) as unknown as Job;
  const jobs = {
    a: job('a', 'reshard', 'c', { rollbacks: 2 }),
    b: job('b', 'reshard', 'c', { rollbacks: 5, lifting: true }),
    c: job('c', 'vdb-rebalance', 'c', { rollbacks: 9 }),
    d: job('d', 'reshard', 'other', { rollbacks: 7 }),
  };
  t.equal(liftedRollbacks(jobs, 'reshard', 'c'), 2, 'one still lifting does not count yet; other kinds and targets do not');
  t.equal(liftedRollbacks(jobs, 'vdb-rebalance', 'c'), 9);
  t.equal(liftedRollbacks(jobs, 'reshard', 'none'), 0);
  t.end();
});

t.test('/health names the running jobs whose switch was rolled back; VDBs only to who may read them', (t) => {
  const jobs = {
    a: { id: 'a', kind: 'reshard', target: 'c', step: 'catching_up', createdAtMs: 0, updatedAtMs: 0, reshard: { rollbacks: 2, error: 'no leader' } },
    b: { id: 'b', kind: 'reshard', target: 'd', step: 'done', createdAtMs: 0, updatedAtMs: 0, reshard: { rollbacks: 1 } },
    c: { id: 'c', kind: 'vdb-rebalance', target: 'v', step: 'switching', createdAtMs: 0, updatedAtMs: 0, vdb: { op: 'split', source: 1, rollbacks: 1, error: 'slow' } },
    d: { id: 'd', kind: 'reshard', target: 'e', step: 'copying', createdAtMs: 0, updatedAtMs: 0, reshard: {} },
  } as unknown as Record<string, Job>;
  t.same(switchRollbackProblems(jobs, () => true), [
    'the reshard of collection "c" could not switch in time 2 times and was rolled back (last: no leader); it tries again after a backoff, the old shards serving meanwhile',
    'the split of VDB "v" shard 1 could not switch in time once and was rolled back (last: slow); it tries again after a backoff, the old shards serving meanwhile',
  ]);
  t.equal(switchRollbackProblems(jobs, () => false).length, 1, 'the VDB is not named to a viewer who may not read it');
  t.end();
});

t.test('an attempt run by its deadline: rolled back past it, and only then, after which the drain given up on is awaited', async (t) => {
  const d = new SwitchDeadlines(50);
  const events: string[] = [];
  await d.run('j', 1, async () => void events.push('switched'), async () => void events.push('rolled back'));
  t.same(events, ['switched']);
  await t.rejects(d.run('j', 2, async () => { throw new Error('no leader'); }, async () => void events.push('rolled back')), /no leader/, 'another failure is the step\'s');
  t.same(events, ['switched'], 'and is not rolled back');
  let finishAbandoned: () => void = () => undefined;
  const abandoned = new Promise<void>((r) => (finishAbandoned = () => (events.push('drain stopped'), r())));
  let answered = false;
  const run = d.run('j', 3, async () => { throw new SwitchTimeout('late', abandoned); }, async () => void events.push('rolled back')).then(() => (answered = true));
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  t.notOk(answered, 'rolled back, and still waiting for the drain given up on');
  finishAbandoned();
  await run;
  t.same(events, ['switched', 'rolled back', 'drain stopped'], 'rolled back, then the abandoned drain awaited');
});

t.test('a failing job rolls back or lifts first; a group it cannot reach keeps it from ending, one that is gone does not', async (t) => {
  const calls: string[] = [];
  const rollBack = async (attempt: number) => void calls.push(`rollback ${attempt}`);
  const lift = async () => void calls.push('lift');
  await undoSwitchBeforeFailing({ switchingAttempt: 30, lifting: false }, rollBack, lift);
  await undoSwitchBeforeFailing({ switchingAttempt: undefined, lifting: true }, rollBack, lift);
  await undoSwitchBeforeFailing({ switchingAttempt: undefined, lifting: false }, rollBack, lift);
  t.same(calls, ['rollback 30', 'lift'], 'the attempt switching is rolled back, a pending lift finished, nothing else done');
  const unreachable = async () => {
    throw new Error('ds1 has no leader');
  };
  await t.rejects(undoSwitchBeforeFailing({ switchingAttempt: 30, lifting: false }, unreachable, lift), /no leader/, 'the job must not end with its fence up');
  await t.rejects(undoSwitchBeforeFailing({ switchingAttempt: undefined, lifting: true }, rollBack, unreachable), /no leader/);
  const gone = async () => {
    throw new FatalJobError('virtual database v was deleted');
  };
  await undoSwitchBeforeFailing({ switchingAttempt: 30, lifting: false }, gone, lift);
  await undoSwitchBeforeFailing({ switchingAttempt: undefined, lifting: true }, rollBack, gone);
  t.pass('a deleted VDB or collection takes its fences with it');
});
