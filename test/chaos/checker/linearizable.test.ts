// The register linearizability checker: classic cases by hand, then agreement with a
// brute-force checker (every order consistent with real time, every subset of the unknown
// ops) on small random histories, linearizable and not, and the budget.
import t from 'tap';
import fc from 'fast-check';
import type { Outcome, RegisterOp, RegisterValue } from '../../../chaos/checker/history.js';
import { checkLinearizable, checkRegister } from '../../../chaos/checker/linearizable.js';
import { fcParams } from '../../support/fc.js';

const BUDGET = { stepBudget: 1_000_000 };
const w = (value: RegisterValue, invokeMs: number, completeMs: number, outcome: Outcome = 'ok', key = 'x'): RegisterOp => ({ kind: 'write', key, value, invokeMs, completeMs, outcome, node: 'n1', process: 'p1' });
const r = (value: RegisterValue | undefined, invokeMs: number, completeMs: number, outcome: Outcome = 'ok', key = 'x'): RegisterOp => ({ kind: 'read', key, ...(value === undefined ? {} : { value }), invokeMs, completeMs, outcome, node: 'n2', process: 'p2' });
const cas = (expected: RegisterValue, value: RegisterValue, result: boolean | undefined, invokeMs: number, completeMs: number, outcome: Outcome = 'ok', key = 'x'): RegisterOp => ({ kind: 'cas', key, expected, value, ...(result === undefined ? {} : { result }), invokeMs, completeMs, outcome, node: 'n3', process: 'p3' });
const verdict = (h: RegisterOp[]) => checkLinearizable(h, BUDGET).verdict;

t.test('classic cases', (t) => {
  t.equal(verdict([]), 'ok', 'the empty history');
  t.equal(verdict([w(1, 0, 10), r(1, 20, 30)]), 'ok', 'read after write sees it');
  t.equal(verdict([w(1, 0, 10), r(null, 20, 30)]), 'not-linearizable', 'stale read after the write completed');
  t.equal(verdict([w(1, 0, 10), r(null, 5, 30)]), 'ok', 'a read concurrent with the write may see the old value');
  t.equal(verdict([w(1, 0, 10), r(1, 5, 30)]), 'ok', '… or the new one');
  t.equal(verdict([w(1, 0, 10), w(2, 20, 30), r(1, 40, 50)]), 'not-linearizable', 'a read of an overwritten value');
  t.equal(verdict([w(1, 0, 10), r(1, 20, 30), r(null, 40, 50)]), 'not-linearizable', 'reads do not go back in time');
  t.equal(verdict([w(1, 0, 100), r(1, 10, 20), r(null, 30, 40)]), 'not-linearizable', 'once one read saw the write, later reads must too');
  t.equal(verdict([w(1, 0, 10), r(2, 20, 30)]), 'not-linearizable', 'a value nobody wrote');
  t.equal(verdict([w(1, 0, 10, 'fail'), r(1, 20, 30)]), 'not-linearizable', 'a failed write did not happen');
  t.equal(verdict([w(1, 0, 10, 'unknown'), r(1, 20, 30)]), 'ok', 'an unknown write that later appears');
  t.equal(verdict([w(1, 0, 10, 'unknown'), r(null, 20, 30)]), 'ok', '… or never does');
  t.equal(verdict([w(1, 0, 10, 'unknown'), r(null, 20, 30), r(1, 40, 50)]), 'ok', 'an unknown write may take effect long after it timed out');
  t.equal(verdict([w(1, 0, 10, 'unknown'), r(1, 20, 30), r(null, 40, 50)]), 'not-linearizable', '… but once seen it stays');
  t.equal(verdict([w(1, 0, 10), r(undefined, 20, 30, 'unknown')]), 'ok', 'an unknown read says nothing');
  t.equal(verdict([w(1, 0, 10), cas(1, 2, true, 20, 30), r(2, 40, 50)]), 'ok', 'a successful cas');
  t.equal(verdict([w(1, 0, 10), cas(1, 2, false, 20, 30)]), 'not-linearizable', 'a cas that failed though the value was expected');
  t.equal(verdict([w(1, 0, 10), cas(3, 2, false, 20, 30), r(1, 40, 50)]), 'ok', 'a cas that rightly failed changes nothing');
  t.equal(verdict([w(1, 0, 10), cas(3, 2, true, 20, 30)]), 'not-linearizable', 'a cas that succeeded without its expected value');
  t.equal(verdict([w(1, 0, 10), cas(1, 2, undefined, 20, 30, 'unknown'), r(2, 40, 50)]), 'ok', 'an unknown cas that took effect');
  t.equal(verdict([w(1, 0, 10), cas(1, 2, undefined, 20, 30, 'unknown'), r(1, 40, 50)]), 'ok', 'an unknown cas that did not');
  t.equal(verdict([w(1, 0, 10), cas(3, 2, undefined, 20, 30, 'unknown'), r(2, 40, 50)]), 'not-linearizable', 'an unknown cas cannot succeed without its expected value');
  t.equal(verdict([w(1, 0, 10, 'ok', 'a'), w(2, 0, 10, 'ok', 'b'), r(1, 20, 30, 'ok', 'a'), r(2, 20, 30, 'ok', 'b')]), 'ok', 'keys are independent');
  t.equal(verdict([w(1, 0, 10, 'ok', 'a'), r(1, 20, 30, 'ok', 'b')]), 'not-linearizable', 'a value written to another key');
  t.equal(checkLinearizable([r(7, 0, 10)], { ...BUDGET, initial: 7 }).verdict, 'ok', 'the initial value is injected');
  t.end();
});

