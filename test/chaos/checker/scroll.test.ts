// The scroll checker: cases by hand, then random histories whose operations take effect at a
// random instant inside their interval (an unknown one maybe never, a failed one never), read
// by honest scrolls (the set at one instant between the scroll's start and end, in id order):
// no anomaly; and the same scrolls broken (one must-list element dropped, an element nobody
// added, an id twice, two ids swapped): that anomaly.
import t from 'tap';
import fc from 'fast-check';
import type { Outcome, SetOp } from '../../../chaos/checker/history.js';
import { type Scroll, checkScrolls } from '../../../chaos/checker/scroll.js';
import { fcParams } from '../../support/fc.js';

const add = (element: string, invokeMs: number, completeMs: number, outcome: Outcome = 'ok'): SetOp => ({ kind: 'add', element, invokeMs, completeMs, outcome, node: 'n1' });
const del = (element: string, invokeMs: number, completeMs: number, outcome: Outcome = 'ok'): SetOp => ({ kind: 'delete', element, invokeMs, completeMs, outcome, node: 'n1' });
const scroll = (startMs: number, endMs: number, ids: string[]): Scroll => ({ startMs, endMs, ids, nodes: ['n1'] });
const types = (scrolls: Scroll[], history: SetOp[]) => checkScrolls(scrolls, history).anomalies.map((a) => a.type);

t.test('cases', (t) => {
  const h = [add('e1', 0, 10), add('e2', 0, 10), add('e3', 50, 60), del('e2', 20, 30)];
  t.same(types([scroll(40, 45, ['e1'])], h), []);
  t.same(types([scroll(40, 45, [])], h), ['missing'], 'e1 was acknowledged before and never deleted');
  t.same(types([scroll(15, 25, ['e1'])], h), [], 'e2 may be gone: its delete was invoked during the scroll');
  t.same(types([scroll(15, 25, ['e1', 'e2'])], h), [], '… or not yet');
  t.same(types([scroll(40, 45, ['e1', 'e2'])], h), [], 'a delete acknowledged before the scroll may still show (the checker is not the set checker)');
  t.same(types([scroll(40, 45, ['e1', 'e3'])], h), ['unexpected'], 'e3 was added after the scroll ended');
  t.same(types([scroll(40, 55, ['e1', 'e3'])], h), [], 'during it, it may show');
  t.same(types([scroll(40, 50, ['e1', 'e3'])], h), [], 'invoked in the millisecond the scroll ended, too');
  t.same(types([scroll(10, 45, [])], [add('e1', 0, 10)]), [], 'completed in the millisecond the scroll began: not surely before it');
  t.same(types([scroll(40, 55, ['e1', 'e9'])], h), ['unexpected'], 'nobody added e9');
  t.same(types([scroll(40, 45, ['e1'])], [...h, add('e4', 0, 10, 'fail')]), [], 'a failed add did not happen');
  t.same(types([scroll(40, 45, ['e1', 'e4'])], [...h, add('e4', 0, 10, 'fail')]), ['unexpected']);
  t.same(types([scroll(40, 45, ['e1'])], [...h, add('e5', 0, 10, 'unknown')]), [], 'an add in doubt need not show');
  t.same(types([scroll(40, 45, ['e1', 'e1'])], h), ['repeated']);
  t.same(types([scroll(40, 55, ['e3', 'e1'])], h), ['unordered']);
  const r = checkScrolls([scroll(40, 45, ['e1']), scroll(46, 47, [])], h);
  t.match(r, { ok: false, scrolls: 2, listed: 1, anomalies: [{ type: 'missing', scroll: 1, ids: ['e1'], count: 1 }] });
  t.end();
});

interface Spec {
  addAt: number;
  addLen: number;
  addOutcome: Outcome;
  addEffect: number;
  addTakes: boolean;
  del?: { gap: number; len: number; outcome: Outcome; effect: number; takes: boolean };
}
const arbOutcome = fc.constantFrom<Outcome>('ok', 'ok', 'unknown', 'fail');
const arbSpec: fc.Arbitrary<Spec> = fc.record(
  {
    addAt: fc.integer({ min: 0, max: 100 }),
    addLen: fc.integer({ min: 1, max: 20 }),
    addOutcome: arbOutcome,
    addEffect: fc.double({ min: 0, max: 1, noNaN: true }),
    addTakes: fc.boolean(),
    del: fc.record({ gap: fc.integer({ min: 0, max: 40 }), len: fc.integer({ min: 1, max: 20 }), outcome: arbOutcome, effect: fc.double({ min: 0, max: 1, noNaN: true }), takes: fc.boolean() }),
  },
  { requiredKeys: ['addAt', 'addLen', 'addOutcome', 'addEffect', 'addTakes'] },
);

