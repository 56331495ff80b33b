// The usearch binding reserves thread contexts only when an add does not fit its capacity, for
// that call's threads. A batch add on every core after single-threaded adds had reserved must
// still succeed (it used to fail half way with "Reserve capacity ahead of insertions!",
// leaving committed documents out of the index; seen under concurrent batch inserts).
import t from 'tap';
import { addThreads, usearchEngine } from '../../src/vector/ann/usearch.js';

const DIMS = 8;
function batch(from: number, n: number): { keys: BigUint64Array; vectors: Float32Array } {
  const keys = new BigUint64Array(n);
  const vectors = new Float32Array(n * DIMS);
  for (let i = 0; i < n; i++) {
    keys[i] = BigInt(from + i);
    for (let d = 0; d < DIMS; d++) vectors[i * DIMS + d] = Math.sin((from + i) * 0.7 + d);
  }
  return { keys, vectors };
}

t.test('batch adds after single adds grew the index', (t) => {
  const index = usearchEngine.create({ dimensions: DIMS, metric: 'cosine', m: 16, efConstruction: 64 });
  let next = 0;
  const add = (n: number) => {
    const b = batch(next, n);
    index.add(b.keys, b.vectors);
    next += n;
  };
  add(600); // parallel (300 keys a thread): reserves (1365 slots here) on every core
  while (next < 1400) add(1); // a single add crosses the capacity: that reserve is for one thread
  add(600); // fits the new capacity (2730 here): no reservation, so it must not use more threads
  add(5);
  add(1400); // does not fit: reserves again
  t.equal(index.size, 3405);
  for (const k of [0, 599, 600, 1399, 1400, 1999, 2004, 3404]) t.ok(index.has(BigInt(k)), `key ${k} indexed`);
  t.end();
});

t.test('a batch add takes one thread per 256 keys, up to every core', (t) => {
  t.equal(addThreads(1, 8), 1);
  t.equal(addThreads(400, 2), 1, 'a small batch builds the same graph every run');
  t.equal(addThreads(512, 2), 2);
  t.equal(addThreads(1000, 8), 3);
  t.equal(addThreads(100_000, 8), 8);
  t.equal(addThreads(100_000, 1), 1);
  t.end();
});
