// Which database names belong to a VDB's shards (`<vdb>_s<n>`): on a cluster node a plain
// database may not take one while the VDB exists, and a VDB is not made while a plain database
// holds one (test/cluster/vdb-shards.test.ts runs both over real nodes).
import fc from 'fast-check';
import t from 'tap';
import { isVdbName, shardDb, shardOfDbName } from '../../../src/docdb/vdb/catalog.js';
import { reservedShardName } from '../../../src/cluster/doc-shards.js';
import type { MetaState } from '../../../src/cluster/meta-state.js';
import { fcParams } from '../../support/fc.js';

const vdbName = fc.stringMatching(/^[a-z][a-z0-9_$()+-]{0,20}$/).filter(isVdbName);
const dbName = fc.stringMatching(/^[a-z][a-z0-9_$()+/-]{0,30}$/);
const stateWith = (vdbs: readonly string[]) => ({ vdbs: Object.fromEntries(vdbs.map((v) => [v, {}])) }) as unknown as MetaState;

t.test('a shard database name reads back as its VDB and shard', async (t) => {
  fc.assert(
    fc.property(vdbName, fc.nat(1_000_000), (vdb, shard) => {
      const parsed = shardOfDbName(shardDb(vdb, shard));
      // `a_s1_s2`: the VDB part is everything before the last `_s<n>`.
      return parsed?.vdb === vdb && parsed.shard === shard;
    }),
    fcParams(500),
  );
  t.pass('every (vdb, shard) pair');
});

t.test('any other name is no shard\'s, and a name is reserved exactly while its VDB exists', async (t) => {
  fc.assert(
    fc.property(dbName, fc.array(vdbName, { maxLength: 4 }), (db, vdbs) => {
      const parsed = shardOfDbName(db);
      if (parsed !== undefined && shardDb(parsed.vdb, parsed.shard) !== db) return false;
      const reserved = reservedShardName(db, stateWith(vdbs)) !== undefined;
      return reserved === (parsed !== undefined && vdbs.includes(parsed.vdb));
    }),
    fcParams(500),
  );
  fc.assert(
    fc.property(vdbName, fc.nat(1_000), fc.array(vdbName, { maxLength: 4 }), fc.boolean(), (vdb, shard, others, exists) => {
      const vdbs = exists ? [...others, vdb] : others.filter((o) => o !== vdb);
      return (reservedShardName(shardDb(vdb, shard), stateWith(vdbs)) !== undefined) === exists;
    }),
    fcParams(500),
  );
  for (const [db, shard] of [
    ['v_s0', { vdb: 'v', shard: 0 }],
    ['v_s12', { vdb: 'v', shard: 12 }],
    ['a_s1_s2', { vdb: 'a_s1', shard: 2 }],
    ['v_s01', undefined], // not a number shardDb writes
    ['v_s', undefined],
    ['_s1', undefined],
    ['v_sx', undefined],
    ['v/x_s1', undefined], // no VDB is named v/x
  ] as const) t.same(shardOfDbName(db), shard, db);
  t.match(reservedShardName('v_s3', stateWith(['v'])), /^database name "v_s3" is reserved: the cluster's virtual database "v" keeps its shards' replicas under the names v_s<n>/);
  t.equal(reservedShardName('v_s3', stateWith(['w'])), undefined);
});
