// One prom-client registry per node (not the global default): tests run several nodes in
// one process, and each must report only its own numbers.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from './storage/db.js';

export interface Metrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
}

export function createMetrics(store: Store): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpRequests = new Counter({
    name: 'firkin_http_requests_total',
    help: 'HTTP requests by route pattern, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'firkin_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  // Sampled at scrape time: the write thread's counters, and the data directory's files (a
  // listing at most every few seconds: `Store.files`).
  const gauge = (name: string, help: string, sample: () => number | Promise<number>) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        this.set(await sample());
      },
    });
  gauge('firkin_rocksdb_sst_files', 'RocksDB table files in the data directory, every column family (each kept open: see firkin_open_files_limit)', async () => (await store.files()).tableFiles);
  gauge('firkin_rocksdb_sst_files_bytes', 'Total size of the RocksDB table files, every column family', async () => (await store.files()).tableBytes);
  gauge('firkin_rocksdb_wal_bytes', 'Total size of the RocksDB write-ahead log files', async () => (await store.files()).walBytes);
  gauge('firkin_open_files_limit', 'The process soft limit on open files (ulimit -n); -1 when unknown or unlimited', async () => (await store.files()).openFilesLimit ?? -1);
  gauge('firkin_storage_thread_batches', 'Batches handed to the storage write thread since start', () => store.stats().threadBatches);
  gauge('firkin_storage_thread_writes', 'RocksDB writes the storage write thread made of them since start (fewer: batches that queued up share one write and fsync)', () => store.stats().threadWrites);
  return { registry, httpRequests, httpDuration };
}

/** What a bounded cache reports: its entries, and the size it counts them at (bytes here). */
export interface SizedCache {
  readonly size: number;
  readonly calculatedSize: number;
}

/** The node's shared caches by name, read at scrape time. */
export function registerCacheMetrics(registry: Registry, caches: Readonly<Record<string, SizedCache>>): void {
  const gauge = (name: string, help: string, pick: (c: SizedCache) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['cache'] as const,
      registers: [registry],
      collect() {
        for (const [cache, c] of Object.entries(caches)) this.set({ cache }, pick(c));
      },
    });
  gauge('firkin_cache_entries', 'Entries in a node-wide cache (payloads: vector search hits; bm25_postings: decoded BM25 term lists of the disk backend; doc_records, doc_bodies: the document engine\'s records and leaf bodies)', (c) => c.size);
  gauge('firkin_cache_bytes', 'Bytes a node-wide cache counts its entries at (bounded: see docs/vector.md, docs/docdb.md; 0 for doc_records, bounded by entries)', (c) => c.calculatedSize);
}
