// Convergence: replicas agree, lag, diverge or are missing; what the runner does after a poll.
import t from 'tap';
import fc from 'fast-check';
import { type NodeView, type ReplicaReport, checkConvergence, explainLagging, pollVerdict } from '../../../chaos/checker/convergence.js';
import { fcParams } from '../../support/fc.js';

const rep = (node: string, shard: string, applied_index: number, digest: string): ReplicaReport => ({ node, shard, applied_index, digest });

t.test('agreeing replicas converge', (t) => {
  const c = checkConvergence([rep('n1', 's1', 7, 'd'), rep('n2', 's1', 7, 'd'), rep('n3', 's2', 3, 'e')]);
  t.equal(c.ok, true);
  t.equal(c.diverged, false);
  t.same(c.shards.map((s) => [s.shard, s.converged, s.appliedIndex, s.digest]), [['s1', true, 7, 'd'], ['s2', true, 3, 'e']]);
  t.equal(pollVerdict(c, 100, 1000), 'converged');
  t.end();
});

t.test('a lagging replica is not converged yet; past the deadline it is a timeout', (t) => {
  const c = checkConvergence([rep('n1', 's1', 7, 'd'), rep('n2', 's1', 5, 'x'), rep('n3', 's1', 7, 'd')]);
  t.equal(c.ok, false);
  t.equal(c.diverged, false);
  t.same(c.shards[0]!.lagging, ['n2']);
  t.equal(c.shards[0]!.appliedIndex, undefined);
  t.equal(pollVerdict(c, 100, 1000), 'wait');
  t.equal(pollVerdict(c, 1000, 1000), 'timeout');
  t.end();
});

t.test('different digests at the same index diverge, and the poll stops at once', (t) => {
  const c = checkConvergence([rep('n1', 's1', 7, 'd'), rep('n2', 's1', 7, 'x'), rep('n3', 's1', 7, 'd'), rep('n4', 's1', 4, 'y')]);
  t.equal(c.ok, false);
  t.equal(c.diverged, true);
  t.same(c.shards[0]!.diverged, [{ appliedIndex: 7, digests: { d: ['n1', 'n3'], x: ['n2'] } }]);
  t.same(c.shards[0]!.lagging, ['n4']);
  t.equal(pollVerdict(c, 0, 1000), 'diverged');
  t.end();
});

t.test('expected replicas that did not report are missing', (t) => {
  const c = checkConvergence([rep('n1', 's1', 7, 'd')], { s1: ['n1', 'n2'], s2: ['n3'] });
  t.equal(c.ok, false);
  t.same(c.shards.map((s) => [s.shard, s.converged, s.missing]), [['s1', false, ['n2']], ['s2', false, ['n3']]]);
  t.throws(() => checkConvergence([rep('n1', 's1', 7, 'd'), rep('n1', 's1', 8, 'd')]), /twice/);
  t.end();
});

t.test('converged exactly when every shard has one (index, digest) and nobody is missing', (t) => {
  const arb = fc.uniqueArray(fc.record({ node: fc.constantFrom('n1', 'n2', 'n3'), shard: fc.constantFrom('s1', 's2'), applied_index: fc.integer({ min: 1, max: 3 }), digest: fc.constantFrom('a', 'b') }), { selector: (r) => `${r.node}/${r.shard}`, maxLength: 6 });
  fc.assert(
    fc.property(arb, (reports) => {
      const c = checkConvergence(reports);
      for (const s of c.shards) {
        const rs = reports.filter((r) => r.shard === s.shard);
        const pairs = new Set(rs.map((r) => `${r.applied_index}/${r.digest}`));
        if (s.converged !== (pairs.size === 1)) return false;
        const sameIndexTwoDigests = rs.some((a) => rs.some((b) => a.applied_index === b.applied_index && a.digest !== b.digest));
        if ((s.diverged.length > 0) !== sameIndexTwoDigests) return false;
      }
      return c.ok === c.shards.every((s) => s.converged);
    }),
    fcParams(500),
  );
  t.pass('agrees');
  t.end();
});

t.test('a lagging replica is explained by its own status and what its leaders say of it', (t) => {
  const views: NodeView[] = [
    { node: 'n2', links: { n1: 'up', n3: 'none' }, shards: [{ group: 'vs0', role: 'leader', term: 4, followers: [{ node: 'n1', match: 90, state: 'replicate', link: 'up' }, { node: 'n3', match: 0, state: 'probe', link: 'none', queued: 0 }] }] },
    { node: 'n3', links: { n2: 'up' }, shards: [{ group: 'vs0', role: 'follower', term: 2, leader: null, applied: 312, catching_up: true, stopped: null }] },
  ];
  t.equal(explainLagging('vs0', 'n3', views), "n3's replica: follower at term 2, leader none, applied 312, catching up; leader n2 (term 4): match 0, probe, link none");
  t.equal(
    explainLagging('vs0', 'n3', [{ node: 'n3', shards: [{ group: 'vs0', role: 'follower', term: 2, leader: 'n1', applied: 5, stopped: 'disk full' }] }]),
    "n3's replica: follower at term 2, leader n1, applied 5, stopped: disk full; no node leads it",
  );
  t.equal(
    explainLagging('vs0', 'n4', [{ node: 'n2', links: { n4: 'down' }, shards: [{ group: 'vs0', role: 'leader', term: 3, followers: [] }] }]),
    "n4 lists no replica of vs0; leader n2 (term 3) does not count n4 in its group (link down)",
  );
  t.end();
});
