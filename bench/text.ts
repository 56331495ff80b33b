// BM25 keyword search on the corpus, generated deterministically: TEXT_BENCH_N
// documents (default 100000) of 8 to 40 words drawn from a Zipf distribution (vocabulary
// 50,000, s = 1.07), and TEXT_BENCH_QUERIES queries (default 1000) of 1 to 3 distinct words
// from the same distribution, the 20 most common words excluded. Queries are OR, top-10.
// The node runs in its own process. Cases (filter by name with the first argument):
//   insert disk / insert memory   batched inserts (CBOR, 1000 docs per request), docs/s
//   insert disk flat / insert memory flat  the same into a collection with no HNSW graph
//                                 (`index: {m: 0}`: a flat vector index); no searches
//   bm25 disk c=N / bm25 memory c=N  QPS, p50/p99 with 1 and 8 clients; `exact` is the share
//                                 of queries whose top-10 ids equal an exact client-side BM25
//   lancedb index / lancedb c=N   the peer, LanceDB's full-text search (BM25 over Tantivy-style
//                                 postings), in this process on the same corpus and queries,
//                                 when it is installed: `npm install --prefix bench/lancedb`
//                                 (kept out of the project's install). Its tokenizer is set to
//                                 split and lowercase as Firkin's does (no stemming or stop
//                                 words); `exact` compares its top-10 with the same exact BM25.
// Both systems get the same unmeasured passes first (`warmUp`: 1 client, then 5 x 8 clients).
// Usage: npx tsx bench/text.ts [filter]   (TEXT_BENCH_N=2000 for a quick check)
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { type Posting, rankBm25, termFrequencies } from '../src/vector/bm25.js';
import { tokenize } from '../src/vector/tokenize.js';
import { tempDir } from '../test/support/node.js';
import { agent, call, drive } from './http-client.js';
import { SEED, textCorpus, textQueries } from './text-corpus.js';
import { type BenchResult, report, selected, spawnBenchNode } from './support.js';

const N = Number(process.env.TEXT_BENCH_N ?? 100_000);
const QUERIES = Number(process.env.TEXT_BENCH_QUERIES ?? 1_000);
const K = 10;
const BATCH = 1_000;
/** Exact top-k per query, computed here from the corpus (Firkin's formula, k1 1.2, b 0.75). */
function exactTopK(texts: readonly string[], queries: readonly string[]): string[][] {
  const postings = new Map<string, Posting[]>();
  let totalLength = 0;
  texts.forEach((text, i) => {
    const tokens = tokenize(text);
    totalLength += tokens.length;
    for (const [term, tf] of termFrequencies(tokens)) {
      let list = postings.get(term);
      if (list === undefined) postings.set(term, (list = []));
      list.push({ docId: String(i), tf, docLength: tokens.length });
    }
  });
  return queries.map((q) => {
    const byTerm = new Map<string, Posting[]>();
    for (const term of new Set(tokenize(q))) {
      const list = postings.get(term);
      if (list !== undefined) byTerm.set(term, list);
    }
    return rankBm25(byTerm, { docCount: texts.length, totalLength }, { k1: 1.2, b: 0.75 }, K).map((h) => h.id);
  });
}

const LANCEDB_DIR = new URL('./lancedb/', import.meta.url);

/** The little of LanceDB's API used here (its types are not installed with the project). */
interface LanceDb {
  connect(dir: string): Promise<{ createTable(name: string, rows: Record<string, unknown>[]): Promise<LanceTable>; close(): void }>;
  Index: { fts(options: Record<string, unknown>): unknown };
}
interface LanceTable {
  createIndex(column: string, options: { config: unknown }): Promise<void>;
  query(): { fullTextSearch(query: string): { select(columns: string[]): { limit(k: number): { toArray(): Promise<unknown[]> } } } };
  close(): void;
}

/**
 * Unmeasured passes before a system's measured ones, the same for both: one with one client,
 * then WARM_PASSES with 8. A node fresh from its inserts answered the 8-client pass 2-3x
 * slower than after 3,000 more searches (1,104 -> 1,443 -> 2,430 -> 3,079/s over four passes of
 * the memory backend, with a CPU-bound loop in the client timing the same all along; after 45 s
 * idle it started low again): the JIT and the heap settling, which one pass did not cover.
 */
const WARM_PASSES = 5;
async function warmUp(queries: readonly string[], search: (query: string) => Promise<unknown>): Promise<void> {
  await drive(queries, 1, async (query) => void (await search(query)));
  for (let i = 0; i < WARM_PASSES; i++) await drive(queries, 8, async (query) => void (await search(query)));
}

