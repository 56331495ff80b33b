// The `_changes` follower's checker: cases by hand, then random runs of a model feed (each
// document's newest change at the end of the log, as the VDB's feed orders them) read by a
// follower polling with a cursor: no anomaly while the cursor is honest, `missed` once a
// cursor skips a change that nothing later covers.
import t from 'tap';
import fc from 'fast-check';
import { type AckedWrite, type FeedHistory, type FeedPoll, checkFeed, generation } from '../../../chaos/checker/changes.js';
import { fcParams } from '../../support/fc.js';

const keys = new Set(['k0', 'k1']);
const poll = (completeMs: number, changes: [string, string][], node = 'n1'): FeedPoll => ({ node, invokeMs: completeMs - 5, completeMs, changes: changes.map(([id, rev]) => ({ id, rev })) });
const ack = (key: string, rev: string, invokeMs: number): AckedWrite => ({ key, rev, invokeMs });
const history = (h: Partial<FeedHistory>): FeedHistory => ({ polls: [], acked: [], keys, refusals: [], drained: true, ...h });
const types = (h: Partial<FeedHistory>) => checkFeed(history(h)).anomalies.map((a) => a.type);

t.test('generations', (t) => {
  t.equal(generation('12-abc'), 12);
  t.ok(Number.isNaN(generation('abc')));
  t.ok(Number.isNaN(generation('-1')));
  t.end();
});

t.test('cases', (t) => {
  t.same(types({ acked: [ack('k0', '1-a', 10)], polls: [poll(20, [['k0', '1-a']])] }), []);
  t.same(types({ acked: [ack('k0', '1-a', 10)], polls: [poll(20, [['k0', '2-b']])] }), [], 'a later revision covers an earlier one');
  t.same(types({ acked: [ack('k0', '2-b', 10)], polls: [poll(20, [['k0', '1-a']])] }), ['missed'], 'an older one does not');
  t.same(types({ acked: [ack('k0', '1-a', 10)], polls: [poll(8, [['k0', '1-a']])] }), ['missed'], 'a poll that completed before the write was invoked cannot have seen it');
  t.same(types({ acked: [ack('k0', '1-a', 10)] }), ['missed']);
  t.same(types({ acked: [ack('k0', '1-a', 10), ack('k0', '2-b', 30), ack('k1', '1-c', 10)] }), ['missed', 'missed'], 'one anomaly per document');
  t.match(checkFeed(history({ acked: [ack('k0', '1-a', 10), ack('k0', '2-b', 30)], polls: [poll(20, [['k0', '1-a']])] })).anomalies[0], { type: 'missed', key: 'k0', detail: /2-b .*generation 1$/ });
  t.same(types({ polls: [poll(20, [['_local/k0', '0-1']]), poll(30, [['_local/k0', '0-2']])] }), ['phantom'], 'a _local document is never in a feed; said once');
  t.same(types({ refusals: [{ node: 'n2', since: 'c1-x', status: 400, detail: 'bad since' }] }), ['cursor-refused']);
  t.same(types({ drained: false }), ['no-drain']);
  const r = checkFeed(history({ acked: [ack('k0', '1-a', 10)], polls: [poll(20, [['k0', '1-a'], ['k1', '1-c']])] }));
  t.same([r.ok, r.polls, r.changes, r.acked], [true, 1, 2, 1]);
  t.end();
});

// ---- a model feed: writes append changes; a document's older change leaves the log ----

type Step = { kind: 'write'; key: number } | { kind: 'poll'; limit: number };
const KEYS = 8;
const arbSteps = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('write' as const), key: fc.nat(KEYS - 1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('poll' as const), limit: fc.integer({ min: 1, max: 4 }) }) },
  ),
  { minLength: 1, maxLength: 60 },
);

/** Runs the steps, one ms apart, then drains; `skipAt`: the poll whose cursor jumps one change too far. */
function run(steps: readonly Step[], skipAt?: number): { h: FeedHistory; skipped?: string } {
  const log: { seq: number; id: string; rev: string }[] = [];
  const gens = new Map<string, number>();
  const acked: AckedWrite[] = [];
  const polls: FeedPoll[] = [];
  let seq = 0;
  let cursor = 0;
  let now = 0;
  let pollsDone = 0;
  let skipped: string | undefined;
  const doPoll = (limit: number) => {
    const page = log.filter((c) => c.seq > cursor).slice(0, limit);
    const invokeMs = now++;
    let next = page.at(-1)?.seq ?? cursor;
    // The broken cursor: past the page's last change and the one after it.
    if (pollsDone++ === skipAt) {
      const after = log.find((c) => c.seq > next);
      if (after !== undefined) {
        next = after.seq;
        skipped = after.id;
      }
    }
    polls.push({ node: 'n1', invokeMs, completeMs: now++, changes: page.map(({ id, rev }) => ({ id, rev })) });
    cursor = next;
    return page.length;
  };
  for (const s of steps) {
    if (s.kind === 'poll') {
      doPoll(s.limit);
      continue;
    }
    const id = `k${s.key}`;
    const gen = (gens.get(id) ?? 0) + 1;
    gens.set(id, gen);
    const rev = `${gen}-x`;
    acked.push({ key: id, rev, invokeMs: now++ });
    const old = log.findIndex((c) => c.id === id);
    if (old !== -1) log.splice(old, 1);
    log.push({ seq: ++seq, id, rev });
  }
  while (doPoll(4) > 0);
  return { h: { polls, acked, keys: new Set(Array.from({ length: KEYS }, (_, i) => `k${i}`)), refusals: [], drained: true }, ...(skipped === undefined ? {} : { skipped }) };
}

t.test('an honest cursor: no anomaly', (t) => {
  fc.assert(
    fc.property(arbSteps, (steps) => checkFeed(run(steps).h).ok),
    fcParams(),
  );
  t.end();
});

t.test('a cursor that skips a change: missed, unless a later change of that document covers it', (t) => {
  let found = 0;
  fc.assert(
    fc.property(arbSteps, fc.nat(6), (steps, skipAt) => {
      const { h, skipped } = run(steps, skipAt);
      if (skipped === undefined) return true;
      const missed = checkFeed(h).anomalies.filter((a) => a.type === 'missed').map((a) => a.key);
      // The skipped change was the newest of its document when skipped; a later write of it
      // appends a new change the follower does read.
      const rewritten = h.acked.filter((w) => w.key === skipped).at(-1)!.invokeMs > h.polls[skipAt]!.invokeMs;
      if (!rewritten) found++;
      return rewritten ? missed.length === 0 : missed.length === 1 && missed[0] === skipped;
    }),
    fcParams(),
  );
  t.ok(found > 0, `${found} runs lost a change for good`);
  t.end();
});
