// RepeatedFailures against a model: every failure is either logged or counted in the next
// line of its key; lines of one key are at least `everyMs` apart, and a failure is logged as
// soon as `everyMs` passed since its key's last line, whatever succeeded in between.
import t from 'tap';
import fc from 'fast-check';
import type { Logger } from 'pino';
import { RepeatedFailures } from '../../src/core/repeated-failures.js';
import { fcParams } from '../support/fc.js';

const EVERY = 1_000;

t.test('every failure is logged or counted; lines of a key are everyMs apart; a due failure is logged', (t) => {
  const step = fc.record({ key: fc.constantFrom('a', 'b', 'c'), advanceMs: fc.integer({ min: 0, max: 700 }) });
  fc.assert(
    fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
      const gate = new RepeatedFailures(EVERY);
      let now = 0;
      const model = new Map<string, { failures: number; accounted: number; lastLineMs: number }>();
      for (const s of steps) {
        now += s.advanceMs;
        const line = gate.failed(s.key, now);
        const m = model.get(s.key);
        if (m === undefined) {
          if (line !== 0) return false; // a key's first failure: logged, nothing skipped
          model.set(s.key, { failures: 1, accounted: 1, lastLineMs: now });
          continue;
        }
        m.failures++;
        const due = now - m.lastLineMs >= EVERY;
        if (line === undefined) {
          if (due) return false;
          continue;
        }
        if (!due) return false;
        m.accounted += line + 1; // this line, and the failures skipped since the last one
        if (m.accounted !== m.failures) return false;
        m.lastLineMs = now;
      }
      return true;
    }),
    fcParams(),
  );
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
