// Whether removing a dead node could leave a shard group without a caught-up majority
// (cluster/removal-risk.ts), against a direct count over random groups.
import fc from 'fast-check';
import t from 'tap';
import { CAUGHT_UP_LAG, type GroupView, removalRisks, stillCounted } from '../../src/cluster/removal-risk.js';
import { fcParams } from '../support/fc.js';

const NODES = ['n1', 'n2', 'n3', 'n4', 'n5'];

t.test('chaos seed 80: the leader gone, a wiped voter catching up: refused; a healthy group: allowed', (t) => {
  const seed80: GroupView = { group: 'vs26', replicas: ['n3', 'n5', 'n4'], leader: null, message: 'no leader reachable' };
  t.same(removalRisks('n5', [seed80]), ['vs26 has no leader now (no leader reachable)']);
  const lagging: GroupView = { group: 'vs26', replicas: ['n3', 'n5', 'n4'], leader: 'n3', voters: ['n1', 'n3', 'n5'], lag: { n1: null, n3: 0, n5: 4, n4: 5000 } };
  t.same(removalRisks('n5', [lagging]), ['vs26\'s voters are n1, n3, n5; without n5, n3 holds its log, fewer than its majority of 2']);
  const healthy: GroupView = { group: 'vs0', replicas: ['n1', 'n2', 'n3'], leader: 'n1', voters: ['n1', 'n2', 'n3'], lag: { n1: 0, n2: 3, n3: 1200 } };
  t.same(removalRisks('n3', [healthy]), [], 'the two others hold the log');
  t.same(removalRisks('n4', [healthy]), [], 'led groups that do not count the node are not its concern');
  // A replica_factor 1 shard whose one node (n3) was down past the grace period, placed on n1 by
  // the repair: no leader, and n3 still its only voter and the only holder of its data.
  t.same(removalRisks('n3', [healthy, { group: 'ds3', replicas: ['n1'], leader: null, message: 'no leader reachable' }]), ['ds3 has no leader now (no leader reachable): whether it counts n3 is unknown'], 'a group with no leader, wherever it is placed');
  t.same(removalRisks('n3', [{ group: 'ds3', replicas: ['n1'], leader: null, message: 'no leader reachable' }], 'placed'), [], 'unless only placed groups are asked about (the chaos runner)');
  t.end();
});

t.test('a group is at risk iff it has no leader (and, asked about placed groups only, places the node), or counts the node as a voter and fewer than a majority of the others are the leader or caught up', (t) => {
  const view = fc.record({
    voters: fc.subarray(NODES, { minLength: 1 }),
    replicas: fc.subarray(NODES, { minLength: 1 }),
    leaderAt: fc.option(fc.nat(4), { nil: undefined }),
    lags: fc.array(fc.option(fc.nat(2 * CAUGHT_UP_LAG), { nil: null }), { minLength: 5, maxLength: 5 }),
  });
  fc.assert(
    fc.property(view, fc.constantFrom(...NODES), fc.constantFrom('all' as const, 'placed' as const), ({ voters, replicas, leaderAt, lags }, node, leaderless) => {
      const leader = leaderAt === undefined ? null : voters[leaderAt % voters.length]!;
      const lag = Object.fromEntries(NODES.map((n, i) => [n, n === leader ? 0 : lags[i]!]));
      const g: GroupView = leader === null ? { group: 'g', replicas, leader, message: 'x' } : { group: 'g', replicas, leader, voters, lag };
      const atRisk = removalRisks(node, [g], leaderless).length > 0;
      if (leader === null) return atRisk === (leaderless === 'all' || replicas.includes(node));
      if (!voters.includes(node)) return !atRisk;
      let holding = 0;
      for (const v of voters) if (v !== node && (v === leader || (lag[v] !== null && lag[v]! <= CAUGHT_UP_LAG))) holding++;
      return atRisk === holding * 2 <= voters.length;
    }),
    fcParams(500),
  );
  t.end();
});

t.test("chaos seed 84: a dead leaving node's leave waits while a group still counts it, or has no leader to say", (t) => {
  const ds2: GroupView = { group: 'ds2', replicas: ['n4', 'n1', 'n5'], leader: 'n3', voters: ['n2', 'n3', 'n4', 'n5'], learners: [] };
  t.equal(stillCounted('n2', [ds2]), 'ds2 still counts n2 as a voter');
  t.equal(stillCounted('n2', [{ ...ds2, voters: ['n3', 'n4', 'n5'], learners: ['n2'] }]), 'ds2 still lists n2 as a learner');
  t.equal(stillCounted('n2', [{ group: 'ds2', replicas: ['n4', 'n1', 'n5'], leader: null, message: 'no leader reachable' }]), 'ds2 has no leader now (no leader reachable): whether it still counts n2 is unknown');
  t.equal(stillCounted('n2', [{ ...ds2, voters: ['n3', 'n4', 'n5'] }]), undefined, 'no group counts it: its leave may end');
  t.end();
});

t.test('stillCounted names a group iff some group has no leader or counts the node', (t) => {
  const view = fc.record({ voters: fc.subarray(NODES, { minLength: 1 }), learners: fc.subarray(NODES), led: fc.boolean() });
  fc.assert(
    fc.property(fc.array(view, { maxLength: 4 }), fc.constantFrom(...NODES), (views, node) => {
      const groups = views.map((v, i) => (v.led ? { group: `g${i}`, replicas: [], leader: v.voters[0]!, voters: v.voters, learners: v.learners } : { group: `g${i}`, replicas: [], leader: null }));
      const counted = views.some((v) => !v.led || v.voters.includes(node) || v.learners.includes(node));
      return (stillCounted(node, groups) !== undefined) === counted;
    }),
    fcParams(),
  );
  t.end();
});
