// Replica repair, pure: the metadata leader's moves and the shard leader's membership steps.
import fc from 'fast-check';
import t from 'tap';
import { EMPTY_META, type MetaState, type NodeRecord, applyMeta } from '../../src/cluster/meta-state.js';
import { describeShortfalls, describeStranded, leaveBlockers, planRepairs, planShardConf, replicaShortfalls, strandedReplicas } from '../../src/cluster/shard-repair.js';
import type { ConfState } from '../../src/raft/types.js';
import { fcParams } from '../support/fc.js';

const node = (name: string, status: NodeRecord['status'], sinceMs = 0, zone = 'z'): NodeRecord => ({ name, incarnation: 'i', http: '', grpc: '', zone, status, joinedAtMs: 0, statusSinceMs: sinceMs });

function withCollection(nodes: NodeRecord[], replicas: string[][]): MetaState {
  let s: MetaState = { ...EMPTY_META, nodes: Object.fromEntries(nodes.map((n) => [n.name, n])) };
  s = applyMeta(s, { type: 'collection.create', name: 'c', config: {}, replicationFactor: replicas[0]!.length, shards: replicas.map((r, i) => ({ range: [i, i], replicas: r })) }).state;
  return s;
}

t.test('a replica moves once its node is down past the grace period, is leaving, or left', (t) => {
  const state = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'down', 1_000), node('d', 'up')], [['a', 'b', 'c'], ['a', 'b', 'd']]);
  t.same(planRepairs(state, 5_000, 10_000), [], 'within the grace period nothing moves');
  const moves = planRepairs(state, 11_000, 10_000);
  t.match(moves, [{ collection: 'c', group: 'vs0', from: 'c', to: 'd' }], 'past it, to the one node outside the shard');
  const leaving = withCollection([node('a', 'up'), node('b', 'leaving'), node('c', 'up'), node('d', 'up')], [['a', 'b', 'c']]);
  t.match(planRepairs(leaving, 0, 10_000), [{ from: 'b', to: 'd' }]);
  const nowhere = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'down', 0)], [['a', 'b', 'c']]);
  t.same(planRepairs(nowhere, 1e9, 10_000), [], 'no healthy node outside the shard: it waits');
  // Every replica down: no live replica leads a move, and the data is on those nodes. A replica
  // factor 1 shard was placed elsewhere after the grace period, where an empty replica waited
  // for a leader that could not be, and the remove route let the down node, its one holder, go.
  const solo = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'down', 0)], [['c'], ['a']]);
  t.same(planRepairs(solo, 1e9, 10_000), [], 'a shard whose every replica is down waits for its nodes');
  const someDown = withCollection([node('a', 'up'), node('b', 'down', 0), node('c', 'down', 0), node('d', 'left'), node('e', 'up'), node('f', 'up')], [['b', 'c'], ['a', 'b'], ['c', 'd'], ['a', 'e', 'b'], ['a', 'b', 'c']]);
  t.match(planRepairs(someDown, 1e9, 10_000), [{ group: 'vs2', from: 'd' }, { group: 'vs3', from: 'b' }], 'a majority live can elect the leader that moves one; a replica on a node that left is no copy to wait for');
  const replaced = applyMeta(state, { type: 'shard.replace', collection: 'c', group: 'vs0', from: 'c', to: 'd' });
  t.same(replaced.state.collections.c!.shards[0]!.replicas, ['a', 'b', 'd']);
  t.same(replaced.state.collections.c!.shards[0]!.initial, ['a', 'b', 'c'], 'the bootstrap replicas are remembered');
  t.equal(replaced.state.collections.c!.epoch, 2);
  t.match(applyMeta(replaced.state, { type: 'shard.replace', collection: 'c', group: 'vs0', from: 'c', to: 'd' }).result, { ok: false, code: 'conflict' }, 'a repeated move is refused');
  t.end();
});

