// The fault schedule: replayable from its seed, every fault healed inside its window and the
// run, and with keepQuorum a majority of live, mutually connected nodes at every instant
// (checked by brute force over node subsets against the network plan, not by the
// schedule's own bookkeeping).
import t from 'tap';
import fc from 'fast-check';
import { NEMESIS_KINDS, type ScheduleOptions, type ScheduledEvent, isHeal, schedule } from '../../../chaos/nemesis/schedule.js';
import { type Nemesis, planNetwork, reaches } from '../../../chaos/proxy/plan.js';
import { fcParams } from '../../support/fc.js';

const arbOptions: fc.Arbitrary<ScheduleOptions> = fc
  .record({
    seed: fc.integer(),
    n: fc.integer({ min: 1, max: 7 }),
    kinds: fc.subarray([...NEMESIS_KINDS], { minLength: 1 }),
    durationMs: fc.integer({ min: 0, max: 120_000 }),
    gap: fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 0, max: 10_000 })),
    fault: fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 0, max: 30_000 })),
    keepQuorum: fc.boolean(),
  })
  .map(({ seed, n, kinds, durationMs, gap, fault, keepQuorum }) => ({
    seed,
    nodes: Array.from({ length: n }, (_, i) => `n${i + 1}`),
    kinds,
    durationMs,
    gapMs: { min: gap[0], max: gap[0] + gap[1] },
    faultMs: { min: fault[0], max: fault[0] + fault[1] },
    keepQuorum,
  }));

function byFault(events: readonly ScheduledEvent[]): Map<number, ScheduledEvent[]> {
  const m = new Map<number, ScheduledEvent[]>();
  for (const e of events) m.set(e.fault, [...(m.get(e.fault) ?? []), e]);
  return m;
}

/** Whether some strict majority of nodes is live and mutually connected (brute force). */
function quorumExists(nodes: readonly string[], out: ReadonlySet<string>, net: Nemesis | undefined): boolean {
  const plan = planNetwork(nodes, net === undefined ? [] : [net]);
  for (let mask = 0; mask < 1 << nodes.length; mask++) {
    const group = nodes.filter((_, i) => mask & (1 << i));
    if (group.length <= nodes.length / 2 || group.some((x) => out.has(x))) continue;
    if (group.every((x) => group.every((y) => x === y || reaches(plan, x, y)))) return true;
  }
  return false;
}

t.test('the same seed and options give the same schedule', (t) => {
  fc.assert(fc.property(arbOptions, (o) => JSON.stringify(schedule(o)) === JSON.stringify(schedule(structuredClone(o)))), fcParams());
  t.end();
});

t.test('events are in time order inside the run; each fault is healed once, exactly at its end', (t) => {
  fc.assert(
    fc.property(arbOptions, (o) => {
      const events = schedule(o);
      for (let i = 1; i < events.length; i++) if (events[i]!.atMs < events[i - 1]!.atMs) return false;
      for (const evs of byFault(events).values()) {
        const [first, ...rest] = evs;
        const heals = evs.filter(isHeal);
        if (first === undefined || isHeal(first) || heals.length !== 1 || rest.at(-1) !== heals[0]) return false;
        if (first.atMs < 0 || first.durationMs < o.faultMs.min || heals[0]!.atMs !== first.atMs + first.durationMs || heals[0]!.atMs > o.durationMs) return false;
        if (first.target !== heals[0]!.target) return false;
        // a start killed part-way finishes before the real start
        for (const e of evs) if (e.action === 'start-and-kill' && !(e.atMs > first.atMs && e.atMs + e.durationMs < heals[0]!.atMs)) return false;
      }
      return true;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a node has one process fault at a time, the network one nemesis at a time; with keepQuorum a majority stays live and connected', (t) => {
  fc.assert(
    fc.property(arbOptions, (o) => {
      const out = new Set<string>();
      let net: Nemesis | undefined;
      for (const e of schedule(o)) {
        switch (e.action) {
          case 'kill':
          case 'stop':
          case 'pause':
          case 'leave':
            if (out.has(e.target)) return false;
            out.add(e.target);
            break;
          case 'start-and-kill':
            if (!out.has(e.target)) return false;
            break;
          case 'start':
          case 'resume':
          case 'rejoin':
          case 'readd':
            if (!out.delete(e.target)) return false;
            break;
          case 'net':
            if (net !== undefined) return false;
            net = e.target;
            break;
          case 'net-heal':
            if (net !== e.target) return false;
            net = undefined;
            break;
        }
        if (o.keepQuorum && !isHeal(e) && !quorumExists(o.nodes, out, net)) return false;
      }
      return out.size === 0 && net === undefined;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a long run with every kind draws every kind', (t) => {
  const events = schedule({ seed: 42, nodes: ['n1', 'n2', 'n3', 'n4', 'n5'], kinds: NEMESIS_KINDS, durationMs: 30 * 60_000, gapMs: { min: 2_000, max: 10_000 }, faultMs: { min: 1_000, max: 20_000 }, keepQuorum: true });
  t.same(new Set(events.map((e) => e.kind)), new Set(NEMESIS_KINDS));
  t.ok(events.some((e) => e.action === 'start-and-kill'));
  // A remove is a kill healed by a re-add (the operator removes the dead node; it joins again empty).
  const removes = [...byFault(events).values()].filter((evs) => evs[0]!.kind === 'remove');
  t.ok(removes.length > 0 && removes.every((evs) => evs.map((e) => e.action).join(' ') === 'kill readd'), 'remove: kill, then readd');
  t.end();
});

t.test('options are checked at the door', (t) => {
  const ok: ScheduleOptions = { seed: 1, nodes: ['n1'], kinds: ['kill'], durationMs: 1000, gapMs: { min: 1, max: 2 }, faultMs: { min: 1, max: 2 }, keepQuorum: true };
  t.throws(() => schedule({ ...ok, kinds: ['nuke' as never] }), /kinds/);
  t.throws(() => schedule({ ...ok, gapMs: { min: 0, max: 1 } }), /gapMs/);
  t.throws(() => schedule({ ...ok, nodes: ['n1', 'n1'] }), /distinct/);
  t.same(schedule(ok), [], 'one node and keepQuorum: nothing may go down');
  t.end();
});
