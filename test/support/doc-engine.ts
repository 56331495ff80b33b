// A document engine over real RocksDB in a temporary directory, for tests of the engine and
// what sits on it: closed, with its store, and the directory removed at the test's teardown.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import { DocEngine } from '../../src/docdb/engine.js';
import { Store } from '../../src/storage/db.js';

export async function tempDocEngine(
  t: { teardown(fn: () => Promise<void>): void },
  o: { prefix?: string; writeWorker?: boolean; log?: Logger; compactAfterWrites?: number } = {},
): Promise<{ docs: DocEngine; store: Store }> {
  const dir = await mkdtemp(join(tmpdir(), o.prefix ?? 'firkin-docs-'));
  const store = await Store.open(dir, o.writeWorker === undefined ? {} : { writeWorker: o.writeWorker });
  const docs = await DocEngine.open({ store, hlc: new HybridClock(systemClock), log: o.log ?? pino({ level: 'silent' }), clock: systemClock, revsLimit: 1000, compactAfterWrites: o.compactAfterWrites ?? 0 });
  t.teardown(async () => {
    await docs.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { docs, store };
}
