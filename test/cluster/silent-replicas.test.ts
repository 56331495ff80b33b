// SilentReplicas (cluster/silent-replicas.ts), pure: against a model over random looks.
import fc from 'fast-check';
import t from 'tap';
import { SilentReplicas, reportAfterMs } from '../../src/cluster/silent-replicas.js';
import { fcParams } from '../support/fc.js';

const PEERS = ['n2', 'n3'] as const;

t.test('a replica is reported once it was silent, with its node up, at every look of a led, unquiesced group for the span', (t) => {
  const look = fc.record({
    group: fc.constantFrom('g1', 'g2'),
    led: fc.boolean(),
    quiesced: fc.boolean(),
    hosted: fc.boolean(),
    answered: fc.record({ n2: fc.boolean(), n3: fc.boolean() }),
    alive: fc.record({ n2: fc.boolean(), n3: fc.boolean() }),
    members: fc.subarray([...PEERS]),
    advanceMs: fc.integer({ min: 0, max: 3_000 }),
  });
  fc.assert(
    fc.property(fc.array(look, { maxLength: 40 }), (looks) => {
      const silent = new SilentReplicas();
      const model = new Map<string, number>(); // "group peer" -> since
      let now = 0;
      for (const l of looks) {
        now += l.advanceMs;
        const core = l.hosted
          ? { role: l.led ? 'leader' : 'follower', quiesced: l.quiesced, progress: new Map([['n1', { recentActive: true }], ...l.members.map((p) => [p, { recentActive: l.answered[p] }] as const)]) }
          : undefined;
        silent.look(l.group, core, 'n1', (node) => l.alive[node as 'n2' | 'n3'], now);
        for (const peer of PEERS) {
          const key = `${l.group} ${peer}`;
          const holds = l.hosted && l.led && !l.quiesced && l.members.includes(peer) && !l.answered[peer] && l.alive[peer];
          if (!holds) model.delete(key);
          else if (!model.has(key)) model.set(key, now);
        }
        const span = 5_000;
        const expected = [...model].filter(([, since]) => now - since >= span).map(([key, since]) => `${key} ${now - since}`).sort();
        const got = silent.silentFor(span, now).map((s) => `${s.group} ${s.peer} ${s.ms}`).sort();
        if (JSON.stringify(expected) !== JSON.stringify(got)) return false;
      }
      silent.retain(() => false);
      return silent.silentFor(0, now).length === 0;
    }),
    fcParams(),
  );
  t.end();
});

t.test('reported after 10 election timeouts, at least 5 s', (t) => {
  t.equal(reportAfterMs({ electionTicks: 10, tickMs: 50 }), 5_000);
  t.equal(reportAfterMs({ electionTicks: 20, tickMs: 50 }), 10_000);
  t.equal(reportAfterMs({ electionTicks: 2, tickMs: 10 }), 5_000);
  t.end();
});
