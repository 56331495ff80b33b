// The voter planner, driven to a fixpoint as the leader would drive it (one step per round,
// each step applied to the conf state), on random clusters.
import t from 'tap';
import fc from 'fast-check';
import type { NodeRecord, NodeStatus } from '../../src/cluster/meta-state.js';
import { largestOddAtMost, planVoters } from '../../src/cluster/voters.js';
import type { ConfState } from '../../src/raft/types.js';
import { fcParams } from '../support/fc.js';

const GRACE = 10_000;
const NOW = 100_000;
const rec = (name: string, status: NodeStatus, statusSinceMs = 0): NodeRecord => ({ name, incarnation: 'i', http: '', grpc: '', zone: 'z', status, joinedAtMs: 0, statusSinceMs });

/** Run the planner until it has nothing to do; returns the final conf and the steps taken. */
function settle(conf: ConfState, nodes: Record<string, NodeRecord>, leader: string, maxVoters = 5, placed: ReadonlySet<string> = new Set()) {
  const steps: string[] = [];
  let lead = leader;
  for (let i = 0; i < 50; i++) {
    const step = planVoters({ conf, nodes, caughtUp: new Set(conf.learners), leader: lead, placed, maxVoters, deadVoterGraceMs: GRACE, nowMs: NOW });
    if (step === undefined) return { conf, steps, leader: lead };
    if (step.kind === 'transfer') {
      steps.push(`transfer ${step.to}`);
      lead = step.to;
      continue;
    }
    const { type, node } = step.change;
    steps.push(`${type} ${node}`);
    const voters = conf.voters.filter((v) => v !== node);
    const learners = conf.learners.filter((l) => l !== node);
    if (type === 'addVoter') voters.push(node);
    if (type === 'addLearner') learners.push(node);
    // Invariant of every single step: the group keeps a voter, and removing a voter never
    // drops one that is alive unless it is leaving.
    if (type === 'removeNode' && conf.voters.includes(node)) {
      const s = nodes[node]!.status;
      t.ok(s === 'down' || s === 'leaving' || s === 'left', `removed voter ${node} was ${s}`);
    }
    t.ok(voters.length >= 1, 'never removes the last voter');
    conf = { voters: voters.sort(), learners: learners.sort() };
  }
  throw new Error(`planner did not settle: ${steps.join(', ')}`);
}

t.test('examples: 5 nodes are 5 voters, a 6th is a learner, a removed voter is replaced', (t) => {
  const names = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
  const nodes = Object.fromEntries(names.map((n) => [n, rec(n, 'up')]));
  let r = settle({ voters: ['n1'], learners: ['n2', 'n3', 'n4', 'n5', 'n6'] }, nodes, 'n1');
  t.same(r.conf, { voters: ['n1', 'n2', 'n3', 'n4', 'n5'], learners: ['n6'] });
  // n3 is removed by an operator (left): n6 is promoted.
  nodes.n3 = rec('n3', 'left');
  r = settle(r.conf, nodes, 'n1');
  t.same(r.conf, { voters: ['n1', 'n2', 'n4', 'n5', 'n6'], learners: [] });
  // A voter down past the grace period, with no learner to replace it: kept (4 live is even).
  nodes.n5 = rec('n5', 'down', NOW - GRACE);
  r = settle(r.conf, nodes, 'n1');
  t.same(r.conf.voters, ['n1', 'n2', 'n4', 'n5', 'n6']);
  t.end();
});

t.test('a dead voter is replaced by a ready learner, promoted first', (t) => {
  const nodes = { n1: rec('n1', 'up'), n2: rec('n2', 'up'), n3: rec('n3', 'down', NOW - GRACE), n4: rec('n4', 'up') };
  const r = settle({ voters: ['n1', 'n2', 'n3'], learners: ['n4'] }, nodes, 'n1');
  t.same(r.steps, ['addVoter n4', 'removeNode n3']);
  t.same(r.conf, { voters: ['n1', 'n2', 'n4'], learners: [] });
  t.end();
});

