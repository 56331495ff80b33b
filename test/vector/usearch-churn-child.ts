// The child of usearch-churn.test.ts: a shard's label churn on the product's usearch wrapper.
// New documents take new labels and deleted ones never come back (shard.ts), so the index sees
// keys added and older ones removed, while it stays small. Prints "done <size>" at the end.
import { usearchEngine } from '../../src/vector/ann/usearch.js';

const dims = 4;
const live = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 20_000);
const index = usearchEngine.create({ dimensions: dims, metric: 'cosine', m: 16, efConstruction: 64, precision: 'f16' });
const vector = (i: number) => Float32Array.from({ length: dims }, (_, d) => Math.sin(i * 7 + d) + 1.5);
for (let i = 0; i < rounds; i++) {
  index.add(BigUint64Array.of(BigInt(i)), vector(i));
  if (i >= live && !index.remove(BigInt(i - live))) throw new Error(`key ${i - live} was not there to remove`);
  // An update keeps its label: removed and added again.
  if (i % 5 === 0 && index.remove(BigInt(i))) index.add(BigUint64Array.of(BigInt(i)), vector(i + 1));
}
const hits = index.search(vector(rounds - 1), live, 32);
process.stdout.write(`done ${index.size} ${hits.keys.length}\n`);
