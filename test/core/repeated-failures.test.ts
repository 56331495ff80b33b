// RepeatedFailures against a model: every failure is either logged or counted in the next
// line of its key; the first failure of a run is logged; lines of one run are at least
// `everyMs` apart.
import t from 'tap';
import fc from 'fast-check';
import type { Logger } from 'pino';
import { RepeatedFailures } from '../../src/core/repeated-failures.js';
import { fcParams } from '../support/fc.js';

const EVERY = 1_000;

t.test('every failure is logged or counted; a run starts with a line; lines of a run are everyMs apart', (t) => {
  const step = fc.record({ key: fc.constantFrom('a', 'b', 'c'), ok: fc.boolean(), advanceMs: fc.integer({ min: 0, max: 700 }) });
  fc.assert(
    fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
      const gate = new RepeatedFailures(EVERY);
      let now = 0;
      const failing = new Map<string, { failures: number; accounted: number; lastLineMs: number }>();
      for (const s of steps) {
        now += s.advanceMs;
        if (s.ok) {
          if (gate.succeeded(s.key) !== failing.has(s.key)) return false;
          failing.delete(s.key);
          continue;
        }
        const run = failing.get(s.key);
        const line = gate.failed(s.key, now);
        if (run === undefined) {
          if (line !== 0) return false; // the first failure of a run: logged, nothing skipped
          failing.set(s.key, { failures: 1, accounted: 1, lastLineMs: now });
          continue;
        }
        run.failures++;
        if (line === undefined) {
          if (now - run.lastLineMs >= EVERY) return false; // due, yet skipped
          continue;
        }
        if (now - run.lastLineMs < EVERY) return false; // too soon
        // This line accounts for itself and the failures skipped since the last one.
        run.accounted += line + 1;
        if (run.accounted !== run.failures) return false;
        run.lastLineMs = now;
      }
      return true;
    }),
    fcParams(),
  );
  t.end();
});

t.test('an example: a run, a recovery, a new run', (t) => {
  const gate = new RepeatedFailures(EVERY);
  t.same([0, 100, 900, 1_000, 1_500, 2_200].map((ms) => gate.failed('k', ms)), [0, undefined, undefined, 2, undefined, 1]);
  t.ok(gate.succeeded('k'));
  t.notOk(gate.succeeded('k'), 'no run to end');
  t.equal(gate.failed('k', 2_300), 0, 'a new run logs at once');
  t.end();
});

t.test('logFailure: warn for the first and for each due report (with the count not logged), debug between', (t) => {
  const lines: string[] = [];
  const log = {
    warn: (fields: Record<string, unknown>, msg: string) => lines.push(`warn ${JSON.stringify(fields)} ${msg}`),
    debug: (_fields: Record<string, unknown>, msg: string) => lines.push(`debug ${msg}`),
  } as unknown as Logger;
  const gate = new RepeatedFailures(EVERY);
  for (const ms of [0, 10, 20, 1_500]) gate.logFailure(log, 'k', ms, { key: 'k' }, 'step failed');
  t.same(lines, ['warn {"key":"k"} step failed', 'debug step failed', 'debug step failed', 'warn {"key":"k","unlogged":2} step failed (2 more failures of it since the last report)']);
  t.end();
});
