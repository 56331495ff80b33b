// The flat index (`index.m: 0`): against a model that keeps every vector and sorts them all by
// their distance to the query, through random adds and removes, for each metric; batch searches
// answer as single ones; a saved file loads back to the same answers and is refused when it is
// not one, or was written for other options.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import type { Metric } from '../../src/vector/collection-config.js';
import { FlatIndex } from '../../src/vector/ann/flat.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { fcParams } from '../support/fc.js';

const DIMS = 5;

/** usearch's distances: squared L2, 1 - cosine, 1 - dot. */
function distance(metric: Metric, a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
    l2 += (a[i]! - b[i]!) ** 2;
  }
  if (metric === 'l2') return l2;
  if (metric === 'ip') return 1 - dot;
  return 1 - dot / Math.sqrt(na * nb);
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(a), Math.abs(b));

/** Away from zero, so a cosine is always defined. */
const vectorArb = fc.array(fc.float({ min: Math.fround(0.05), max: 4, noNaN: true }).chain((x) => fc.constantFrom(x, -x)), { minLength: DIMS, maxLength: DIMS }).map((v) => Float32Array.from(v));

type Op = { kind: 'add'; vectors: Float32Array[] } | { kind: 'remove'; pick: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), vectors: fc.array(vectorArb, { minLength: 1, maxLength: 6 }) }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
);

/** What the index must answer: every live vector by distance; the distances of the best `count`. */
function checkSearch(index: FlatIndex, model: Map<bigint, Float32Array>, metric: Metric, query: Float32Array, count: number): void {
  const m = index.search(query, count);
  const want = [...model].map(([key, v]) => ({ key, d: distance(metric, query, v) })).sort((a, b) => a.d - b.d);
  if (m.keys.length !== Math.min(count, model.size)) throw new Error(`${m.keys.length} hits, want ${Math.min(count, model.size)}`);
  m.keys.forEach((key, i) => {
    const v = model.get(key);
    if (v === undefined) throw new Error(`hit ${key} is not live`);
    if (!close(m.distances[i]!, distance(metric, query, v))) throw new Error(`hit ${key}: distance ${m.distances[i]} for ${distance(metric, query, v)}`);
    if (!close(m.distances[i]!, want[i]!.d)) throw new Error(`hit ${i}: distance ${m.distances[i]}, the ${i}th best is ${want[i]!.d}`);
  });
}

t.test('searches are exact through adds and removes, for every metric', async (t) => {
  fc.assert(
    fc.property(fc.constantFrom<Metric>('l2', 'cosine', 'ip'), fc.array(opArb, { maxLength: 30 }), fc.array(vectorArb, { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 12 }), (metric, ops, queries, count) => {
      // A small capacity, so adds grow it.
      const index = new FlatIndex({ dimensions: DIMS, metric }, 2);
      const model = new Map<bigint, Float32Array>();
      let next = 1n;
      for (const op of ops) {
        if (op.kind === 'add') {
          const keys = BigUint64Array.from(op.vectors.map(() => next++));
          const flat = new Float32Array(op.vectors.length * DIMS);
          op.vectors.forEach((v, i) => flat.set(v, i * DIMS));
          index.add(keys, flat);
          keys.forEach((k, i) => model.set(k, op.vectors[i]!));
        } else {
          const live = [...model.keys()];
          const key = live.length === 0 ? 999n : live[op.pick % live.length]!;
          if (index.remove(key) !== model.delete(key)) throw new Error(`remove ${key} disagrees`);
        }
        if (index.size !== model.size) throw new Error(`size ${index.size}, model ${model.size}`);
        for (const q of queries) checkSearch(index, model, metric, q, count);
      }
      for (const key of model.keys()) if (!index.has(key)) throw new Error(`${key} missing`);
      if (index.has(next)) throw new Error('a key never added is present');
      // A batch answers as its queries one by one.
      const batch = new Float32Array(queries.length * DIMS);
      queries.forEach((q, i) => batch.set(q, i * DIMS));
      index.searchMany(batch, count, 0, 2).forEach((m, i) => {
        const one = index.search(queries[i]!, count);
        if (m.keys.length !== one.keys.length || m.distances.some((d, j) => !close(d, one.distances[j]!))) throw new Error(`batch answer ${i} differs`);
      });
    }),
    fcParams(200),
  );
  t.pass('exact through random adds and removes');
});

t.test('a key is added once; an empty index answers nothing', async (t) => {
  const index = new FlatIndex({ dimensions: 2, metric: 'l2' });
  t.same(index.search(Float32Array.of(1, 1), 3).keys.length, 0);
  index.add(BigUint64Array.of(1n, 2n), Float32Array.of(0, 0, 3, 3));
  t.throws(() => index.add(BigUint64Array.of(2n), Float32Array.of(1, 1)), /present already/);
  t.throws(() => index.add(BigUint64Array.of(3n, 3n), Float32Array.of(1, 1, 2, 2)), /present already/);
  t.equal(index.size, 2, 'a refused add adds nothing');
  t.same([...index.search(Float32Array.of(2.9, 2.9), 5).keys], [2n, 1n]);
  t.equal(index.keepsRemoved, false, 'a removed vector leaves nothing behind to compact');
});

t.test('save and load: the same answers; files of other options or not ours are refused', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'firkin-flat-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const options = { dimensions: 3, metric: 'cosine' as const, m: 0, efConstruction: 200 };
  const index = usearchEngine.create(options);
  t.ok(index instanceof FlatIndex, 'm 0 makes a flat index');
  const n = 500;
  const vectors = Float32Array.from({ length: n * 3 }, (_, i) => Math.sin(i * 1.37) + 0.01);
  index.add(BigUint64Array.from({ length: n }, (_, i) => BigInt(i * 7)), vectors);
  for (let k = 0; k < 100; k++) index.remove(BigInt(k * 21));
  const file = path.join(dir, 'flat.idx');
  index.save(file);
  const loaded = usearchEngine.load(file, options);
  t.equal(loaded.size, index.size);
  for (const q of [Float32Array.of(1, 0, 0), Float32Array.of(-0.3, 0.9, 0.2)]) {
    const [a, b] = [index.search(q, 10, 10), loaded.search(q, 10, 10)];
    t.same([...b.keys], [...a.keys]);
    t.same([...b.distances], [...a.distances]);
  }
  t.throws(() => usearchEngine.load(file, { ...options, dimensions: 4 }), /dimensions 3 and metric cosine/);
  t.throws(() => usearchEngine.load(file, { ...options, metric: 'l2' }), /dimensions 3 and metric cosine/);
  const bad = path.join(dir, 'bad.idx');
  writeFileSync(bad, 'not an index');
  t.throws(() => usearchEngine.load(bad, options), /not a flat index/);

  // A build from chunks writes what a save of the same vectors writes.
  const built = path.join(dir, 'built.idx');
  async function* chunks() {
    yield { keys: BigUint64Array.of(1n, 2n), vectors: Float32Array.of(1, 0, 0, 0, 1, 0) };
    yield { keys: BigUint64Array.of(3n), vectors: Float32Array.of(0, 0, 1) };
  }
  await usearchEngine.build(options, chunks(), built, new AbortController().signal);
  t.same([...usearchEngine.load(built, options).search(Float32Array.of(0.1, 0.2, 0.9), 3, 3).keys], [3n, 2n, 1n]);
});