t.test('the report names the key, a longest partial linearization and the op that blocked it', (t) => {
  const h = [w(1, 0, 10, 'ok', 'a'), w(1, 0, 10, 'ok', 'b'), w(2, 20, 30, 'ok', 'b'), r(1, 40, 50, 'ok', 'b')];
  const result = checkLinearizable(h, BUDGET);
  t.equal(result.ok, false);
  t.equal(result.keys, 2);
  t.equal(result.failures.length, 1);
  const f = result.failures[0]!;
  t.equal(f.key, 'b');
  t.same(f.partial, [h[1], h[2]]);
  t.equal(f.valueAfterPartial, 2);
  t.same(f.blockedBy, h[3]);
  t.end();
});

t.test('the search is bounded: out of budget, the verdict is unknown', (t) => {
  // 14 concurrent writes of distinct values, then a read of a value nobody wrote: the search
  // would visit every subset of the writes before concluding.
  const h = [...Array.from({ length: 14 }, (_, i) => w(i, 0, 100)), r(99, 200, 210)];
  const small = checkLinearizable(h, { stepBudget: 1_000 });
  t.equal(small.verdict, 'unknown');
  t.equal(small.ok, false);
  t.equal(small.failures[0]!.steps, 1_000);
  t.equal(checkLinearizable(h, BUDGET).verdict, 'not-linearizable', 'with enough budget it decides');
  t.throws(() => checkLinearizable(h, { stepBudget: 0 }));
  const tight = checkLinearizable(h, { ...BUDGET, cacheWordsMax: 500 });
  t.equal(tight.verdict, 'unknown', 'so is the cache');
  t.ok(tight.failures[0]!.steps < BUDGET.stepBudget);
  t.end();
});

t.test('a long history of sequential ops is quick to check', (t) => {
  const h: RegisterOp[] = [];
  for (let i = 0; i < 5_000; i++) h.push(i % 2 === 0 ? w(i, i * 10, i * 10 + 15) : r(i - 1, i * 10, i * 10 + 5));
  const result = checkLinearizable(h, BUDGET);
  t.equal(result.verdict, 'ok');
  t.end();
});

// ---- the brute-force oracle ----

/** Linearizable by exhaustion: some subset of the unknown ops, in some real-time-consistent order, satisfies the model. */
function bruteForce(history: readonly RegisterOp[], initial: RegisterValue = null): boolean {
  const keys = new Set(history.map((op) => op.key));
  return [...keys].every((key) => bruteKey(history.filter((op) => op.key === key), initial));
}