t.test('a leaving leader hands over, then leaves the voters', (t) => {
  const nodes = { n1: rec('n1', 'leaving'), n2: rec('n2', 'up'), n3: rec('n3', 'up') };
  const r = settle({ voters: ['n1', 'n2', 'n3'], learners: [] }, nodes, 'n1');
  t.same(r.steps, ['transfer n2', 'removeNode n1']);
  t.end();
});

t.test('a leaving node stays in the group while a shard places it, then leaves it', (t) => {
  const nodes = { n1: rec('n1', 'leaving'), n2: rec('n2', 'up'), n3: rec('n3', 'up'), n4: rec('n4', 'leaving') };
  const conf = { voters: ['n1', 'n2', 'n3'], learners: ['n4'] };
  // Still placed: the leader hands over (a leaving node should not lead), nothing is removed,
  // so both still see the metadata entries that move their replicas away.
  let r = settle(conf, nodes, 'n1', 5, new Set(['n1', 'n4']));
  t.same(r.steps, ['transfer n2']);
  t.same(r.conf, conf);
  // Their replicas moved: both leave the group.
  r = settle(r.conf, nodes, r.leader, 5, new Set());
  t.same(r.steps, ['removeNode n1', 'removeNode n4']);
  t.same(r.conf, { voters: ['n2', 'n3'], learners: [] });
  t.end();
});

t.test('random clusters settle with an odd number of live voters at the target', (t) => {
  const status = fc.constantFrom<NodeStatus>('up', 'up', 'up', 'suspect', 'down', 'leaving', 'left');
  fc.assert(
    fc.property(fc.array(status, { minLength: 1, maxLength: 9 }), fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }), fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }), fc.integer({ min: 1, max: 7 }), (statuses, isVoter, isPlaced, maxVoters) => {
      const names = statuses.map((_, i) => `n${i + 1}`);
      const nodes = Object.fromEntries(names.map((n, i) => [n, rec(n, statuses[i]!, NOW - GRACE)]));
      // n1 leads and is alive; the rest are voters or learners at random.
      nodes.n1 = rec('n1', 'up');
      const voters = names.filter((n, i) => n === 'n1' || isVoter[i]);
      const learners = names.filter((n) => !voters.includes(n));
      const placed = new Set(names.filter((_, i) => isPlaced[i]));
      const r = settle({ voters, learners }, nodes, 'n1', maxVoters, placed);
      const live = (n: string) => nodes[n]!.status === 'up' || nodes[n]!.status === 'suspect';
      const group = [...r.conf.voters, ...r.conf.learners];
      for (const n of group) t.notOk(nodes[n]!.status === 'left' && n !== r.leader, `${n} left but is still in the group`);
      // A leaving node leaves the group exactly when no shard places it (a leader alone stays).
      for (const n of [...voters, ...learners].filter((x) => nodes[x]!.status === 'leaving')) {
        if (placed.has(n)) t.ok(group.includes(n), `${n} is placed: still in the group`);
        else if (n !== r.leader) t.notOk(group.includes(n), `${n} is not placed: out of the group`);
      }
      const liveVoters = r.conf.voters.filter(live).length;
      const liveLearners = r.conf.learners.filter(live).length;
      // Nothing left to promote: either the live voters reached the cap or no live learner remains.
      t.ok(liveLearners === 0 || liveVoters >= largestOddAtMost(Math.min(maxVoters, liveVoters + liveLearners)), `live voters ${liveVoters}, live learners ${liveLearners}`);
      // Leaving voters a shard still places stay in the group (and do not count as live).
      const counted = r.conf.voters.filter((v) => !(nodes[v]!.status === 'leaving' && placed.has(v)));
      t.ok(counted.length <= Math.max(maxVoters, voters.length) + 1, `voters ${r.conf.voters.join(',')} (leaving and placed: ${r.conf.voters.length - counted.length})`);
    }),
    fcParams(300),
  );
  t.end();
});