t.test("a running reshard's and split's pending groups are repaired too, once every member reads the move", (t) => {
  const nodes = [node('a', 'up'), node('b', 'leaving'), node('c', 'up'), node('d', 'up')];
  let s = withCollection(nodes, [['a', 'c']]);
  s = applyMeta(s, { type: 'reshard.begin', collection: 'c', jobId: 'r', atMs: 1, shards: [{ range: [0, 2147483647], replicas: ['a', 'b'] }, { range: [2147483648, 4294967295], replicas: ['c', 'd'] }] }).state;
  t.same(planRepairs(s, 0, 10_000), [], 'an older member in the cluster: pending groups wait for their job, as before');
  const moves = planRepairs(s, 0, 10_000, { pending: true });
  t.match(moves, [{ kind: 'collection', collection: 'c', group: 'vs1', from: 'b', to: 'd', pending: true }], "the leaving node's new-group replica moves to the least loaded node outside the group");
  const moved = applyMeta(s, { type: 'shard.replace.pending', collection: 'c', group: 'vs1', from: 'b', to: 'd' });
  t.same(moved.result, { ok: true });
  t.same(moved.state.collections.c!.pending!.map((p) => p.replicas), [['a', 'd'], ['c', 'd']]);
  t.same(moved.state.collections.c!.shards, s.collections.c!.shards, 'the routed shards are untouched');
  t.match(applyMeta(moved.state, { type: 'shard.replace.pending', collection: 'c', group: 'vs1', from: 'b', to: 'd' }).result, { ok: false, code: 'conflict' }, 'a repeated move is refused');
  t.match(applyMeta(s, { type: 'shard.replace', collection: 'c', group: 'vs1', from: 'b', to: 'd' }).result, { ok: false, code: 'not_found' }, 'the routed-shard command does not see pending groups (what older members apply)');
  // The job switched before the move committed: the group is routed by then, and moves there.
  const switched = applyMeta(applyMeta(s, { type: 'reshard.progress', jobId: 'r', atMs: 2, step: 'switching' } as never).state, { type: 'reshard.switch', jobId: 'r', atMs: 3 }).state;
  t.equal(switched.collections.c!.pending, undefined, 'switched');
  const late = applyMeta(switched, { type: 'shard.replace.pending', collection: 'c', group: 'vs1', from: 'b', to: 'd' });
  t.same(late.result, { ok: true });
  t.same(late.state.collections.c!.shards.find((x) => x.group === 'vs1')!.replicas, ['a', 'd'], 'applied to the routed group');

  // A VDB split's pending group.
  let v: MetaState = { ...EMPTY_META, nodes: Object.fromEntries(nodes.map((n) => [n.name, n])) };
  const config = { hashFunction: 'phash2' as const, replicaFactor: 2, zones: [], createdMs: 0 };
  v = applyMeta(v, { type: 'vdb.create', name: 'v', config, shards: [{ range: [0, 4294967295], replicas: ['a', 'c'] }] }).state;
  v = applyMeta(v, { type: 'vdb.rebalance.begin', name: 'v', jobId: 'j', atMs: 1, op: 'split', source: 0, target: 1, moving: [2147483648, 4294967295], replicas: ['b', 'c'] }).state;
  const vm = planRepairs(v, 0, 10_000, { pending: true });
  t.match(vm, [{ kind: 'vdb', collection: 'v', group: 'ds1', from: 'b', pending: true }]);
  t.match(replicaShortfalls(v), [{ kind: 'vdb', owner: 'v', group: 'ds1', placed: 2, live: 1, repairable: true }], "/health names the split's new group with a replica on a leaving node");
  t.same(leaveBlockers(v, 'b'), [], 'a live node (a or d) can take it: the leave goes on');
  const crowded = { ...v, nodes: { a: { ...v.nodes.a!, status: 'down' as const }, b: v.nodes.b!, c: v.nodes.c! } };
  t.same(leaveBlockers(crowded, 'b'), ["ds1 of VDB v (a running job's new group): every other live node already holds a replica"], 'the only other live node (c) holds one: the leave says why it waits');
  t.same(strandedReplicas(crowded, 'b'), [{ kind: 'vdb', owner: 'v', groups: ['ds1'] }], 'and a leave asked now is refused, as for a routed shard');
  t.same(strandedReplicas(v, 'b'), [], 'not while another live node can take it');
  const vMoved = applyMeta(v, { type: 'shard.replace.pending', kind: 'vdb', collection: 'v', group: 'ds1', from: 'b', to: vm[0]!.to });
  t.same(vMoved.result, { ok: true });
  t.same(vMoved.state.vdbs.v!.pending!.replicas, [vm[0]!.to, 'c']);
  t.end();
});

