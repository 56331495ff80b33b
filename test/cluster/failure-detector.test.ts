// The failure detector's pure decisions: thresholds, hysteresis against flapping links, and a
// new leader that has not heard anybody yet.
import t from 'tap';
import fc from 'fast-check';
import { DEFAULT_DETECTOR as O, type Observation, healthOf, observe, statusChanges } from '../../src/cluster/failure-detector.js';
import type { NodeRecord } from '../../src/cluster/meta-state.js';
import { fcParams } from '../support/fc.js';

const node = (status: NodeRecord['status'], statusSinceMs = 0, name = 'n2'): NodeRecord => ({ name, incarnation: 'i', http: '', grpc: '', zone: 'z', status, joinedAtMs: 0, statusSinceMs });

t.test('thresholds: suspect after suspectAfterMs of silence, down after downAfterMs', (t) => {
  const obs: Observation = { lastSeenMs: 10_000, aliveSinceMs: 0 };
  t.equal(healthOf(node('up'), obs, 10_000 + O.suspectAfterMs - 1, 0, O), 'up');
  t.equal(healthOf(node('up'), obs, 10_000 + O.suspectAfterMs, 0, O), 'suspect');
  t.equal(healthOf(node('suspect'), obs, 10_000 + O.downAfterMs, 0, O), 'down');
  t.equal(healthOf(node('up'), obs, 10_000 + O.downAfterMs, 0, O), 'down', 'down is never delayed');
  t.end();
});

t.test('a new leader counts silence from when it started watching', (t) => {
  t.equal(healthOf(node('up'), undefined, 5_000 + O.downAfterMs - 1, 5_000, O), 'suspect');
  t.equal(healthOf(node('up'), { lastSeenMs: 1, aliveSinceMs: 1 }, 5_000 + 100, 5_000, O), 'up');
  t.end();
});

t.test('a node that just joined is not down before it had time to dial', (t) => {
  const joined = node('up', 50_000);
  t.equal(healthOf(joined, undefined, 50_000 + O.downAfterMs - 1, 0, O), 'suspect');
  t.equal(healthOf(joined, undefined, 50_000 + O.suspectAfterMs - 1, 0, O), 'up');
  t.end();
});

t.test('the leader itself is always up; leaving and left nodes are not the detector\'s', (t) => {
  const nodes = [node('suspect', 0, 'n1'), node('leaving', 0, 'n2'), node('left', 0, 'n3')];
  t.same(statusChanges(nodes, new Map(), 'n1', 100_000, 0, O), [{ name: 'n1', status: 'up' }]);
  t.end();
});

t.test('simulated links: silence beyond downAfterMs always ends in down; a steady node is never marked', (t) => {
  fc.assert(
    fc.property(fc.array(fc.boolean(), { minLength: 20, maxLength: 300 }), (heardPerStep) => {
      // One detector round every 250 ms; a `true` step delivers a heartbeat.
      let rec = node('up');
      let obs: Observation | undefined;
      let lastSeen: number | undefined = 0;
      let silentSince = 0;
      let changes = 0;
      for (let i = 1; i <= heardPerStep.length; i++) {
        const now = i * 250;
        if (heardPerStep[i - 1]) {
          lastSeen = now;
          silentSince = now;
        }
        obs = observe(obs, lastSeen, now, O);
        const next = healthOf(rec, obs, now, 0, O);
        if (now - silentSince >= O.downAfterMs) t.equal(next, 'down');
        if (next !== rec.status) {
          changes++;
          rec = { ...rec, status: next, statusSinceMs: now };
        }
      }
      if (heardPerStep.every(Boolean)) t.equal(changes, 0);
      // Hysteresis: up/suspect flips at most once per dwell period (plus the downs).
      t.ok(changes <= Math.ceil((heardPerStep.length * 250) / O.minDwellMs) * 2 + 2, `changes ${changes}`);
    }),
    fcParams(200),
  );
  t.end();
});
