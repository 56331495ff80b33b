// A batch of queries through usearch's own threads answers each query as a lone search does,
// on an index built here and on one loaded from a file (whose thread contexts the binding
// reserved at load), with more threads than cores and with an empty index.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { fcParams } from '../support/fc.js';

const DIMS = 8;
const options = { dimensions: DIMS, metric: 'l2' as const, m: 16, efConstruction: 64 };

function vectors(seed: number, n: number): Float32Array {
  const out = new Float32Array(n * DIMS);
  for (let i = 0; i < out.length; i++) out[i] = Math.sin(seed * 12.9898 + i * 78.233);
  return out;
}

t.test('searchMany equals one search per query', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'firkin-search-many-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const built = usearchEngine.create(options);
  const n = 500;
  built.add(BigUint64Array.from({ length: n }, (_, i) => BigInt(i)), vectors(1, n));
  built.save(join(dir, 'index'));
  const loaded = usearchEngine.load(join(dir, 'index'), options);
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 64 }), fc.integer({ min: 1, max: 4 }), (seed, queries, count, extraEf, threads) => {
      const q = vectors(seed, queries);
      for (const index of [built, loaded]) {
        const many = index.searchMany(q, count, count + extraEf, threads);
        if (many.length !== queries) return false;
        for (let i = 0; i < queries; i++) {
          const one = index.search(q.subarray(i * DIMS, (i + 1) * DIMS), count, count + extraEf);
          if (JSON.stringify(Array.from(many[i]!.keys, String)) !== JSON.stringify(Array.from(one.keys, String))) return false;
          if (JSON.stringify(Array.from(many[i]!.distances)) !== JSON.stringify(Array.from(one.distances))) return false;
        }
      }
      return true;
    }),
    fcParams(50),
  );
  const empty = usearchEngine.create(options);
  t.same(empty.searchMany(vectors(3, 3), 5, 10, 2).map((m) => m.keys.length), [0, 0, 0], 'an empty index answers every query with nothing');
  t.same(built.searchMany(new Float32Array(0), 5, 10, 2), [], 'no queries, no answers');
  t.end();
});
