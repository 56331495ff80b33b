import fc from 'fast-check';
import t from 'tap';
import { KeyedSerialQueue, SerialQueue, runInKeyOrder, settleAll } from '../../src/core/serial.js';
import { fcParams } from '../support/fc.js';

/** A job: how many microtask turns it takes, and whether it fails at the end. */
const jobArb = fc.record({ turns: fc.nat(3), fails: fc.boolean() });

async function turns(n: number): Promise<void> {
  for (let k = 0; k < n; k++) await Promise.resolve();
}

t.test('SerialQueue: one at a time, in queue order; a failing job fails alone', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(jobArb, { minLength: 1, maxLength: 30 }), async (jobs) => {
      const queue = new SerialQueue();
      const finished: number[] = [];
      let inside = 0;
      let overlap = false;
      const outcomes = await Promise.allSettled(
        jobs.map((job, i) =>
          queue.run(async () => {
            if (inside++ > 0) overlap = true;
            await turns(job.turns);
            finished.push(i);
            inside--;
            if (job.fails) throw new Error(`job ${i}`);
            return i;
          }),
        ),
      );
      const inOrder = finished.every((x, j) => x === j) && finished.length === jobs.length;
      const ownOutcome = outcomes.every((o, i) => (jobs[i]!.fails ? o.status === 'rejected' : o.status === 'fulfilled' && o.value === i));
      await queue.idle();
      return !overlap && inOrder && ownOutcome && queue.size === 0;
    }),
    fcParams(),
  );
});

t.test('KeyedSerialQueue: in order per key, keys independent, idle keys forgotten', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), jobArb), { minLength: 1, maxLength: 30 }), async (jobs) => {
      const queue = new KeyedSerialQueue<string>();
      const inside = new Map<string, number>();
      const order: Record<string, number[]> = { a: [], b: [], c: [] };
      let overlap = false;
      await Promise.allSettled(
        jobs.map(([key, job], i) =>
          queue.run(key, async () => {
            if ((inside.get(key) ?? 0) > 0) overlap = true;
            inside.set(key, (inside.get(key) ?? 0) + 1);
            await turns(job.turns);
            order[key]!.push(i);
            inside.set(key, inside.get(key)! - 1);
            if (job.fails) throw new Error(`job ${i}`);
          }),
        ),
      );
      const inArrival = Object.values(order).every((xs) => xs.every((x, j) => j === 0 || xs[j - 1]! < x));
      return !overlap && inArrival && queue.activeKeys === 0;
    }),
    fcParams(),
  );
  // Independence: a key blocked forever does not hold up another key.
  const queue = new KeyedSerialQueue<string>();
  void queue.run('stuck', () => new Promise<void>(() => undefined));
  t.equal(await queue.run('free', async () => 1), 1);
});

t.test('runInKeyOrder: in order wherever keys are shared, overlapping otherwise, within the limit; a failure stops what depends on it', async (t) => {
  const taskArb = fc.record({ keys: fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { maxLength: 3 }), turns: fc.nat(4), fails: fc.boolean() });
  let overlapped = false;
  await fc.assert(
    fc.asyncProperty(fc.array(taskArb, { maxLength: 12 }), fc.integer({ min: 1, max: 4 }), fc.boolean(), async (tasks, limit, withFailures) => {
      const events: { start: boolean; i: number }[] = [];
      let running = 0;
      let most = 0;
      const failing = (i: number) => withFailures && tasks[i]!.fails;
      const outcome = await runInKeyOrder(
        tasks.map((task, i) => ({ ...task, i })),
        (task) => task.keys,
        async (task) => {
          events.push({ start: true, i: task.i });
          most = Math.max(most, ++running);
          await turns(task.turns);
          running--;
          events.push({ start: false, i: task.i });
          if (failing(task.i)) throw new Error(`task ${task.i}`);
        },
        limit,
      ).then(
        () => undefined,
        (err: Error) => err.message,
      );
      const startAt = (i: number) => events.findIndex((e) => e.start && e.i === i);
      const endAt = (i: number) => events.findIndex((e) => !e.start && e.i === i);
      const started = events.filter((e) => e.start).map((e) => e.i);
      const firstFailure = events.find((e) => !e.start && failing(e.i))?.i;
      if (most > limit) return false;
      if (most > 1) overlapped = true;
      // The first failure is the answer; without one, every task ran, each once.
      if (outcome !== (firstFailure === undefined ? undefined : `task ${firstFailure}`)) return false;
      if (new Set(started).size !== started.length) return false;
      if (firstFailure === undefined && started.length !== tasks.length) return false;
      // A task starts only after every earlier task sharing a key with it ended, and none failed.
      for (const j of started) {
        for (let i = 0; i < j; i++) {
          if (!tasks[i]!.keys.some((k) => tasks[j]!.keys.includes(k))) continue;
          if (endAt(i) === -1 || endAt(i) > startAt(j) || failing(i)) return false;
        }
      }
      return true;
    }),
    fcParams(500),
  );
  t.ok(overlapped, 'tasks without a shared key overlapped');
});

t.test('settleAll: answers only once every promise settled, with the first failure', async (t) => {
  const order: string[] = [];
  const slow = new Promise<void>((r) => setTimeout(() => (order.push('slow done'), r()), 30));
  const failing = Promise.reject(new Error('first'));
  const later = new Promise<void>((_, reject) => setTimeout(() => reject(new Error('second')), 10));
  await t.rejects(settleAll([slow, failing, later]).finally(() => order.push('answered')), /first/);
  t.same(order, ['slow done', 'answered'], 'the slow one had settled before the failure came back');
  await settleAll([Promise.resolve(1), Promise.resolve()]);
  t.pass('all fulfilled: resolves');
});
