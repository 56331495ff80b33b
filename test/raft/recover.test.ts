// Membership arithmetic (raft/conf.ts) against a naive model, and forced recovery
// (raft/recover.ts): the plan makes the survivor the only voter whatever the log held, and a
// core started from the planned log elects itself and serves everything the survivor held.
import fc from 'fast-check';
import t from 'tap';
import { applyConfChange, confAfter } from '../../src/raft/conf.js';
import { type StoredLog, planSoleVoter, summarizeLog } from '../../src/raft/recover.js';
import type { ConfChange, ConfState, Entry } from '../../src/raft/types.js';
import { fcParams } from '../support/fc.js';
import { Cluster } from './harness.js';

const NODES = ['n1', 'n2', 'n3', 'n4', 'n5'];
const change = fc.record({ type: fc.constantFrom('addVoter' as const, 'addLearner' as const, 'removeNode' as const), node: fc.constantFrom(...NODES) });
const confState = fc.record({ voters: fc.subarray(NODES), learners: fc.subarray(NODES) }).map(({ voters, learners }) => ({ voters, learners: learners.filter((n) => !voters.includes(n)) }));

/** The model: two sets, as the thesis describes one-at-a-time changes. */
function naive(conf: ConfState, c: ConfChange): ConfState {
  const voters = new Set(conf.voters);
  const learners = new Set(conf.learners);
  if (c.type === 'addVoter') {
    learners.delete(c.node);
    voters.add(c.node);
  } else if (c.type === 'addLearner') {
    if (!voters.has(c.node)) learners.add(c.node);
  } else {
    voters.delete(c.node);
    learners.delete(c.node);
  }
  return { voters: [...voters].sort(), learners: [...learners].sort() };
}

t.test('applyConfChange equals the two-set model, and never holds a node as voter and learner', (t) => {
  fc.assert(
    fc.property(confState, fc.array(change, { maxLength: 12 }), (start, changes) => {
      let conf = applyConfChange(start, { type: 'removeNode', node: 'nobody' });
      let model = naive(start, { type: 'removeNode', node: 'nobody' });
      for (const c of changes) {
        conf = applyConfChange(conf, c);
        model = naive(model, c);
        if (JSON.stringify(conf) !== JSON.stringify(model)) return false;
        if (conf.voters.some((v) => conf.learners.includes(v))) return false;
      }
      return true;
    }),
    fcParams(500),
  );
  t.end();
});

/** A random stored log: a snapshot's membership, then entries of rising terms, some of them membership changes. */
const storedLog = fc
  .record({
    snapshotConf: confState,
    snapshotIndex: fc.nat(20),
    snapshotTerm: fc.integer({ min: 1, max: 5 }),
    tail: fc.array(fc.record({ termStep: fc.nat(2), conf: fc.option(change, { nil: undefined }) }), { maxLength: 10 }),
    extraTerm: fc.nat(3),
    commitBack: fc.nat(10),
    fresh: fc.boolean(),
  })
  .map(({ snapshotConf, snapshotIndex, snapshotTerm, tail, extraTerm, commitBack, fresh }): StoredLog => {
    let term = snapshotIndex === 0 ? 0 : snapshotTerm;
    const entries: Entry[] = tail.map((e, i) => {
      term = Math.max(1, term + e.termStep);
      const index = snapshotIndex + 1 + i;
      return e.conf === undefined ? { index, term, kind: 'noop' } : { index, term, kind: 'conf', change: e.conf };
    });
    const last = snapshotIndex + entries.length;
    return { snapshotConf, snapshotIndex, snapshotTerm: snapshotIndex === 0 ? 0 : snapshotTerm, entries, hardState: { term: term + extraTerm, vote: null, commit: Math.max(snapshotIndex, last - commitBack) }, fresh };
  });

t.test('planSoleVoter: after the plan, the survivor is the only voter, at a newer term, with everything committed; refused only without a vote or data', (t) => {
  fc.assert(
    fc.property(storedLog, fc.constantFrom(...NODES), (log, me) => {
      const before = summarizeLog(log);
      const plan = planSoleVoter(me, log);
      if (plan.kind === 'refused') return before.fresh || before.lastIndex === 0 || !before.conf.voters.includes(me);
      if (before.fresh || before.lastIndex === 0 || !before.conf.voters.includes(me)) return false;
      if (plan.kind === 'nothing') return JSON.stringify(before.conf.voters) === JSON.stringify([me]);
      const after = confAfter(log.snapshotConf, [...log.entries, ...plan.entries]);
      const lastIndex = before.lastIndex + plan.entries.length;
      return (
        JSON.stringify(after.voters) === JSON.stringify([me]) &&
        JSON.stringify(after.learners) === JSON.stringify(before.conf.learners) &&
        plan.entries.every((e, i) => e.index === before.lastIndex + 1 + i && e.term === plan.hardState.term) &&
        plan.hardState.term > Math.max(before.term, before.lastTerm) &&
        plan.hardState.commit === lastIndex &&
        plan.hardState.vote === me
      );
    }),
    fcParams(1000),
  );
  t.end();
});

t.test('a survivor whose two peers are gone for good: stuck, then forced, it elects itself and serves what it held, committed or not', (t) => {
  const c = new Cluster(['n1', 'n2', 'n3']);
  c.campaign('n1');
  c.propose('n1', 'a');
  c.propose('n1', 'b');
  // n2 and n3 are lost; n1 still appends one entry nobody acknowledges.
  c.isolated.add('n2');
  c.isolated.add('n3');
  c.c('n1').propose(new TextEncoder().encode('c'));
  c.stabilize();
  t.same(c.n('n1').values, ['a', 'b'], 'c is not committed');
  c.isolated.delete('n1');
  c.tick(['n1'], 100);
  t.notOk(c.c('n1').role === 'leader' && c.c('n1').log.committed >= c.c('n1').log.lastIndex(), 'alone, it never commits again (Raft waits for ever)');

  const storage = c.n('n1').storage;
  const snap = storage.snapshot();
  const plan = planSoleVoter('n1', { snapshotConf: snap.meta.conf, snapshotIndex: snap.meta.index, snapshotTerm: snap.meta.term, entries: storage.entryList.filter((e) => e.index > snap.meta.index), hardState: storage.hardState, fresh: false });
  if (plan.kind !== 'write') throw new Error(`expected a write, got ${JSON.stringify(plan)}`);
  t.same(plan.removed, ['n2', 'n3']);
  storage.append(plan.entries);
  storage.setHardState(plan.hardState);

  const n1 = c.restart('n1');
  c.stabilize();
  t.same(n1.core.confState(), { voters: ['n1'], learners: [] }, 'restarted: n1 votes alone');
  t.same(n1.values, ['a', 'b', 'c'], 'everything it held is applied, c included');
  c.tick(['n1'], 40);
  t.equal(n1.core.role, 'leader', 'it elects itself');
  c.propose('n1', 'd');
  t.same(n1.values, ['a', 'b', 'c', 'd'], 'and commits alone');
  t.end();
});