t.test('a leave is stranded exactly where no other live node can take a replica', (t) => {
  const three = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'up')], [['a', 'b', 'c'], ['a', 'b', 'c']]);
  const stranded = strandedReplicas(three, 'c');
  t.same(stranded, [{ kind: 'collection', owner: 'c', groups: ['vs0', 'vs1'] }], 'three replicas on three nodes: none can move');
  t.equal(describeStranded('c', stranded), "no other live node can take c's replicas of collection c (shard groups vs0, vs1): every other live node already holds a replica of those shards; a node must join first");
  const withSuspect = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'up'), node('d', 'suspect')], [['a', 'b', 'c']]);
  t.same(strandedReplicas(withSuspect, 'c'), [], 'a suspect node counts: it is expected back');
  const withDown = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'up'), node('d', 'down')], [['a', 'b', 'c']]);
  t.equal(strandedReplicas(withDown, 'c').length, 1, 'a down node does not');
  t.same(strandedReplicas(three, 'z'), [], 'a node with no replica is never stranded');

  // Against the repair planner: with every other node up, a shard of the leaving node gets a move
  // exactly when it is not stranded.
  const names = ['a', 'b', 'c', 'd', 'e'];
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 5 }), fc.array(fc.subarray(names, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 }), (count, shardNodes) => {
      const present = names.slice(0, count);
      const replicas = shardNodes.map((r) => r.filter((n) => present.includes(n))).filter((r) => r.length > 0);
      if (replicas.length === 0) return true;
      const up = withCollection(present.map((n) => node(n, 'up')), replicas);
      const leaving = { ...up, nodes: { ...up.nodes, a: { ...up.nodes.a!, status: 'leaving' as const } } };
      const strandedGroups = new Set(strandedReplicas(up, 'a').flatMap((s) => s.groups));
      const moved = new Set(planRepairs(leaving, 0, 1).map((m) => m.group));
      return up.collections.c!.shards.every((s) => !s.replicas.includes('a') || strandedGroups.has(s.group) !== moved.has(s.group));
    }),
    fcParams(),
  );
  t.end();
});

t.test("what a leave waits for: a replica with no taker, or a taker that is not live", (t) => {
  const three = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'leaving'), node('d', 'down')], [['a', 'b', 'c'], ['a', 'b', 'd']]);
  t.same(leaveBlockers(three, 'c'), ['vs0 of collection c: every other live node already holds a replica'], "c's replica: d is down, a and b hold one");
  const moved = applyMeta(withCollection([node('a', 'up'), node('b', 'up'), node('c', 'leaving'), node('d', 'up')], [['a', 'b', 'c']]), { type: 'shard.replace', collection: 'c', group: 'vs0', from: 'c', to: 'd' }).state;
  t.same(leaveBlockers(moved, 'c'), [], 'moved to a live node: the leave goes on');
  const deadTaker = { ...moved, nodes: { ...moved.nodes, d: { ...moved.nodes.d!, status: 'down' as const } } };
  t.same(leaveBlockers(deadTaker, 'c'), ['vs0 of collection c: its new replica is on d, not live, and no other live node can take it'], 'the node that took it died');
  const withFifth = { ...deadTaker, nodes: { ...deadTaker.nodes, e: node('e', 'up') } };
  t.same(leaveBlockers(withFifth, 'c'), [], 'a fifth node can take it: the repair moves it on');
  t.end();
});

