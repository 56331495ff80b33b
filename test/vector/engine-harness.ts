// A vector engine in the test's own process over a real RocksDB in a temp dir, for tests that
// inject an ANN engine or a policy, or look at storage: `restart` closes and reopens it on the
// same data, `close` ends it and removes the directory (register it with t.teardown).
import { rmSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import type { CollectionConfig } from '../../src/vector/collection-config.js';
import { VectorEngine, type VectorEngineOptions } from '../../src/vector/engine.js';
import { tempDir } from '../support/node.js';

/** A small shard's configuration for tests that open shards directly (L2, a light HNSW, disk BM25). */
export function smallShardConfig(overrides: Partial<CollectionConfig> & Pick<CollectionConfig, 'dimensions'>): CollectionConfig {
  return {
    num_shards: 1,
    replication_factor: 1,
    metric: 'l2',
    index: { m: 8, ef_construction: 40, ef_search: 64 },
    embedder: null,
    bm25_backend: 'disk',
    bm25: { k1: 1.2, b: 0.75, stopwords: [] },
    ...overrides,
  };
}

export const testEmbedderDeps = { fetch, sleep: async () => undefined, openaiKeyOrigin: 'https://api.openai.com', outbound: { allow: [], allowLoopback: false } };

export interface EngineHarness {
  readonly engine: VectorEngine;
  readonly store: Store;
  readonly dir: string;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions extends Partial<Pick<VectorEngineOptions, 'ann' | 'log' | 'maintenance'>> {
  writeWorker?: boolean;
  /** Runs on the store before the first open (e.g. to write an old catalogue entry). */
  prepare?: (store: Store) => Promise<void>;
}

export async function openTestEngine(options: HarnessOptions = {}): Promise<EngineHarness> {
  const dir = tempDir('firkin-vector-');
  const openStore = () => Store.open(path.join(dir, 'db'), { writeWorker: options.writeWorker ?? false });
  const openEngine = (store: Store) =>
    VectorEngine.open({
      store,
      ann: options.ann ?? usearchEngine,
      dataDir: dir,
      log: options.log ?? pino({ level: 'silent' }),
      embedderDeps: testEmbedderDeps,
      saveIntervalMs: 0,
      ...(options.maintenance === undefined ? {} : { maintenance: options.maintenance }),
    });
  let store = await openStore();
  await options.prepare?.(store);
  let engine = await openEngine(store);
  let open = true;
  const stop = async () => {
    if (!open) return;
    open = false;
    await engine.close(); // a second close (after the test's own) only waits
    await store.close();
  };
  return {
    get engine() {
      return engine;
    },
    get store() {
      return store;
    },
    dir,
    async restart() {
      await stop();
      store = await openStore();
      engine = await openEngine(store);
      open = true;
    },
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
