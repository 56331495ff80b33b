import fc from 'fast-check';
import t from 'tap';
import { type HealthReport, type HealthState, mergeHealth, worseHealth } from '../../src/core/health.js';
import { fcParams } from '../support/fc.js';

const STATES: HealthState[] = ['ok', 'degraded', 'failing'];
const state = fc.constantFrom(...STATES);
const report = fc.record({ status: state, problems: fc.option(fc.array(fc.string(), { maxLength: 3 }), { nil: undefined }) }, { requiredKeys: ['status'] });

t.test('the merged status is the worst part, and every problem is kept in order', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.option(report, { nil: undefined }), { maxLength: 6 }), (parts) => {
      const merged = mergeHealth(parts as (HealthReport | undefined)[]);
      const present = parts.filter((p): p is NonNullable<typeof p> => p !== undefined);
      const worst = present.reduce((w, p) => Math.max(w, STATES.indexOf(p.status)), 0);
      const problems = present.flatMap((p) => p.problems ?? []);
      return merged.status === STATES[worst] && JSON.stringify(merged.problems ?? []) === JSON.stringify(problems);
    }),
    fcParams(),
  );
  t.pass();
});

t.test('worseHealth is the maximum of the order ok < degraded < failing', async (t) => {
  for (const a of STATES) for (const b of STATES) t.equal(worseHealth(a, b), STATES[Math.max(STATES.indexOf(a), STATES.indexOf(b))]);
});
