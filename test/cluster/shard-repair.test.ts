// Replica repair, pure: the metadata leader's moves and the shard leader's membership steps.
import fc from 'fast-check';
import t from 'tap';
import { EMPTY_META, type MetaState, type NodeRecord, applyMeta } from '../../src/cluster/meta-state.js';
import { planRepairs, planShardConf } from '../../src/cluster/shard-repair.js';
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
  const replaced = applyMeta(state, { type: 'shard.replace', collection: 'c', group: 'vs0', from: 'c', to: 'd' });
  t.same(replaced.state.collections.c!.shards[0]!.replicas, ['a', 'b', 'd']);
  t.same(replaced.state.collections.c!.shards[0]!.initial, ['a', 'b', 'c'], 'the bootstrap replicas are remembered');
  t.equal(replaced.state.collections.c!.epoch, 2);
  t.match(applyMeta(replaced.state, { type: 'shard.replace', collection: 'c', group: 'vs0', from: 'c', to: 'd' }).result, { ok: false, code: 'conflict' }, 'a repeated move is refused');
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