/** The history, and when each element is in the set (from its add's effect until its delete's). */
function build(specs: readonly Spec[]): { history: SetOp[]; inSet: (id: string, ms: number) => boolean } {
  const history: SetOp[] = [];
  const spans = new Map<string, [number, number]>();
  specs.forEach((s, i) => {
    const id = `e${i + 1}`;
    const addEnd = s.addAt + s.addLen;
    history.push(add(id, s.addAt, addEnd, s.addOutcome));
    const added = s.addOutcome === 'ok' || (s.addOutcome === 'unknown' && s.addTakes);
    let from = added ? s.addAt + s.addEffect * s.addLen : Infinity;
    let to = Infinity;
    if (s.del !== undefined) {
      const at = addEnd + s.del.gap;
      history.push(del(id, at, at + s.del.len, s.del.outcome));
      // A delete of an element not there yet answers 404: a `fail`, as the workload records it.
      const deletes = s.del.outcome === 'ok' || (s.del.outcome === 'unknown' && s.del.takes);
      if (deletes) to = at + s.del.effect * s.del.len;
      if (to < from) from = Infinity;
    }
    spans.set(id, [from, to]);
  });
  return { history, inSet: (id, ms) => spans.get(id)![0] <= ms && ms < spans.get(id)![1] };
}

const arbRun = fc.tuple(fc.array(arbSpec, { minLength: 1, maxLength: 30 }), fc.integer({ min: 0, max: 160 }), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 20 }));
const sortIds = (ids: string[]) => ids.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

t.test('honest scrolls: no anomaly', (t) => {
  fc.assert(
    fc.property(arbRun, ([specs, at, before, after]) => {
      const { history, inSet } = build(specs);
      const ids = sortIds(specs.map((_, i) => `e${i + 1}`).filter((id) => inSet(id, at)));
      const r = checkScrolls([scroll(at - before, at + after, ids)], history);
      return r.ok || (console.error(JSON.stringify({ specs, at, ids, anomalies: r.anomalies })), false);
    }),
    fcParams(),
  );
  t.end();
});

t.test('broken scrolls: each fault found', (t) => {
  let dropped = 0;
  fc.assert(
    fc.property(arbRun, fc.nat(), ([specs, at, before, after], pick) => {
      const { history, inSet } = build(specs);
      const ids = sortIds(specs.map((_, i) => `e${i + 1}`).filter((id) => inSet(id, at)));
      const s = scroll(at - before, at + after, ids);
      const found = (broken: Scroll) => checkScrolls([broken], history).anomalies.map((a) => a.type);
      if (!found({ ...s, ids: sortIds([...ids, 'e999']) }).includes('unexpected')) return false;
      if (ids.length === 0) return true;
      const victim = ids[pick % ids.length]!;
      if (!found({ ...s, ids: sortIds([...ids, victim]) }).includes('repeated')) return false;
      if (ids.length >= 2 && !found({ ...s, ids: [ids[1]!, ids[0]!, ...ids.slice(2)] }).includes('unordered')) return false;
      // Dropping an element is found when the checker could know it had to be there.
      const spec = specs[Number(victim.slice(1)) - 1]!;
      const mustList = spec.addOutcome === 'ok' && spec.addAt + spec.addLen < s.startMs && (spec.del === undefined || spec.del.outcome === 'fail' || spec.addAt + spec.addLen + spec.del.gap > s.endMs);
      const missed = found({ ...s, ids: ids.filter((id) => id !== victim) }).includes('missing');
      if (mustList) dropped++;
      return missed === mustList;
    }),
    fcParams(),
  );
  t.ok(dropped > 0, `${dropped} runs dropped an element that had to be listed`);
  t.end();
});
