// Leftover replica data: a node that crashed while removing a replica (its collection deleted,
// or the replica moved away) removes the rest at its next start; the groups it hosts and the
// metadata group are left alone.
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { CLUSTER_SHARD_BASE, sweepLeftovers } from '../../src/cluster/vector-shards.js';
import { prefixRange } from '../../src/core/keys.js';
import { RocksLog } from '../../src/raft/rocks-log.js';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { Shard } from '../../src/vector/shard.js';
import { smallShardConfig } from '../vector/engine-harness.js';
import { tempDir } from '../support/node.js';

const CONFIG = smallShardConfig({ dimensions: 2, replication_factor: 3 });
const log = pino({ level: 'silent' });

async function count(store: Store, cf: 'vec' | 'raft', prefix: (string | number)[]): Promise<number> {
  let n = 0;
  for await (const _ of store.keys(cf, prefixRange(prefix))) n++;
  return n;
}

t.test('the replicas not hosted any more are removed, logs last', async (t) => {
  const dir = tempDir('firkin-sweep-');
  const store = await Store.open(path.join(dir, 'db'));
  t.teardown(() => store.close());
  for (const group of ['meta', 'vs3', 'vs4', 'vs12']) await RocksLog.open(store, group, { voters: ['n1'], learners: [] });
  for (const n of [3, 4, 12]) {
    const shard = await Shard.open(CLUSTER_SHARD_BASE + n, CONFIG, { store, ann: usearchEngine, indexDir: dir, log });
    await shard.apply({ kind: 'upsert', docs: [{ id: `d${n}`, text: 'x', metadata: {}, vector: Float32Array.from([1, n]) }] }, 1);
    await shard.close({ save: true });
  }
  t.same((await RocksLog.groups(store)).sort(), ['meta', 'vs12', 'vs3', 'vs4']);

  const removed = await sweepLeftovers(store, new Set(['vs4']), dir, log);
  t.same(removed.sort(), ['vs12', 'vs3']);
  t.same((await RocksLog.groups(store)).sort(), ['meta', 'vs4'], 'their logs are gone; the metadata log stays');
  t.equal(await count(store, 'vec', [CLUSTER_SHARD_BASE + 3]), 0, 'vs3 data gone');
  t.equal(await count(store, 'vec', [CLUSTER_SHARD_BASE + 12]), 0, 'vs12 data gone');
  t.ok((await count(store, 'vec', [CLUSTER_SHARD_BASE + 4])) > 0, 'the hosted replica keeps its data');
  t.same(await sweepLeftovers(store, new Set(['vs4']), dir, log), [], 'a second pass finds nothing');
});
