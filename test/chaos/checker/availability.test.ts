// Availability figures: ok shares per fault kind and in calm periods, gaps without an
// acknowledged write, and the planned windows of a schedule.
import t from 'tap';
import fc from 'fast-check';
import type { Outcome } from '../../../chaos/checker/history.js';
import { type FaultWindow, type TimedOp, availability, faultWindows } from '../../../chaos/checker/availability.js';
import { schedule } from '../../../chaos/nemesis/schedule.js';
import { fcParams } from '../../support/fc.js';

const op = (kind: string, invokeMs: number, outcome: Outcome, completeMs = invokeMs + 10): TimedOp => ({ kind, invokeMs, completeMs, outcome });
const OPTS = { writeKinds: ['write'], startMs: 0, endMs: 1000, gapMsMin: 200 };

t.test('ok shares per fault kind and in calm periods', (t) => {
  const windows: FaultWindow[] = [{ kind: 'kill', startMs: 100, endMs: 200 }, { kind: 'partition', startMs: 300, endMs: 400 }, { kind: 'kill', startMs: 500, endMs: 600 }];
  const h = [op('read', 50, 'ok'), op('write', 150, 'unknown'), op('write', 190, 'ok'), op('read', 200, 'ok'), op('read', 350, 'fail'), op('read', 550, 'ok'), op('write', 700, 'fail')];
  const a = availability(h, windows, OPTS);
  t.same(a.calm, { ok: 2, total: 3, share: 2 / 3 }, 'a window is [start, end): 200 is calm');
  t.same(a.duringFaults, { kill: { ok: 2, total: 3, share: 2 / 3 }, partition: { ok: 0, total: 1, share: 0 } });
  t.same(availability([], windows, OPTS).calm, { ok: 0, total: 0, share: null });
  // A delete answered 404 (nothing to delete) is a served request, not unavailability.
  const served = availability([op('delete', 50, 'fail'), { ...op('delete', 60, 'fail'), absent: true }, op('delete', 70, 'ok')], windows, OPTS);
  t.same(served.calm, { ok: 2, total: 3, share: 2 / 3 }, 'absent counts as served; a refusal does not');
  t.end();
});

t.test('gaps without an acknowledged write, and the faults active during them', (t) => {
  const windows: FaultWindow[] = [{ kind: 'partition', startMs: 300, endMs: 500 }];
  const h = [op('write', 0, 'ok', 100), op('read', 150, 'ok'), op('write', 200, 'ok', 250), op('write', 300, 'unknown'), op('write', 600, 'ok', 700)];
  const a = availability(h, windows, OPTS);
  t.same(a.longestGap, { startMs: 250, endMs: 700, ms: 450, faults: ['partition'] });
  t.same(a.gaps.map((g) => [g.startMs, g.endMs]), [[250, 700], [700, 1000]]);
  t.same(availability([], [], OPTS).longestGap, { startMs: 0, endMs: 1000, ms: 1000, faults: [] }, 'no write at all: the whole run');
  t.throws(() => availability([], [], { ...OPTS, endMs: -1 }));
  t.end();
});

t.test('the gaps tile the run: the longest is the largest, listed gaps are all the long ones', (t) => {
  fc.assert(
    fc.property(fc.array(fc.record({ at: fc.nat(1000), outcome: fc.constantFrom<Outcome>('ok', 'fail', 'unknown'), kind: fc.constantFrom('write', 'read') }), { maxLength: 20 }), fc.integer({ min: 1, max: 500 }), (specs, gapMsMin) => {
      const h = specs.map((s) => op(s.kind, Math.max(0, s.at - 5), s.outcome, s.at));
      const a = availability(h, [], { ...OPTS, gapMsMin });
      const acks = h.filter((x) => x.kind === 'write' && x.outcome === 'ok').map((x) => x.completeMs).sort((x, y) => x - y);
      const edges = [0, ...acks, 1000];
      const lengths = edges.slice(1).map((e, i) => e - edges[i]!);
      return a.longestGap.ms === Math.max(...lengths) && a.gaps.length === lengths.filter((l) => l >= gapMsMin && l > 0).length && a.gaps.every((g) => g.ms >= gapMsMin);
    }),
    fcParams(300),
  );
  t.pass('agrees');
  t.end();
});

t.test('planned windows from a schedule: one per fault, from its first event to its heal', (t) => {
  const events = schedule({ seed: 5, nodes: ['n1', 'n2', 'n3'], kinds: ['kill', 'partition', 'kill-during-startup'], durationMs: 60_000, gapMs: { min: 2_000, max: 6_000 }, faultMs: { min: 1_500, max: 6_000 }, keepQuorum: true });
  const windows = faultWindows(events);
  t.equal(windows.length, new Set(events.map((e) => e.fault)).size);
  for (const w of windows) t.ok(w.endMs > w.startMs && w.endMs <= 60_000, `${w.kind} [${w.startMs}, ${w.endMs})`);
  const first = events.filter((e) => e.fault === 0);
  t.same(windows.find((w) => w.startMs === first[0]!.atMs && w.kind === first[0]!.kind)?.endMs, first.at(-1)!.atMs);
  t.end();
});
