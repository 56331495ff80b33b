// The Cluster page's shards × nodes grid: one model for collection and VDB shards.
import t from 'tap';
import { fromCollectionShard, fromVdbShard, gridCell, gridColumns } from '../../console/src/shard-grid.js';

const cells = (row: ReturnType<typeof fromVdbShard>, nodes: string[]) => nodes.map((n) => gridCell(row, n));

t.test('a collection shard: leader, follower and learner with their lag', (t) => {
  const row = fromCollectionShard({ shard: 0, replicas: ['n1', 'n2', 'n3'], leader: 'n1', voters: ['n1', 'n2'], learners: ['n3'], lag: { n1: 0, n2: 2, n3: null } });
  t.same(cells(row, ['n1', 'n2', 'n3', 'n4']), [
    { role: 'leader', text: 'leader' },
    { role: 'follower', text: 'follower lag 2' },
    { role: 'learner', text: 'learner lag ?' },
    { role: '', text: '' },
  ]);
  t.end();
});

t.test('an unreachable collection shard: no leader, members shown as replicas, the node\'s message kept', (t) => {
  const row = fromCollectionShard({ shard: 1, replicas: ['n1', 'n2'], leader: null, message: 'no leader reachable' });
  t.equal(row.leader, null);
  t.equal(row.note, 'no leader reachable');
  t.same(cells(row, ['n1', 'n2']), [{ role: 'replica', text: 'replica' }, { role: 'replica', text: 'replica' }]);
  t.end();
});

t.test('a VDB shard: leader and replicas (the VDB API does not name learners), read-only kept', (t) => {
  const row = fromVdbShard({ shard_id: 2, primary: 'n2', replicas: ['n1', 'n2', 'n3'], status: 'readonly', lag: { n1: 0, n2: 0, n3: 5 } });
  t.equal(row.readonly, true);
  t.equal(row.note, undefined);
  t.same(cells(row, ['n1', 'n2', 'n3']), [
    { role: 'replica', text: 'replica lag 0' },
    { role: 'leader', text: 'leader' },
    { role: 'replica', text: 'replica lag 5' },
  ]);
  t.end();
});

t.test('a VDB shard with no leader says so', (t) => {
  const row = fromVdbShard({ shard_id: 0, primary: null, replicas: ['n1', 'n2', 'n3'], status: 'unavailable' });
  t.same([row.leader, row.note, row.readonly], [null, 'no leader', false]);
  t.same(cells(row, ['n1']), [{ role: 'replica', text: 'replica' }]);
  t.end();
});

t.test('standalone: every VDB shard is local to the node named primary, which becomes a column', (t) => {
  const rows = [0, 1].map((i) => fromVdbShard({ shard_id: i, primary: 'solo', replicas: [], status: 'active' }));
  t.same(gridColumns([], rows), ['solo']);
  t.same(rows.map((r) => gridCell(r, 'solo')), [{ role: 'local', text: 'local' }, { role: 'local', text: 'local' }]);
  t.end();
});

t.test('columns: the cluster\'s nodes in order, then any replica the list lacks', (t) => {
  const rows = [fromVdbShard({ shard_id: 0, primary: 'n1', replicas: ['n4', 'n1'], status: 'active' })];
  t.same(gridColumns(['n2', 'n1'], rows), ['n2', 'n1', 'n4']);
  t.end();
});
