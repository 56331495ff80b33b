// The checkers' part of the report: one shape whichever workload ran, every checker's
// anomalies in one list.
import t from 'tap';
import type { KeyOp, RegisterOp, SetOp } from '../../../chaos/checker/history.js';
import { CHAOS_BM25_PARAMS, expectedScore } from '../../../chaos/checker/bm25.js';
import { runCheckers } from '../../../chaos/checker/report.js';

const BASE = { windows: [{ kind: 'kill' as const, startMs: 100, endMs: 200 }], startMs: 0, endMs: 1000, stepBudget: 100_000, gapMsMin: 500 };

t.test('the keys workload: keys and convergence filled, the others null', (t) => {
  const keys: KeyOp[] = [
    { kind: 'create', node: 'n1', invokeMs: 0, completeMs: 10, outcome: 'ok', keyId: 'a' },
    { kind: 'final', node: 'n1', keyId: 'a', result: 'invalid' },
  ];
  const { checkers, anomalies } = runCheckers({ ...BASE, keys, convergence: { reports: [{ node: 'n1', shard: 'metadata', applied_index: 3, digest: 'd' }, { node: 'n2', shard: 'metadata', applied_index: 2, digest: 'e' }], timedOut: true } });
  t.equal(checkers.linearizable, null);
  t.equal(checkers.set, null);
  t.equal(checkers.bm25, null);
  t.equal(checkers.keys?.anomalies.length, 1);
  t.equal(checkers.convergence?.ok, false);
  t.same(anomalies.map((a) => [a.checker, a.type, a.key, a.node]), [['keys', 'lost-key', 'a', 'n1'], ['convergence', 'no-convergence', 'metadata', 'n2']]);
  t.same(checkers.availability.calm, { ok: 1, total: 1, share: 1 }, 'final reads are not counted');
  t.same(checkers.availability.longestGap.ms, 990);
  t.end();
});

t.test('register and set workloads fill their parts; a failure keeps the tail of the partial linearization', (t) => {
  const w = (value: number, invokeMs: number, completeMs: number): RegisterOp => ({ kind: 'write', key: 'k', value, invokeMs, completeMs, outcome: 'ok', node: 'n1' });
  const registers: RegisterOp[] = [...Array.from({ length: 30 }, (_, i) => w(i, i * 10, i * 10 + 5)), { kind: 'read', key: 'k', value: 3, invokeMs: 400, completeMs: 410, outcome: 'ok', node: 'n2' }];
  const set: SetOp[] = [{ kind: 'add', element: 'x', invokeMs: 0, completeMs: 10, outcome: 'ok', node: 'n1' }, { kind: 'read', elements: ['x'], final: true, invokeMs: 900, completeMs: 910, outcome: 'ok', node: 'n1' }];
  const { checkers, anomalies } = runCheckers({ ...BASE, registers, set });
  t.equal(checkers.keys, null);
  t.equal(checkers.convergence, null);
  t.equal(checkers.set?.ok, true);
  t.equal(checkers.linearizable?.verdict, 'not-linearizable');
  const f = checkers.linearizable!.failures[0]!;
  t.equal(f.partialLength, 30);
  t.equal(f.partialTail.length, 20);
  t.equal(f.partialTail.at(-1), registers[29]);
  t.same(anomalies.map((a) => [a.checker, a.type, a.key, a.node]), [['linearizable', 'not-linearizable', 'k', 'n2']]);
  t.equal(checkers.availability.calm.total + checkers.availability.duringFaults.kill!.total, 32, 'final set reads are not counted');
  t.end();
});

t.test('the set workload\'s keyword searches: the bm25 part filled, its anomalies named by query and node', (t) => {
  const set: SetOp[] = [{ kind: 'add', element: 'e1', invokeMs: 0, completeMs: 10, outcome: 'ok', node: 'n1' }, { kind: 'read', elements: ['e1'], final: true, invokeMs: 900, completeMs: 910, outcome: 'ok', node: 'n1' }];
  const score = expectedScore(1, 1, CHAOS_BM25_PARAMS);
  const found = { query: 'b0', k: 1000, hits: [{ id: 'e1', score }] };
  t.equal(runCheckers({ ...BASE, set, bm25: [{ node: 'n1', present: ['e1'], searches: [found] }] }).checkers.bm25?.ok, true);
  const { checkers, anomalies } = runCheckers({ ...BASE, set, bm25: [{ node: 'n2', present: ['e1'], searches: [{ ...found, hits: [...found.hits, { id: 'e2', score }] }] }] });
  t.equal(checkers.bm25?.ok, false);
  t.same(anomalies.map((a) => [a.checker, a.type, a.key, a.node]), [['bm25', 'extra', 'b0', 'n2']]);
  t.match(anomalies[0]!.detail, /e\.g\. e2$/);
  t.end();
});

t.test('the cas workload\'s feed follower: the feed part filled, its anomalies in the list', (t) => {
  const feed = { polls: [{ node: 'n1', invokeMs: 5, completeMs: 9, changes: [{ id: 'k0', rev: '1-a' }] }], acked: [{ key: 'k0', rev: '2-b', invokeMs: 3 }], keys: new Set(['k0']), refusals: [], drained: true };
  const { checkers, anomalies } = runCheckers({ ...BASE, feed });
  t.same([checkers.feed?.ok, checkers.feed?.polls], [false, 1]);
  t.same(anomalies.map((a) => [a.checker, a.type, a.key]), [['feed', 'missed', 'k0']]);
  t.equal(runCheckers({ ...BASE }).checkers.feed, null);
  t.end();
});

t.test('the set workload\'s listings: the listing part filled, its anomalies named by node', (t) => {
  const { checkers, anomalies } = runCheckers({ ...BASE, listings: [{ node: 'n3', present: ['e1', 'e2'], listed: ['e1'] }] });
  t.same([checkers.listing?.ok, checkers.listing?.listed], [false, 1]);
  t.same(anomalies.map((a) => [a.checker, a.type, a.key, a.node]), [['listing', 'missing', 'e2', 'n3']]);
  t.equal(runCheckers({ ...BASE }).checkers.listing, null);
  t.end();
});

t.test('out of budget is reported, not passed', (t) => {
  const registers: RegisterOp[] = [...Array.from({ length: 14 }, (_, i): RegisterOp => ({ kind: 'write', key: 'k', value: i, invokeMs: 0, completeMs: 100, outcome: 'ok', node: 'n1' })), { kind: 'read', key: 'k', value: 99, invokeMs: 200, completeMs: 210, outcome: 'ok', node: 'n1' }];
  const { checkers, anomalies } = runCheckers({ ...BASE, registers, stepBudget: 100 });
  t.equal(checkers.linearizable?.verdict, 'unknown');
  t.same(anomalies.map((a) => a.type), ['linearizability-unknown']);
  t.end();
});
