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
  // RocksDB properties are cheap in-memory reads: sample them at scrape time.
  const rocks = (name: string, help: string, pick: (s: ReturnType<Store['stats']>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(pick(store.stats()));
      },
    });
  rocks('firkin_rocksdb_estimate_keys', 'Estimated number of keys (RocksDB estimate-num-keys)', (s) => s.estimateKeys);
  rocks('firkin_rocksdb_live_data_bytes', 'Estimated live data size', (s) => s.liveDataBytes);
  rocks('firkin_rocksdb_sst_files_bytes', 'Total size of SST files', (s) => s.sstFilesBytes);
  rocks('firkin_rocksdb_memtable_bytes', 'Current size of all memtables', (s) => s.memtableBytes);
  rocks('firkin_storage_thread_batches', 'Batches handed to the storage write thread since start', (s) => s.threadBatches);
  rocks('firkin_storage_thread_writes', 'RocksDB writes the storage write thread made of them since start (fewer: batches that queued up share one write and fsync)', (s) => s.threadWrites);
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
