import fc from 'fast-check';
import t from 'tap';
import {
  type Hlc,
  HybridClock,
  compareHlc,
  decodeHlc,
  encodeHlc,
  hlcToBase64,
  hlcToText,
  mergeHlc,
  parseHlc,
  tickHlc,
} from '../../src/core/hlc.js';
import { fcParams } from '../support/fc.js';

const arbHlc = fc.record({ wallMs: fc.integer({ min: 0, max: 2 ** 45 }), logical: fc.integer({ min: 0, max: 2 ** 32 - 1 }) });
const arbWall = fc.integer({ min: 0, max: 2 ** 45 });

t.test('tick is strictly increasing under arbitrary wall clock jumps (including backwards)', (t) => {
  fc.assert(
    fc.property(fc.array(arbWall, { minLength: 1, maxLength: 200 }), (walls) => {
      let prev: Hlc = { wallMs: 0, logical: 0 };
      for (const w of walls) {
        const next = tickHlc(prev, w);
        if (compareHlc(next, prev) <= 0) return false;
        if (next.wallMs < w) return false; // never behind the wall clock
        prev = next;
      }
      return true;
    }),
    fcParams(),
  );
  t.end();
});

t.test('merge is greater than both inputs and not behind the wall clock', (t) => {
  fc.assert(
    fc.property(arbHlc, arbHlc, arbWall, (local, remote, wall) => {
      const merged = mergeHlc(local, remote, wall);
      return compareHlc(merged, local) > 0 && compareHlc(merged, remote) > 0 && merged.wallMs >= wall;
    }),
    fcParams(),
  );
  t.end();
});

t.test('HybridClock stays monotonic through interleaved now/update with a jumping clock', (t) => {
  fc.assert(
    fc.property(fc.array(fc.oneof(arbWall.map((w) => ({ w })), arbHlc.map((r) => ({ r }))), { maxLength: 100 }), (events) => {
      let wall = 1_000;
      const clock = new HybridClock({ nowMs: () => wall });
      let last = clock.now();
      for (const e of events) {
        let next: Hlc | undefined;
        if ('w' in e) {
          wall = e.w;
          next = clock.now();
        } else {
          next = clock.update(e.r);
          if (next === undefined || compareHlc(next, e.r) <= 0) return false;
        }
        if (compareHlc(next, last) <= 0) return false;
        last = next;
      }
      return true;
    }),
    fcParams(),
  );
  t.end();
});

t.test('binary encoding round-trips and sorts like compareHlc', (t) => {
  fc.assert(
    fc.property(arbHlc, arbHlc, (a, b) => {
      t.same(decodeHlc(encodeHlc(a)), a);
      return Math.sign(Buffer.compare(encodeHlc(a), encodeHlc(b))) === compareHlc(a, b);
    }),
    fcParams(),
  );
  t.end();
});

t.test('text and base64 forms parse back', (t) => {
  fc.assert(
    fc.property(fc.oneof(arbHlc, fc.record({ wallMs: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), logical: fc.integer({ min: 0, max: 2 ** 32 - 1 }) })), (h) => {
      t.same(parseHlc(hlcToText(h)), h);
      t.same(parseHlc(hlcToBase64(h)), h);
      t.equal(hlcToBase64(h), encodeHlc(h).toString('base64'), 'the header form is the binary encoding in base64');
      t.same(parseHlc(`${h.wallMs}-${h.logical}`), h);
      t.same(parseHlc(`${h.wallMs}:${h.logical}`), h);
    }),
    fcParams(50),
  );
  t.equal(parseHlc('garbage'), undefined);
  t.equal(parseHlc('{timestamp,abc,1}'), undefined);
  t.end();
});

t.test('max offset rejects a remote clock too far ahead', (t) => {
  const clock = new HybridClock({ nowMs: () => 10_000 }, { maxOffsetMs: 500 });
  t.equal(clock.update({ wallMs: 20_000, logical: 0 }), undefined);
  t.ok(clock.update({ wallMs: 10_400, logical: 3 }));
  t.end();
});
