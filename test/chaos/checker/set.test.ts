// The set checker: cases by hand, then agreement with brute force (is the element's presence
// in the final read allowed by some order of its adds and deletes?) on random histories, and
// no anomaly for a correct set.
import t from 'tap';
import fc from 'fast-check';
import type { Outcome, SetElement, SetOp } from '../../../chaos/checker/history.js';
import { checkSet } from '../../../chaos/checker/set.js';
import { fcParams } from '../../support/fc.js';

const add = (element: SetElement, invokeMs: number, completeMs: number, outcome: Outcome = 'ok'): SetOp => ({ kind: 'add', element, invokeMs, completeMs, outcome, node: 'n1' });
const del = (element: SetElement, invokeMs: number, completeMs: number, outcome: Outcome = 'ok'): SetOp => ({ kind: 'delete', element, invokeMs, completeMs, outcome, node: 'n2' });
const final = (elements: SetElement[], node = 'n3'): SetOp => ({ kind: 'read', elements, final: true, invokeMs: 1000, completeMs: 1010, outcome: 'ok', node });
const types = (h: SetOp[]) => checkSet(h).anomalies.map((a) => a.type);

t.test('cases', (t) => {
  t.same(types([add('a', 0, 10), add('b', 0, 10), final(['a', 'b'])]), []);
  t.same(types([add('a', 0, 10), final([])]), ['lost']);
  t.same(types([add('a', 0, 10, 'unknown'), final([])]), [], 'an unknown add may be lost');
  t.same(types([add('a', 0, 10, 'unknown'), final(['a'])]), [], '… or not');
  t.same(types([add('a', 0, 10, 'fail'), final(['a'])]), ['unexpected'], 'a failed add did not happen');
  t.same(types([final(['z'])]), ['unexpected']);
  t.same(types([add(1, 0, 10), final(['1'])]), ['lost', 'unexpected'], '1 and "1" are different elements');
  t.same(types([add('a', 0, 10), del('a', 20, 30), final([])]), []);
  t.same(types([add('a', 0, 10), del('a', 20, 30), final(['a'])]), ['deleted-present']);
  t.same(types([add('a', 0, 10), del('a', 20, 30, 'unknown'), final(['a'])]), [], 'an unknown delete may go either way');
  t.same(types([add('a', 0, 10), del('a', 20, 30, 'unknown'), final([])]), []);
  t.same(types([add('a', 0, 10), del('a', 20, 30, 'fail'), final([])]), ['lost'], 'a failed delete did not happen');
  t.same(types([add('a', 0, 10), del('a', 5, 30), final(['a'])]), [], 'a delete concurrent with the add may come first');
  t.same(types([add('a', 0, 10), del('a', 20, 30), add('a', 40, 50), final([])]), ['lost'], 'added again after the delete');
  t.same(types([add('a', 0, 10), del('a', 20, 30), add('a', 40, 50, 'unknown'), final(['a'])]), [], 'an unknown re-add may show');
  t.same(types([add('a', 0, 10), final(['a']), final([], 'n4')]), ['lost'], 'every final read is checked');
  t.same(types([add('a', 0, 10)]), ['no-final-read']);
  t.same(types([]), []);
  t.end();
});

t.test('the report: distinct elements per anomaly, counts and stats', (t) => {
  const r = checkSet([add('a', 0, 10), add('b', 0, 10, 'unknown'), add('c', 0, 10, 'fail'), add('d', 0, 10, 'unknown'), del('a', 20, 30), final(['a', 'b', 'z']), final(['a', 'b', 'z'], 'n4')]);
  t.equal(r.ok, false);
  t.same(r.deletedPresent, ['a']);
  t.same(r.unexpected, ['z']);
  t.same(r.lost, []);
  t.equal(r.anomalies.length, 4);
  t.equal(r.finalReads, 2);
  t.same(r.counts, { add: { ok: 1, fail: 1, unknown: 2 }, delete: { ok: 1, fail: 0, unknown: 0 }, read: { ok: 2, fail: 0, unknown: 0 } });
  t.same(r.stats, { attempted: 3, acknowledged: 1, recovered: 1 });
  t.end();
});

// ---- brute force: which final states of one element some order allows ----

