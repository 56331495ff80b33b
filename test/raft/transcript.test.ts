// Scenario transcripts (etcd-io/raft interaction tests): every delivered message, compared
// with the reviewed snapshot in tap-snapshots/. Regenerate with
//   npx tap --snapshot test/raft/transcript.test.ts   and review the diff like code.
import t from 'tap';
import { Cluster } from './harness.js';

t.test('election with pre-vote, then a proposal and its commit', (t) => {
  const c = new Cluster(['n1', 'n2', 'n3']);
  c.recordMessages = true;
  c.campaign('n1');
  c.propose('n1', 'a');
  t.matchSnapshot(c.transcript.join('\n'));
  t.end();
});

t.test('a lagging follower is probed back with reject hints', (t) => {
  const c = new Cluster(['n1', 'n2', 'n3']);
  c.campaign('n1');
  c.isolated.add('n3');
  c.propose('n1', 'a');
  c.propose('n1', 'b');
  c.isolated.delete('n3');
  c.transcript.length = 0;
  c.recordMessages = true;
  c.tick(['n1'], 1);
  t.matchSnapshot(c.transcript.join('\n'));
  t.end();
});

t.test('leadership transfer', (t) => {
  const c = new Cluster(['n1', 'n2', 'n3']);
  c.campaign('n1');
  c.transcript.length = 0;
  c.recordMessages = true;
  c.c('n1').transferLeadership('n2');
  c.stabilize();
  t.matchSnapshot(c.transcript.join('\n'));
  t.end();
});
