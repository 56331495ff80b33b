import fc from 'fast-check';
import t from 'tap';
import { KeyedSerialQueue, SerialQueue } from '../../src/core/serial.js';
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
