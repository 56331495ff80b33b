import fc from 'fast-check';
import t from 'tap';
import { type Backoff, jitteredDelayMs, nominalDelayMs } from '../../src/core/backoff.js';
import type { Rand } from '../../src/core/rand.js';
import { fcParams } from '../support/fc.js';

const backoffArb: fc.Arbitrary<Backoff> = fc
  .tuple(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 1_000_000 }))
  .map(([baseMs, extraMs]) => ({ baseMs, capMs: baseMs + extraMs }));
const attemptArb = fc.integer({ min: 1, max: 200 });
/** A Rand that answers a fixed fraction of its range, so every draw is reachable. */
const randArb: fc.Arbitrary<Rand> = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }).map((u) => ({ int: (n) => Math.floor(u * n) }));

t.test('nominal delay: starts at base, never above cap, never shrinks', (t) => {
  fc.assert(
    fc.property(backoffArb, attemptArb, (backoff, attempt) => {
      const delay = nominalDelayMs(attempt, backoff);
      return nominalDelayMs(1, backoff) === backoff.baseMs && delay <= backoff.capMs && nominalDelayMs(attempt + 1, backoff) >= delay;
    }),
    fcParams(),
  );
  // The parameters in use today.
  t.same([1, 2, 3, 50].map((a) => nominalDelayMs(a, { baseMs: 1_000, capMs: 60_000 })), [1_000, 2_000, 4_000, 60_000]);
  t.same([1, 2, 7, 8].map((a) => nominalDelayMs(a, { baseMs: 100, capMs: 5_000 })), [100, 200, 5_000, 5_000]);
  t.same([1, 2, 6, 7].map((a) => nominalDelayMs(a, { baseMs: 50, capMs: 2_000 })), [50, 100, 1_600, 2_000]);
  t.end();
});

t.test('jittered delay: within [nominal/2, nominal], both ends reachable', (t) => {
  fc.assert(
    fc.property(backoffArb, attemptArb, randArb, (backoff, attempt, rand) => {
      const nominal = nominalDelayMs(attempt, backoff);
      const delay = jitteredDelayMs(attempt, backoff, rand);
      return Number.isInteger(delay) && delay >= nominal / 2 && delay <= nominal;
    }),
    fcParams(),
  );
  const backoff = { baseMs: 1_000, capMs: 60_000 };
  t.equal(jitteredDelayMs(3, backoff, { int: () => 0 }), 2_000);
  t.equal(jitteredDelayMs(3, backoff, { int: (n) => n - 1 }), 4_000);
  t.end();
});
