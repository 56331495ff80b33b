// The registry of running VDB imports (`_active_tasks`): snapshots from start to end on an
// injected clock, progress against a naive oracle, and misuse caught.
import fc from 'fast-check';
import t from 'tap';
import { ImportTasks } from '../../../src/docdb/vdb/import-tasks.js';
import { fcParams } from '../../support/fc.js';

const start = { vdb: 'v', sourceDb: 'src', onConflict: 'skip', batchSize: 10, docsTotal: 200 } as const;
const counts = (docsRead: number, docsWritten = 0) => ({ docs_read: docsRead, docs_written: docsWritten, docs_skipped: 0, errors: 0 });

function manualClock(nowMs = 1_000_000) {
  return {
    nowMs: () => nowMs,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

t.test('an import is listed from start to end, its snapshots as they were', (t) => {
  const clock = manualClock();
  const tasks = new ImportTasks(clock);
  t.same(tasks.list(), [], 'nothing running');
  const first = tasks.start(start);
  t.same(first, { ...start, id: 1, counts: counts(0), progress: 0, startedMs: 1_000_000, updatedMs: 1_000_000 }, 'starts at zero');
  clock.advance(2_500);
  const reported = counts(50, 40);
  const half = tasks.update(first.id, reported);
  t.same(half, { ...first, counts: counts(50, 40), progress: 25, updatedMs: 1_002_500 }, 'counts, progress and time updated');
  reported.docs_read = 60;
  t.equal(tasks.list()[0]!.counts.docs_read, 50, 'a copy of the counts: the caller may go on counting');
  t.equal(first.counts.docs_read, 0, 'an earlier snapshot does not change');
  const second = tasks.start({ ...start, vdb: 'w' });
  t.same(tasks.list().map((x) => [x.id, x.vdb]), [[1, 'v'], [2, 'w']], 'oldest first');
  clock.advance(1_000);
  t.same(tasks.end(first.id), half, 'end gives the last snapshot');
  t.same(tasks.list(), [second], 'and takes it off the list');
  t.throws(() => tasks.end(first.id), /import task 1 is not running/, 'ending twice is a bug');
  t.throws(() => tasks.update(first.id, counts(1)), /import task 1 is not running/, 'so is updating an ended one');
  t.throws(() => tasks.update(99, counts(1)), /import task 99 is not running/, 'or one never started');
  t.end();
});

t.test('progress: docs read of the total in percent, at most 99, 0 for an empty source', (t) => {
  const clock = manualClock();
  const tasks = new ImportTasks(clock);
  const empty = tasks.start({ ...start, docsTotal: 0 });
  t.equal(tasks.update(empty.id, counts(3)).progress, 0, 'an empty source (documents came meanwhile): 0');
  const task = tasks.start(start);
  t.equal(tasks.update(task.id, counts(199)).progress, 99, '199 of 200: 99');
  t.equal(tasks.update(task.id, counts(200)).progress, 99, 'all of them read, the last batch not yet written: 99');
  t.equal(tasks.update(task.id, counts(260)).progress, 99, 'more than it started with (written meanwhile): still 99');
  clock.advance(-5_000);
  t.equal(tasks.update(task.id, counts(261)).updatedMs, 1_000_000, 'a clock stepping back does not take updatedMs back');
  t.end();
});

t.test('progress never goes back and matches the oracle', (t) => {
  const arb = fc.record({
    docsTotal: fc.nat({ max: 10_000 }),
    reads: fc.array(fc.nat({ max: 12_000 }), { maxLength: 40 }),
    ticksMs: fc.array(fc.integer({ min: -1_000, max: 5_000 }), { minLength: 40, maxLength: 40 }),
  });
  fc.assert(
    fc.property(arb, ({ docsTotal, reads, ticksMs }) => {
      const clock = manualClock();
      const tasks = new ImportTasks(clock);
      const task = tasks.start({ ...start, docsTotal });
      let prev = task;
      let oracle = 0;
      reads.forEach((docsRead, i) => {
        clock.advance(ticksMs[i]!);
        const next = tasks.update(task.id, counts(docsRead));
        // Naive: the best percentage reported so far, below 100, nothing for an empty source.
        oracle = docsTotal === 0 ? 0 : Math.max(oracle, Math.min(99, Math.floor((docsRead * 100) / docsTotal)));
        if (next.progress !== oracle) throw new Error(`progress ${next.progress}, oracle ${oracle}`);
        if (next.progress < prev.progress || next.updatedMs < prev.updatedMs) throw new Error('went back');
        if (next.startedMs !== task.startedMs) throw new Error('startedMs moved');
        prev = next;
      });
      return tasks.end(task.id) === prev && tasks.list().length === 0;
    }),
    fcParams(),
  );
  t.end();
});

t.test('cancel aborts the running imports of one VDB, each once; an ended one has no signal', (t) => {
  const tasks = new ImportTasks(manualClock());
  const a = tasks.start(start);
  const b = tasks.start(start);
  const other = tasks.start({ ...start, vdb: 'w' });
  t.equal(tasks.cancel('none'), 0, 'no import of that VDB');
  t.equal(tasks.cancel('v'), 2, 'both imports of v');
  t.ok(tasks.signal(a.id).aborted && tasks.signal(b.id).aborted, 'their signals are aborted');
  t.notOk(tasks.signal(other.id).aborted, "w's is not");
  t.equal(tasks.cancel('v'), 0, 'a cancelled import is not counted again');
  t.same(tasks.list().map((x) => x.id), [a.id, b.id, other.id], 'still listed until they end');
  tasks.end(a.id);
  t.throws(() => tasks.signal(a.id), /not running/);
  t.end();
});