function bruteKey(history: readonly RegisterOp[], initial: RegisterValue): boolean {
  const definite = history.filter((op) => op.outcome === 'ok');
  const maybe = history.filter((op) => op.outcome === 'unknown' && op.kind !== 'read');
  for (let mask = 0; mask < 1 << maybe.length; mask++) {
    const ops = [...definite, ...maybe.filter((_, i) => (mask >> i) & 1)];
    const end = (op: RegisterOp) => (op.outcome === 'unknown' ? Infinity : op.completeMs);
    const placed = new Array<boolean>(ops.length).fill(false);
    const search = (value: RegisterValue, count: number): boolean => {
      if (count === ops.length) return true;
      for (let i = 0; i < ops.length; i++) {
        if (placed[i]) continue;
        const op = ops[i]!;
        // every op that completed before this one began must already be placed
        if (ops.some((p, j) => !placed[j] && j !== i && end(p) < op.invokeMs)) continue;
        let next: RegisterValue;
        if (op.kind === 'read') {
          if (op.value !== value) continue;
          next = value;
        } else if (op.kind === 'write') {
          next = op.value;
        } else if (op.outcome === 'unknown') {
          next = value === op.expected ? op.value : value; // took effect, with result true or false
        } else {
          if ((value === op.expected) !== op.result) continue;
          next = op.result ? op.value : value;
        }
        placed[i] = true;
        if (search(next, count + 1)) return true;
        placed[i] = false;
      }
      return false;
    };
    if (search(initial, 0)) return true;
  }
  return false;
}

/** A linearization is valid: the model accepts it in order and it respects real time. */
function validWitness(witness: readonly RegisterOp[], history: readonly RegisterOp[]): boolean {
  let value: RegisterValue = null;
  for (const op of witness) {
    if (op.kind === 'read' && op.value !== value) return false;
    if (op.kind === 'write') value = op.value;
    if (op.kind === 'cas') {
      const hit = value === op.expected;
      if (op.outcome === 'ok' && hit !== op.result) return false;
      if (hit) value = op.value;
    }
  }
  const pos = new Map(witness.map((op, i) => [op, i]));
  for (const a of witness) for (const b of witness) if (a.outcome === 'ok' && a.completeMs < b.invokeMs && pos.get(a)! > pos.get(b)!) return false;
  return history.filter((op) => op.outcome === 'ok').every((op) => pos.has(op));
}

// ---- generators ----

const VALUES = [0, 1, 2];
const arbOutcome = fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'ok', 'unknown', 'fail');

/** Random ops of 2–3 processes, each process one op at a time; reads return any value. */
const arbRandomHistory: fc.Arbitrary<RegisterOp[]> = fc
  .tuple(
    fc.integer({ min: 2, max: 3 }),
    fc.array(
      fc.record({
        p: fc.nat(2),
        kind: fc.constantFrom('read', 'write', 'cas'),
        value: fc.constantFrom(...VALUES),
        expected: fc.constantFrom(null, ...VALUES),
        result: fc.boolean(),
        gap: fc.nat(15),
        length: fc.nat(30),
        outcome: arbOutcome,
        readValue: fc.constantFrom(null, ...VALUES),
      }),
      { maxLength: 7 },
    ),
  )
  .map(([processes, specs]) => {
    const clock = new Array<number>(processes).fill(0);
    return specs.map((s): RegisterOp => {
      const p = s.p % processes;
      const invokeMs = clock[p]! + s.gap;
      const completeMs = invokeMs + s.length;
      clock[p] = completeMs + 1;
      const base = { key: 'x', node: `n${p + 1}`, process: `p${p}`, invokeMs, completeMs, outcome: s.outcome };
      if (s.kind === 'write') return { ...base, kind: 'write', value: s.value };
      if (s.kind === 'cas') return { ...base, kind: 'cas', expected: s.expected, value: s.value, ...(s.outcome === 'ok' ? { result: s.result } : {}) };
      return { ...base, kind: 'read', ...(s.outcome === 'ok' ? { value: s.readValue } : {}) };
    });
  });

/**
 * A valid sequential execution given overlapping intervals around its linearization points
 * (so it is linearizable), then maybe spoiled: one read's value changed, or an op's outcome
 * changed (a failed write that did happen, an unknown op).
 */
