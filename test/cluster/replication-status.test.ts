// `GET /vdb/:vdb/_replication`'s task status from the leader's view and the cluster's.
import fc from 'fast-check';
import t from 'tap';
import { taskStatus } from '../../src/cluster/doc-shards.js';

t.test('taskStatus: no leader first, then a node counted down, then the lag', (t) => {
  fc.assert(
    fc.property(fc.option(fc.constantFrom('n1', 'n2'), { nil: null }), fc.boolean(), fc.option(fc.nat({ max: 5 }), { nil: undefined }), fc.boolean(), (leader, down, lag, unknownAsNull) => {
      const got = taskStatus(leader, down, lag === undefined && unknownAsNull ? null : lag);
      const want = leader === null ? 'no_leader' : down ? 'down' : lag === undefined ? 'unknown' : lag === 0 ? 'in_sync' : 'catching_up';
      return got === want;
    }),
  );
  t.equal(taskStatus('n1', true, 0), 'down', 'a lag of 0 on a dead node is not in sync');
  t.end();
});