function allowed(ops: readonly SetOp[]): { present: boolean; absent: boolean } {
  const effective = ops.filter((op) => op.kind !== 'read' && op.outcome !== 'fail');
  const maybe = effective.filter((op) => op.outcome === 'unknown');
  const sure = effective.filter((op) => op.outcome === 'ok');
  const end = (op: SetOp) => (op.outcome === 'unknown' ? Infinity : op.completeMs);
  const out = { present: false, absent: false };
  for (let mask = 0; mask < 1 << maybe.length; mask++) {
    const chosen = [...sure, ...maybe.filter((_, i) => (mask >> i) & 1)];
    const placed = new Array<boolean>(chosen.length).fill(false);
    const walk = (present: boolean, count: number) => {
      if (count === chosen.length) {
        if (present) out.present = true;
        else out.absent = true;
        return;
      }
      chosen.forEach((op, i) => {
        if (placed[i] || chosen.some((p, j) => !placed[j] && j !== i && end(p) < op.invokeMs)) return;
        placed[i] = true;
        walk(op.kind === 'add', count + 1);
        placed[i] = false;
      });
    };
    walk(false, 0);
  }
  return out;
}

const ELEMENTS = ['a', 'b', 'c'];
const arbHistory: fc.Arbitrary<SetOp[]> = fc
  .tuple(
    fc.array(
      fc.record({
        kind: fc.constantFrom('add', 'add', 'delete'),
        element: fc.constantFrom(...ELEMENTS),
        invokeMs: fc.nat(60),
        length: fc.nat(30),
        outcome: fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'unknown', 'fail'),
      }),
      { maxLength: 8 },
    ),
    fc.array(fc.subarray([...ELEMENTS, 'z']), { minLength: 1, maxLength: 2 }),
  )
  .map(([specs, reads]) => [
    ...specs.map((s): SetOp => ({ kind: s.kind as 'add' | 'delete', element: s.element, invokeMs: s.invokeMs, completeMs: s.invokeMs + s.length, outcome: s.outcome, node: 'n1' })),
    ...reads.map((elements, i) => final(elements, `n${i + 1}`)),
  ]);

t.test('agrees with brute force: an anomaly exactly when the final read shows a state no order allows', (t) => {
  let anomalies = 0;
  fc.assert(
    fc.property(arbHistory, (h) => {
      const result = checkSet(h);
      const reads = h.filter((op) => op.kind === 'read');
      for (const element of [...ELEMENTS, 'z']) {
        const can = allowed(h.filter((op) => op.kind !== 'read' && op.element === element));
        for (const read of reads) {
          const shown = read.kind === 'read' && read.elements!.includes(element);
          const flagged = result.anomalies.some((a) => a.element === element && a.node === read.node);
          if (flagged !== (shown ? !can.present : !can.absent)) return false;
        }
      }
      anomalies += result.anomalies.length;
      return result.ok === (result.anomalies.length === 0);
    }),
    fcParams(1000),
  );
  t.ok(anomalies > 0, `anomalies were exercised (${anomalies})`);
  t.end();
});

t.test('a correct set (ops applied at points inside their intervals) shows no anomaly', (t) => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          kind: fc.constantFrom('add', 'delete'),
          element: fc.constantFrom(...ELEMENTS),
          before: fc.nat(25),
          after: fc.nat(25),
          outcome: fc.constantFrom<Outcome>('ok', 'ok', 'unknown', 'fail'),
          applied: fc.boolean(), // for an unknown op: did it take effect?
        }),
        { maxLength: 12 },
      ),
      (specs) => {
        const state = new Set<string>();
        const h = specs.map((s, i): SetOp => {
          const point = (i + 1) * 10;
          if (s.outcome === 'ok' || (s.outcome === 'unknown' && s.applied)) {
            if (s.kind === 'add') state.add(s.element);
            else state.delete(s.element);
          }
          return { kind: s.kind as 'add' | 'delete', element: s.element, invokeMs: point - s.before, completeMs: point + s.after, outcome: s.outcome, node: 'n1' };
        });
        h.push(final([...state]));
        return checkSet(h).ok;
      },
    ),
    fcParams(1000),
  );
  t.pass('no anomaly');
  t.end();
});