const arbSequentialHistory: fc.Arbitrary<{ history: RegisterOp[]; spoiled: boolean }> = fc
  .record({
    specs: fc.array(
      fc.record({
        kind: fc.constantFrom('read', 'write', 'cas', 'cas'),
        value: fc.constantFrom(...VALUES),
        expectCurrent: fc.boolean(),
        before: fc.integer({ min: 1, max: 25 }),
        after: fc.integer({ min: 1, max: 25 }),
      }),
      { minLength: 1, maxLength: 7 },
    ),
    processes: fc.integer({ min: 2, max: 3 }),
    spoil: fc.option(fc.record({ at: fc.nat(6), readValue: fc.constantFrom(null, ...VALUES), outcome: fc.constantFrom<Outcome>('fail', 'unknown') }), { nil: undefined }),
  })
  .map(({ specs, processes, spoil }) => {
    let value: RegisterValue = null;
    const history = specs.map((s, i): RegisterOp => {
      const point = (i + 1) * 10;
      const base = { key: 'x', node: `n${(i % processes) + 1}`, process: `p${i % processes}`, invokeMs: point - s.before, completeMs: point + s.after, outcome: 'ok' as Outcome };
      if (s.kind === 'read') return { ...base, kind: 'read', value };
      if (s.kind === 'write') {
        value = s.value;
        return { ...base, kind: 'write', value: s.value };
      }
      const expected: RegisterValue = s.expectCurrent ? value : s.value;
      const result = value === expected;
      if (result) value = s.value;
      return { ...base, kind: 'cas', expected, value: s.value, result };
    });
    if (spoil === undefined) return { history, spoiled: false };
    const at = spoil.at % history.length;
    const op = history[at]!;
    history[at] = op.kind === 'read' ? { ...op, value: spoil.readValue } : { ...op, outcome: spoil.outcome };
    return { history, spoiled: true };
  });

t.test('agrees with brute force on small random histories', (t) => {
  const seen = { ok: 0, bad: 0 };
  fc.assert(
    fc.property(arbRandomHistory, (h) => {
      const result = checkLinearizable(h, BUDGET);
      const expected = bruteForce(h);
      if (result.verdict === 'unknown') return false;
      if (expected) seen.ok++;
      else seen.bad++;
      return result.ok === expected;
    }),
    fcParams(1000),
  );
  t.ok(seen.ok > 0 && seen.bad > 0, `both verdicts were exercised (${seen.ok} ok, ${seen.bad} not)`);
  t.end();
});

t.test('agrees with brute force on sequential executions, spoiled or not; a witness is a valid linearization', (t) => {
  const seen = { ok: 0, bad: 0 };
  fc.assert(
    fc.property(arbSequentialHistory, ({ history, spoiled }) => {
      const result = checkLinearizable(history, BUDGET);
      const expected = bruteForce(history);
      if (expected) seen.ok++;
      else seen.bad++;
      if (!spoiled && !result.ok) return false;
      if (result.ok !== expected) return false;
      if (result.ok) return true;
      const f = result.failures[0]!;
      return f.verdict === 'not-linearizable' && f.blockedBy !== undefined && f.partial !== undefined;
    }),
    fcParams(1000),
  );
  t.ok(seen.ok > 0 && seen.bad > 0, `both verdicts were exercised (${seen.ok} ok, ${seen.bad} not)`);
  t.end();
});

t.test('keys are checked apart: the verdict is the conjunction of the keys\' (brute force per key)', (t) => {
  const twoKeys = fc.tuple(arbRandomHistory, arbRandomHistory).map(([a, b]) => [...a, ...b.map((op) => ({ ...op, key: 'y' }))]);
  fc.assert(
    fc.property(twoKeys, (h) => {
      const result = checkLinearizable(h, BUDGET);
      const bad = ['x', 'y'].filter((k) => h.some((op) => op.key === k) && !bruteForce(h.filter((op) => op.key === k)));
      return result.ok === (bad.length === 0) && result.failures.map((f) => f.key).sort().join() === bad.join();
    }),
    fcParams(300),
  );
  t.pass('agrees');
  t.end();
});

t.test('the linearization it returns for a linearizable history is a valid one', (t) => {
  fc.assert(
    fc.property(fc.oneof(arbRandomHistory, arbSequentialHistory.map((x) => x.history)), (h) => {
      const result = checkRegister('x', h, BUDGET);
      if (result.verdict !== 'ok') return true;
      return result.linearization !== undefined && validWitness(result.linearization, h);
    }),
    fcParams(500),
  );
  t.pass('every witness checked');
  t.end();
});