/** LanceDB's FTS on the same corpus: index build docs/s, then QPS at 1 and 8 concurrent searches. */
async function lancedbPeer(texts: readonly string[], queries: readonly string[], truth: readonly string[][]): Promise<BenchResult[]> {
  if (!existsSync(new URL('node_modules/@lancedb/lancedb', LANCEDB_DIR))) {
    console.error('bench/text.ts: LanceDB is not installed (npm install --prefix bench/lancedb); its rows are skipped');
    return [];
  }
  const lancedb = (await import(pathToFileURL(createRequire(new URL('package.json', LANCEDB_DIR)).resolve('@lancedb/lancedb')).href)) as LanceDb;
  const dir = tempDir('firkin-bench-lancedb-');
  const out: BenchResult[] = [];
  try {
    const db = await lancedb.connect(dir);
    const start = performance.now();
    const table = await db.createTable('docs', texts.map((text, i) => ({ id: String(i), text })));
    await table.createIndex('text', { config: lancedb.Index.fts({ withPosition: false, stem: false, removeStopWords: false, asciiFolding: false, lowercase: true }) });
    out.push({ bench: `lancedb index n=${texts.length}`, 'docs/s': texts.length / ((performance.now() - start) / 1000) });
    const search = async (query: string) => (await table.query().fullTextSearch(query).select(['id', '_score']).limit(K).toArray()) as { id: string }[];
    await warmUp(queries, (query) => search(query)); // as for the node
    for (const clients of [1, 8]) {
      let same = 0;
      const r = await drive(queries, clients, async (query, i) => {
        const ids = (await search(query)).map((h) => h.id);
        if (ids.length === truth[i]!.length && ids.every((id, j) => id === truth[i]![j])) same++;
      });
      out.push({ bench: `lancedb c=${clients}`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, exact: same / queries.length });
    }
    table.close();
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

/** Inserts the corpus in CBOR batches of BATCH documents, one request at a time; docs/s. */
async function insertCorpus(collection: string, texts: readonly string[]): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < texts.length; i += BATCH) {
    const documents = texts.slice(i, i + BATCH).map((text, j) => ({ id: String(i + j), text }));
    await call(node.url, 'POST', `/vectordb/collections/${collection}/docs`, { documents }, true);
  }
  return texts.length / ((performance.now() - start) / 1000);
}

const results: BenchResult[] = [];
const dataDir = tempDir('firkin-bench-text-');
const node = await spawnBenchNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000', SERVICE_LOG_LEVEL: 'info' });
try {
  const texts = textCorpus(N, SEED);
  const queries = textQueries(QUERIES, SEED + 1);
  const truth = exactTopK(texts, queries);
  if (selected('lancedb')) results.push(...(await lancedbPeer(texts, queries, truth)));
  for (const backend of ['disk', 'memory'] as const) {
    if (!selected(`insert ${backend}`) && !selected(`bm25 ${backend}`)) continue;
    const c = `text_${backend}`;
    // The hash embedder: a collection needs vectors; it is the cheapest one.
    await call(node.url, 'PUT', `/vectordb/collections/${c}`, { dimensions: 16, metric: 'cosine', embedder: { type: 'hash' }, bm25_backend: backend });
    results.push({ bench: `insert ${backend} n=${N}`, 'docs/s': await insertCorpus(c, texts) });
    await warmUp(queries, (query) => call(node.url, 'POST', `/vectordb/collections/${c}/search/bm25`, { query, k: K }));
    for (const clients of [1, 8]) {
      let same = 0;
      const r = await drive(queries, clients, async (query, i) => {
        const res = await call(node.url, 'POST', `/vectordb/collections/${c}/search/bm25`, { query, k: K });
        const ids = (res.results as { id: string }[]).map((h) => h.id);
        if (ids.length === truth[i]!.length && ids.every((id, j) => id === truth[i]![j])) same++;
      });
      results.push({ bench: `bm25 ${backend} c=${clients}`, qps: r.qps, p50_ms: r.p50, p99_ms: r.p99, exact: same / queries.length });
    }
  }
  // The same inserts into a collection without an HNSW graph (`index.m: 0`, a flat vector
  // index, as a keyword-first collection would be made): what BM25 and the write cost alone.
  for (const backend of ['disk', 'memory'] as const) {
    if (!selected(`insert ${backend} flat`)) continue;
    const c = `text_${backend}_flat`;
    await call(node.url, 'PUT', `/vectordb/collections/${c}`, { dimensions: 16, metric: 'cosine', embedder: { type: 'hash' }, bm25_backend: backend, index: { m: 0 } });
    results.push({ bench: `insert ${backend} flat n=${N}`, 'docs/s': await insertCorpus(c, texts) });
  }
} finally {
  agent.destroy();
  await node.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
report(results);
