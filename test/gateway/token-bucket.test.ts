// The token bucket and the two-bucket limiter, with time as a number: no clock, no sleeping.
import fc from 'fast-check';
import t from 'tap';
import { RateLimiter } from '../../src/gateway/rate-limiter.js';
import { type Bucket, UNITS_PER_TOKEN, take } from '../../src/gateway/token-bucket.js';
import { fcParams } from '../support/fc.js';

const arbRpm = fc.integer({ min: 1, max: 100_000 });
const T0 = 1_700_000_000_000;

/** Requests at the given times; how many were allowed. */
function run(capacity: number, timesMs: readonly number[]): { allowed: number; bucket: Bucket | undefined } {
  let bucket: Bucket | undefined;
  let allowed = 0;
  for (const now of timesMs) {
    const r = take(bucket, capacity, now);
    bucket = r.bucket;
    if (r.allowed) allowed++;
  }
  return { allowed, bucket };
}

t.test('a burst at one instant: exactly rpm requests pass, then refusals', (t) => {
  fc.assert(
    fc.property(arbRpm, (rpm) => {
      let bucket: Bucket | undefined;
      for (let i = 0; i < rpm; i++) {
        const r = take(bucket, rpm, T0);
        if (!r.allowed || r.remaining !== rpm - 1 - i) return false;
        bucket = r.bucket;
      }
      const refused = take(bucket, rpm, T0);
      return !refused.allowed && refused.remaining === 0 && refused.retryAfterMs === Math.ceil(60_000 / rpm);
    }),
    fcParams(100),
  );
  t.end();
});

t.test('refill is rpm/60 tokens per second: after an empty bucket, one token every 60000/rpm ms exactly', (t) => {
  fc.assert(
    fc.property(arbRpm, fc.integer({ min: 1, max: 50 }), (rpm, n) => {
      let bucket: Bucket | undefined;
      for (let i = 0; i < rpm; i++) bucket = take(bucket, rpm, T0).bucket;
      // Just before each refill point: refused; at it: allowed (exact integer arithmetic).
      let now = T0;
      for (let i = 1; i <= n; i++) {
        const due = T0 + Math.ceil((i * 60_000) / rpm); // one float division of exact integers
        if (due - 1 > now) {
          const early = take(bucket, rpm, due - 1);
          if (early.allowed) return false;
          bucket = early.bucket;
        }
        const r = take(bucket, rpm, due);
        if (!r.allowed) return false;
        bucket = r.bucket;
        now = due;
      }
      return true;
    }),
    fcParams(100),
  );
  t.end();
});

t.test('over any schedule, allowed <= rpm + elapsed * rpm / 60000 and the bucket never overflows', (t) => {
  fc.assert(
    fc.property(arbRpm, fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 300 }), (rpm, gaps) => {
      const times: number[] = [];
      let now = T0;
      for (const g of gaps) times.push((now += g));
      const { allowed, bucket } = run(rpm, times);
      const elapsed = now - T0;
      return allowed <= rpm + Math.floor((elapsed * rpm) / 60_000) && (bucket === undefined || bucket.units <= rpm * UNITS_PER_TOKEN);
    }),
    fcParams(),
  );
  t.end();
});

t.test('a clock stepping backwards adds no tokens', (t) => {
  let bucket: Bucket | undefined;
  for (let i = 0; i < 10; i++) bucket = take(bucket, 10, T0).bucket;
  const back = take(bucket, 10, T0 - 3_600_000);
  t.notOk(back.allowed);
  t.equal(back.bucket.updatedMs, T0, 'the bucket keeps its newest time');
  t.ok(take(back.bucket, 10, T0 + 6_000).allowed, 'and refills from it');
  t.end();
});

t.test('limiter: both buckets must have a token; a refusal takes from neither', (t) => {
  const limiter = new RateLimiter();
  const req = { tenantId: 'acme', tenantRpm: 10, keyId: 'k1', keyRpm: 3 };
  for (let i = 0; i < 3; i++) t.ok(limiter.admit(req, T0).allowed);
  const refused = limiter.admit(req, T0);
  t.notOk(refused.allowed);
  t.equal(refused.limit, 3, 'the key bucket is the binding one');
  t.equal(refused.remaining, 0);
  t.equal(refused.retryAfterMs, 20_000);
  // Another key of the same tenant without its own limit still has the tenant's 7 tokens.
  const other = { tenantId: 'acme', tenantRpm: 10, keyId: 'k2', keyRpm: undefined };
  for (let i = 0; i < 7; i++) t.ok(limiter.admit(other, T0).allowed, `tenant token ${i}`);
  const empty = limiter.admit(other, T0);
  t.notOk(empty.allowed);
  t.equal(empty.limit, 10);
  // Now the tenant is empty: the first key is refused even after its own bucket refills.
  t.notOk(limiter.admit(req, T0 + 20_000 - 1).allowed);
  const later = limiter.admit(req, T0 + 20_000);
  t.ok(later.allowed, 'after 20 s the key has 1 token and the tenant 3');
  t.end();
});

t.test('limiter property: per-key and per-tenant admissions never exceed either model bucket', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 1, max: 50 }),
      fc.array(fc.record({ key: fc.constantFrom('a', 'b'), gapMs: fc.integer({ min: 0, max: 3_000 }) }), { maxLength: 200 }),
      (tenantRpm, keyRpm, reqs) => {
        const limiter = new RateLimiter();
        let now = T0;
        const perKey = { a: 0, b: 0 };
        let total = 0;
        for (const r of reqs) {
          now += r.gapMs;
          const a = limiter.admit({ tenantId: 't', tenantRpm, keyId: r.key, keyRpm: r.key === 'a' ? keyRpm : undefined }, now);
          if (a.allowed) {
            perKey[r.key]++;
            total++;
          }
        }
        const elapsed = now - T0;
        return total <= tenantRpm + Math.floor((elapsed * tenantRpm) / 60_000) && perKey.a <= keyRpm + Math.floor((elapsed * keyRpm) / 60_000);
      },
    ),
    fcParams(),
  );
  t.end();
});
