// Searches asked together run as one batch per (count, ef); a lone one runs alone; an error
// reaches every search of its batch and no other.
import t from 'tap';
import type { AnnIndex, AnnMatches } from '../../src/vector/ann/ann-index.js';
import { BatchedSearch, PARALLEL_SEARCH_MIN } from '../../src/vector/ann/batched-search.js';

function fakeIndex(calls: string[], failEf?: number): AnnIndex {
  const answer = (q: Float32Array): AnnMatches => ({ keys: BigUint64Array.of(BigInt(q[0]!)), distances: Float32Array.of(q[0]!) });
  return {
    size: 10,
    keepsRemoved: true,
    add: () => undefined,
    remove: () => false,
    has: () => false,
    save: () => undefined,
    search(q, count, ef) {
      calls.push(`one ${count}:${ef}`);
      if (ef === failEf) throw new Error('broken');
      return answer(q);
    },
    searchMany(qs, count, ef, threads) {
      calls.push(`many ${qs.length / 2}x ${count}:${ef} on ${threads}`);
      if (ef === failEf) throw new Error('broken');
      return Array.from({ length: qs.length / 2 }, (_, i) => answer(qs.subarray(i * 2, i * 2 + 2)));
    },
  };
}

t.test('one batch per (count, ef), answers in order, errors kept to their batch', async (t) => {
  const calls: string[] = [];
  const b = new BatchedSearch(() => fakeIndex(calls, 99), 2);
  const q = (x: number) => Float32Array.of(x, 0);
  const asked = [b.search(q(1), 5, 10), b.search(q(2), 5, 10), b.search(q(3), 5, 20), b.search(q(4), 5, 10), b.search(q(5), 5, 99), b.search(q(6), 5, 99)];
  const settled = await Promise.allSettled(asked);
  t.same(calls, ['many 3x 5:10 on 1', 'one 5:20', 'many 2x 5:99 on 1']);
  t.same(settled.slice(0, 4).map((s) => (s.status === 'fulfilled' ? Number(s.value.keys[0]) : 'rejected')), [1, 2, 3, 4], 'each search gets its own answer');
  t.same(settled.slice(4).map((s) => s.status), ['rejected', 'rejected']);
  calls.length = 0;
  t.equal(Number((await b.search(q(7), 5, 10)).keys[0]), 7);
  t.same(calls, ['one 5:10'], 'a lone search later runs alone');
});

t.test('searches asked by different callbacks of one event-loop turn share a batch', async (t) => {
  // Two requests read in one poll phase each run in their own callback, with microtasks
  // drained between them: the batch must wait for the turn's end to see both.
  const calls: string[] = [];
  const b = new BatchedSearch(() => fakeIndex(calls), 2);
  const answers = await Promise.all([1, 2, 3].map((x) => new Promise<AnnMatches>((resolve) => setImmediate(() => void b.search(Float32Array.of(x, 0), 5, 10).then(resolve)))));
  t.same(calls, ['many 3x 5:10 on 1']);
  t.same(answers.map((m) => Number(m.keys[0])), [1, 2, 3]);
});

t.test('a small batch stays on the calling thread; a large one gets the index threads, never more threads than searches', async (t) => {
  const calls: string[] = [];
  const batch = (n: number, threads: number) => {
    const b = new BatchedSearch(() => fakeIndex(calls), threads);
    return Promise.all(Array.from({ length: n }, (_, i) => b.search(Float32Array.of(i, 0), 5, 10)));
  };
  await batch(PARALLEL_SEARCH_MIN - 1, 2);
  await batch(PARALLEL_SEARCH_MIN, 2);
  await batch(100, 8);
  await batch(PARALLEL_SEARCH_MIN, 64);
  t.same(calls, [`many ${PARALLEL_SEARCH_MIN - 1}x 5:10 on 1`, `many ${PARALLEL_SEARCH_MIN}x 5:10 on 2`, 'many 100x 5:10 on 8', `many ${PARALLEL_SEARCH_MIN}x 5:10 on ${PARALLEL_SEARCH_MIN}`]);
});
