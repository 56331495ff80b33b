// A vector shard's reshard fence (`src/vector/fence.ts`) over random logs of writes, fences and
// lifts with attempt numbers: the writes it refuses are those a plain model refuses; after the
// fact it names exactly the writes it refused at apply time (what a reshard's replay skips);
// re-applied from any point after a restart, it decides every write as it did and ends in the
// same state; and it survives its wire form.
import fc from 'fast-check';
import t from 'tap';
import { type FenceState, NO_FENCE, applyFence, applyLift, fenceFromWire, fenceToWire, refusedBy } from '../../src/vector/fence.js';
import { fcParams } from '../support/fc.js';

type Op = { kind: 'write' } | { kind: 'fence'; attempt: number } | { kind: 'lift'; attempt: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'write' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fence' as const), attempt: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('lift' as const), attempt: fc.integer({ min: 1, max: 4 }) }) },
);

/** Entry i + 1 of the log is ops[i]. */
function run(ops: readonly Op[], from: FenceState, firstIndex: number): { state: FenceState; refused: Map<number, boolean>; after: FenceState[] } {
  let state = from;
  const refused = new Map<number, boolean>();
  const after: FenceState[] = [];
  ops.forEach((op, i) => {
    const index = i + 1;
    if (index >= firstIndex) {
      if (op.kind === 'write') refused.set(index, refusedBy(state, index) !== undefined);
      else state = (op.kind === 'fence' ? applyFence(state, index, op.attempt) : applyLift(state, index, op.attempt)).state;
    }
    after.push(state);
  });
  return { state, refused, after };
}

/** The plain model: one fence at a time, by attempt; a lift names an attempt and ends fences up to it. */
function model(ops: readonly Op[]): Map<number, boolean> {
  let fenced: number | null = null;
  let lifted = -1;
  const refused = new Map<number, boolean>();
  ops.forEach((op, i) => {
    if (op.kind === 'write') refused.set(i + 1, fenced !== null);
    else if (op.kind === 'fence') {
      if (fenced !== null) fenced = Math.max(fenced, op.attempt);
      else if (op.attempt > lifted) fenced = op.attempt;
    } else {
      lifted = Math.max(lifted, op.attempt);
      if (fenced !== null && fenced <= op.attempt) fenced = null;
    }
  });
  return refused;
}

t.test('writes are refused as the plain model refuses them, and named after the fact as they were refused', async (t) => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
      const { state, refused } = run(ops, NO_FENCE, 1);
      const want = model(ops);
      for (const [index, was] of refused) {
        if (was !== want.get(index)) throw new Error(`write ${index}: refused ${was}, the model ${want.get(index)}`);
        // What a reshard's replay reads later: the final state names the same writes.
        if ((refusedBy(state, index) !== undefined) !== was) throw new Error(`write ${index}: refused ${was} when applied, ${!was} after the fact`);
      }
    }),
    fcParams(),
  );
  t.pass('held');
});

t.test('re-applied from any point after a restart, every write is decided as before and the state ends the same', async (t) => {
  fc.assert(
    fc.property(
      fc.array(opArb, { maxLength: 60 }).chain((ops) => fc.tuple(fc.constant(ops), fc.nat(ops.length), fc.nat(ops.length))),
      ([ops, a, b]) => {
        // The shard's data had applied up to `dataAt`; its fence state was saved after entry
        // `fenceAt` (it is saved as each fence or lift applies, so it is never behind the data).
        const dataAt = Math.min(a, b);
        const fenceAt = Math.max(a, b);
        const first = run(ops, NO_FENCE, 1);
        const saved = fenceAt === 0 ? NO_FENCE : first.after[fenceAt - 1]!;
        const again = run(ops, fenceFromWire(fenceToWire(saved))!, dataAt + 1);
        for (const [index, was] of again.refused) {
          if (was !== first.refused.get(index)) throw new Error(`write ${index}: refused ${first.refused.get(index)} the first time, ${was} after a restart at ${dataAt}/${fenceAt}`);
        }
        t.same(again.state, first.state);
      },
    ),
    fcParams(),
  );
});

t.test('a lift never ends a later attempt\'s fence; a fence an earlier lift named fences nothing', (t) => {
  let s = applyFence(NO_FENCE, 10, 2).state;
  const early = applyLift(s, 11, 1);
  t.same(early.outcome, { kind: 'unfenced', lifted: false }, 'a late lift of attempt 1 leaves attempt 2 fenced');
  t.equal(refusedBy(early.state, 12), 10);
  s = applyLift(early.state, 13, 2).state;
  t.equal(refusedBy(s, 14), undefined, 'the lift of attempt 2 ends it');
  t.equal(refusedBy(s, 12), 10, 'and the writes inside stay refused');
  const late = applyFence(s, 15, 2);
  t.same(late.outcome, { kind: 'fence_stale', attempt: 2 }, 'a late fence of attempt 2 fences nothing');
  t.equal(refusedBy(late.state, 16), undefined);
  const next = applyFence(late.state, 17, 3);
  t.same(next.outcome, { kind: 'fenced', at: 17 }, 'attempt 3 fences');
  t.same(applyFence(next.state, 18, 3).outcome, { kind: 'fenced', at: 17 }, 'a second fence answers the first');
  t.end();
});

t.test('the wire form: a round trip, a stored index from before lifts, and garbage', (t) => {
  const s = applyLift(applyFence(applyFence(NO_FENCE, 3, 1).state, 4, 1).state, 9, 1).state;
  t.same(fenceFromWire(fenceToWire(s)), s);
  t.same(fenceFromWire(7), { current: { index: 7, attempt: 0 }, lifted: [], liftedAttempt: -1, through: 7 }, 'a fence index stored by a build before lifts');
  for (const bad of [null, 'x', -1, { c: 'x', l: [], la: 0, t: 0 }, { c: null, l: [[1]], la: 0, t: 0 }, { c: null, l: [], la: 0 }]) t.equal(fenceFromWire(bad), undefined, JSON.stringify(bad));
  t.end();
});
