// Quorum math against naive oracles (etcd-io/raft quorum/quick_test.go).
import t from 'tap';
import fc from 'fast-check';
import { committedIndex, voteResult } from '../../src/raft/quorum.js';
import { Progress } from '../../src/raft/progress.js';
import { fcParams } from '../support/fc.js';

function naiveCommitted(matches: number[]): number {
  // The largest i such that a majority has match >= i.
  let best = 0;
  for (const i of [0, ...matches]) {
    const n = matches.filter((m) => m >= i).length;
    if (n > matches.length / 2) best = Math.max(best, i);
  }
  return best;
}

t.test('committedIndex matches the naive oracle', (t) => {
  fc.assert(
    fc.property(fc.array(fc.nat(50), { minLength: 1, maxLength: 7 }), (matches) => {
      const ids = matches.map((_, i) => `n${i}`);
      return committedIndex(ids, (id) => matches[Number(id.slice(1))]!) === naiveCommitted(matches);
    }),
    fcParams(500),
  );
  t.end();
});

t.test('voteResult matches the naive oracle', (t) => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom<boolean | undefined>(true, false, undefined), { minLength: 1, maxLength: 7 }), (votes) => {
      const ids = votes.map((_, i) => `n${i}`);
      const map = new Map<string, boolean>();
      votes.forEach((v, i) => v !== undefined && map.set(`n${i}`, v));
      const yes = votes.filter((v) => v === true).length;
      const no = votes.filter((v) => v === false).length;
      const q = Math.floor(votes.length / 2) + 1;
      const expected = yes >= q ? 'won' : votes.length - no < q ? 'lost' : 'pending';
      return voteResult(ids, map) === expected;
    }),
    fcParams(500),
  );
  t.end();
});

t.test('progress: match < next holds through any sequence of events', (t) => {
  type Ev = { k: 'ack'; i: number } | { k: 'rej'; i: number; h: number } | { k: 'send'; n: number } | { k: 'probe' } | { k: 'repl' } | { k: 'snap'; i: number };
  const ev = fc.oneof(
    fc.record({ k: fc.constant('ack' as const), i: fc.nat(40) }),
    fc.record({ k: fc.constant('rej' as const), i: fc.nat(40), h: fc.nat(40) }),
    fc.record({ k: fc.constant('send' as const), n: fc.integer({ min: 1, max: 5 }) }),
    fc.record({ k: fc.constant('probe' as const) }),
    fc.record({ k: fc.constant('repl' as const) }),
    fc.record({ k: fc.constant('snap' as const), i: fc.nat(40) }),
  );
  fc.assert(
    fc.property(fc.array(ev, { maxLength: 60 }), (evs: Ev[]) => {
      const pr = new Progress(1, 3, false);
      for (const e of evs) {
        if (e.k === 'ack') pr.maybeUpdate(e.i);
        else if (e.k === 'rej') pr.maybeDecrTo(e.i, Math.min(e.h, e.i));
        else if (e.k === 'send' && !pr.isPaused()) pr.sentEntries(pr.next + e.n - 1);
        else if (e.k === 'probe') pr.becomeProbe();
        else if (e.k === 'repl') pr.becomeReplicate();
        else if (e.k === 'snap') pr.becomeSnapshot(Math.max(e.i, pr.match));
        if (!(pr.match < pr.next)) return false;
        if (pr.inflight.length > pr.inflightMax) return false;
      }
      return true;
    }),
    fcParams(300),
  );
  t.end();
});
