// In-process costs of two pure structures, no HTTP and no node: the flat vector index
// (`index.m: 0`, src/vector/ann/flat.ts) and the BM25 memory backend (src/vector/bm25-index.ts).
//   flat add / flat search   N vectors of D dimensions added in batches of 1,000 (µs a vector),
//                            then 200 searches for the 10 nearest (ms a search, one thread);
//                            for 100k x 16, 100k x 128 and 10k x 128
//   bm25 memory add          bench/text.ts's corpus (TEXT_BENCH_N documents, default 100000)
//                            added in batches of 1,000 (µs a document)
//   bm25 memory search       its 1,000 queries, once to warm up, then 5 passes (µs a search)
// Usage: npx tsx bench/in-process.ts [filter]
import { FlatIndex } from '../src/vector/ann/flat.js';
import { newPostingCache, openBm25 } from '../src/vector/bm25-index.js';
import type { CollectionConfig } from '../src/vector/collection-config.js';
import type { Store } from '../src/storage/db.js';
import { SEED, textCorpus, textQueries } from './text-corpus.js';
import { type BenchResult, report, selected } from './support.js';

const results: BenchResult[] = [];

if (selected('flat')) {
  for (const [n, dims] of [[100_000, 16], [100_000, 128], [10_000, 128]] as const) {
    const index = new FlatIndex({ dimensions: dims, metric: 'l2' });
    const vectors = new Float32Array(n * dims).map((_, i) => Math.sin(i * 0.37));
    let t0 = performance.now();
    for (let from = 0; from < n; from += 1_000) {
      const to = Math.min(n, from + 1_000);
      index.add(BigUint64Array.from({ length: to - from }, (_, i) => BigInt(from + i)), vectors.subarray(from * dims, to * dims));
    }
    results.push({ bench: `flat add ${n}x${dims}`, us_per_vector: ((performance.now() - t0) * 1000) / n });
    const query = new Float32Array(dims).map((_, i) => Math.cos(i));
    for (let i = 0; i < 20; i++) index.search(query, 10);
    t0 = performance.now();
    for (let i = 0; i < 200; i++) index.search(query, 10);
    results.push({ bench: `flat search ${n}x${dims}`, ms_per_search: (performance.now() - t0) / 200 });
  }
}

if (selected('bm25 memory')) {
  const texts = textCorpus(Number(process.env.TEXT_BENCH_N ?? 100_000), SEED);
  const queries = textQueries(1_000, SEED + 1);
  const config = { bm25_backend: 'memory', bm25: { k1: 1.2, b: 0.75, stopwords: 'none' } } as CollectionConfig;
  // The memory backend never touches the store.
  const index = (await openBm25(config, undefined as unknown as Store, 1, newPostingCache()))!;
  let t0 = performance.now();
  for (let from = 0; from < texts.length; from += 1_000) {
    index.prepare(texts.slice(from, from + 1_000).map((text, i) => ({ id: String(from + i), oldText: undefined, newText: text }))).apply();
  }
  results.push({ bench: `bm25 memory add n=${texts.length}`, us_per_doc: ((performance.now() - t0) * 1000) / texts.length });
  for (const q of queries) await index.search(q, 10);
  t0 = performance.now();
  for (let pass = 0; pass < 5; pass++) for (const q of queries) await index.search(q, 10);
  results.push({ bench: 'bm25 memory search k=10', us_per_search: ((performance.now() - t0) * 1000) / (5 * queries.length) });
}

report(results);