t.test('shards with replicas on nodes that are not live, for /health', (t) => {
  const oneDown = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'down'), node('d', 'up')], [['a', 'b', 'c'], ['a', 'b', 'd']]);
  t.same(replicaShortfalls(oneDown), [{ kind: 'collection', owner: 'c', group: 'vs0', placed: 3, live: 2, repairable: true }], 'the shard on the down node, which d can take');
  t.same(describeShortfalls(replicaShortfalls(oneDown)), ["collection c: 1 shard group with replicas on nodes that are not live (vs0 2/3 live); repairable: their replicas move to other nodes (a down node's after the grace period)"]);
  const suspect = withCollection([node('a', 'up'), node('b', 'up'), node('c', 'suspect')], [['a', 'b', 'c']]);
  t.same(replicaShortfalls(suspect), [], 'a suspect node still counts as live');
  const twoDown = withCollection([node('a', 'up'), node('b', 'down'), node('c', 'left')], [['a', 'b', 'c'], ['a', 'b']]);
  t.same(describeShortfalls(replicaShortfalls(twoDown)), [
    'collection c: 2 shard groups with replicas on nodes that are not live (vs0 1/3, vs1 1/2 live); vs0, vs1 without a majority (no writes, no linearizable reads); no other live node can take the missing ones: a node must join; vs1 cannot elect a leader to move its replicas: nothing moves them, it answers again once a majority of its nodes is back',
  ]);
  t.same(replicaShortfalls(withCollection([node('a', 'up'), node('b', 'up')], [['a', 'b']])), [], 'all live: nothing');
  const stranded = withCollection([node('a', 'up'), node('b', 'down'), node('c', 'up')], [['b'], ['a', 'b'], ['c']]);
  t.same(replicaShortfalls(stranded), [
    { kind: 'collection', owner: 'c', group: 'vs0', placed: 1, live: 0, repairable: false, waitsForItsNodes: true },
    { kind: 'collection', owner: 'c', group: 'vs1', placed: 2, live: 1, repairable: false, waitsForItsNodes: true },
  ]);
  t.same(describeShortfalls(replicaShortfalls(stranded)), [
    "collection c: 2 shard groups with replicas on nodes that are not live (vs0 0/1, vs1 1/2 live); vs0, vs1 without a majority (no writes, no linearizable reads); vs0, vs1 cannot elect a leader to move their replicas: nothing moves them, they answer again once a majority of their nodes is back",
  ]);
  // /health is open: a VDB the caller's key may not read is described, not named.
  const mixed = [
    { kind: 'vdb' as const, owner: 'payroll', group: 'ds1', placed: 3, live: 2, repairable: true },
    { kind: 'vdb' as const, owner: 'notes', group: 'ds2', placed: 3, live: 2, repairable: true },
    { kind: 'collection' as const, owner: 'c', group: 'vs0', placed: 3, live: 2, repairable: true },
  ];
  const lines = describeShortfalls(mixed, (kind, owner) => kind === 'collection' || owner === 'notes');
  t.same(lines.map((l) => l.split(':')[0]), ['a VDB this key may not read', 'VDB notes', 'collection c'], 'the hidden VDB without its name');
  t.notOk(lines.join(' ').includes('payroll'));
  t.match(lines[0], /\(ds1 2\/3 live\); repairable/, 'but with what is wrong');

  // Against the repair planner: with the nodes that are not live gone (moved at once), a
  // shortfall is repairable exactly when the planner moves a replica of that shard.
  const names = ['a', 'b', 'c', 'd', 'e'];
  fc.assert(
    fc.property(fc.array(fc.constantFrom('up', 'suspect', 'left', 'down') as fc.Arbitrary<NodeRecord['status']>, { minLength: 5, maxLength: 5 }), fc.array(fc.subarray(names, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 }), (statuses, replicas) => {
      const state = withCollection(names.map((n, i) => node(n, statuses[i]!)), replicas);
      const shortfalls = new Map(replicaShortfalls(state).map((x) => [x.group, x]));
      // Down since 0, now far past the grace period.
      const moved = new Set(planRepairs(state, 1e9, 1).map((m) => m.group));
      return state.collections.c!.shards.every((sh) => {
        const notLive = sh.replicas.some((r) => statuses[names.indexOf(r)] === 'left' || statuses[names.indexOf(r)] === 'down');
        const x = shortfalls.get(sh.group);
        return notLive === (x !== undefined) && (x === undefined || x.repairable === moved.has(sh.group));
      });
    }),
    fcParams(),
  );
  t.end();
});

t.test('shard membership steps reach the desired voters, one at a time, never below the desired majority', (t) => {
  const names = ['a', 'b', 'c', 'd', 'e'];
  fc.assert(
    fc.property(fc.subarray(names, { minLength: 1, maxLength: 4 }), fc.subarray(names, { minLength: 1, maxLength: 4 }), (start, desired) => {
      let conf: ConfState = { voters: [...start], learners: [] };
      let leader = start[0]!;
      for (let steps = 0; steps < 30; steps++) {
        // Learners catch up one round after they are added.
        const step = planShardConf({ conf, desired, caughtUp: new Set(conf.learners), leader });
        if (step === undefined) {
          return desired.every((n) => conf.voters.includes(n)) && conf.voters.every((n) => desired.includes(n)) && conf.learners.length === 0;
        }
        if (step.kind === 'transfer') {
          if (!conf.voters.includes(step.to)) return false;
          leader = step.to;
          continue;
        }
        const { type, node: n } = step.change;
        if (type === 'addLearner') conf = { voters: conf.voters, learners: [...conf.learners, n] };
        else if (type === 'addVoter') conf = { voters: [...conf.voters, n], learners: conf.learners.filter((l) => l !== n) };
        else {
          if (n === leader) return false; // never removes the leader
          // A voter is removed only once every desired replica votes.
          if (conf.voters.includes(n) && !desired.every((d) => conf.voters.includes(d))) return false;
          conf = { voters: conf.voters.filter((v) => v !== n), learners: conf.learners.filter((l) => l !== n) };
        }
      }
      return false;
    }),
    fcParams(500),
  );
  t.end();
});
