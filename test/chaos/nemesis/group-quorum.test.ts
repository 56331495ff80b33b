import fc from 'fast-check';
import t from 'tap';
import { type ShardRow, groupsLosingMajority, mergeShardRows } from '../../../chaos/nemesis/group-quorum.js';
import { fcParams } from '../../support/fc.js';

const healthy: ShardRow = { group: 'ds0', replicas: ['n1', 'n2', 'n3'], primary: 'n1', voters: ['n1', 'n2', 'n3'], learners: [], lag: { n1: 0, n2: 0, n3: 2 } };

t.test('a group one replica short loses its majority to the next node out, though every node runs (seed 116)', (t) => {
  // n3 was removed: its replacement on n1 is a learner still catching up.
  const short: ShardRow = { group: 'ds1', replicas: ['n2', 'n4', 'n1'], primary: 'n4', voters: ['n2', 'n4'], learners: ['n1'], lag: { n2: 0, n4: 0, n1: 5_000 } };
  const risks = groupsLosingMajority('n2', [healthy, short], new Set());
  t.equal(risks.length, 1);
  t.match(risks[0], /^ds1's voters are n2, n4; without n2, n4 holds its log, fewer than its majority of 2/);
  t.same(groupsLosingMajority('n3', [healthy, short], new Set()), [], 'n3 is in no group one replica short');
  t.end();
});

t.test('a voter the runner has out holds nothing, whatever its leader last heard from it', (t) => {
  t.same(groupsLosingMajority('n2', [healthy], new Set()), []);
  t.match(groupsLosingMajority('n2', [healthy], new Set(['n3'])), [/without n2, n1 holds its log/]);
  t.match(groupsLosingMajority('n2', [healthy], new Set(['n1'])), [/ds0 has no leader now \(its leader n1 is out\)/], 'nor does a leader it has out');
  t.same(groupsLosingMajority('n4', [healthy], new Set(['n1', 'n3'])), [], 'a group the node holds no replica of is not its concern');
  t.end();
});

t.test('a group whose leader no answer named is a risk for its replicas only', (t) => {
  const lost: ShardRow = { group: 'vs2', replicas: ['n1', 'n2', 'n3'], leader: null, message: 'timeout' };
  t.match(groupsLosingMajority('n2', [lost], new Set()), [/vs2 has no leader now \(timeout\)/]);
  t.same(groupsLosingMajority('n5', [lost], new Set()), []);
  t.end();
});

t.test('the rows of several answers: the first that names a leader stands for its group', (t) => {
  const cutOff: ShardRow = { group: 'ds0', replicas: ['n1', 'n2', 'n3'], primary: null };
  const other: ShardRow = { ...healthy, group: 'ds1', primary: 'n2' };
  t.same(mergeShardRows([[cutOff, other], [healthy, { ...other, primary: 'n3' }]]), [healthy, other]);
  t.same(mergeShardRows([[cutOff]]), [cutOff], 'none named one: the group has none, as far as the runner can tell');
  t.end();
});

t.test('taking more nodes out never takes a risk away', (t) => {
  const names = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const node = fc.constantFrom(...names);
  const row = fc
    .record({
      voters: fc.uniqueArray(node, { minLength: 1, maxLength: 5 }),
      leaderAt: fc.nat(),
      lags: fc.array(fc.option(fc.nat({ max: 300 }), { nil: null }), { minLength: 5, maxLength: 5 }),
      hasLeader: fc.boolean(),
    })
    .map(({ voters, leaderAt, lags, hasLeader }): ShardRow => ({
      group: 'g', // named by position below
      replicas: voters,
      primary: hasLeader ? voters[leaderAt % voters.length]! : null,
      voters,
      learners: [],
      lag: Object.fromEntries(voters.map((v, j) => [v, lags[j]!])),
    }));
  fc.assert(
    fc.property(fc.array(row, { maxLength: 4 }), node, fc.uniqueArray(node), fc.uniqueArray(node), (rows, target, out, more) => {
      const named = rows.map((r, i) => ({ ...r, group: `g${i}` }));
      const groupOf = (risk: string) => /^g\d+/.exec(risk)![0];
      const before = groupsLosingMajority(target, named, new Set(out)).map(groupOf);
      const after = new Set(groupsLosingMajority(target, named, new Set([...out, ...more])).map(groupOf));
      return before.every((g) => after.has(g));
    }),
    fcParams(),
  );
  t.end();
});
