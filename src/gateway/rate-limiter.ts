// Per-tenant and per-key token buckets (pure: `nowMs` is a parameter). A request needs a token
// from its tenant's bucket and, when its key has its own rpm_limit, from the key's bucket too;
// tokens are taken from both or from neither, so a refused request costs nothing.
// Buckets are node-local and in memory (the spec: limits are per node); a restart starts
// every bucket full.
import { type Bucket, type TakeResult, UNITS_PER_TOKEN, check } from './token-bucket.js';

export interface Admission {
  readonly allowed: boolean;
  /** The binding bucket's capacity (X-RateLimit-Limit). */
  readonly limit: number;
  /** Whole tokens left in the binding bucket (X-RateLimit-Remaining). */
  readonly remaining: number;
  /** When refused: milliseconds until every needed bucket has a token. */
  readonly retryAfterMs: number;
}

export interface AdmitRequest {
  readonly tenantId: string;
  readonly tenantRpm: number;
  readonly keyId: string;
  /** The key's own limit, if it has one. */
  readonly keyRpm: number | undefined;
}

interface Want {
  readonly id: string;
  readonly capacity: number;
  readonly result: TakeResult;
}

export class RateLimiter {
  /** `t:<tenant>` and `k:<key id>` -> bucket. Bounded by the number of tenants and keys. */
  readonly #buckets = new Map<string, Bucket>();

  admit(req: AdmitRequest, nowMs: number): Admission {
    const ids: [string, number][] = [[`t:${req.tenantId}`, req.tenantRpm]];
    if (req.keyRpm !== undefined) ids.push([`k:${req.keyId}`, req.keyRpm]);
    const wants: Want[] = ids.map(([id, capacity]) => ({ id, capacity, result: check(this.#buckets.get(id), capacity, nowMs) }));
    const allowed = wants.every((w) => w.result.allowed);
    for (const w of wants) {
      const units = w.result.bucket.units - (allowed ? UNITS_PER_TOKEN : 0);
      this.#buckets.set(w.id, { units, updatedMs: w.result.bucket.updatedMs });
    }
    // The binding bucket: fewest tokens left, then the smaller capacity.
    const binding = wants.reduce((a, b) =>
      b.result.remaining < a.result.remaining || (b.result.remaining === a.result.remaining && b.capacity < a.capacity) ? b : a,
    );
    return {
      allowed,
      limit: binding.capacity,
      remaining: Math.max(0, binding.result.remaining),
      retryAfterMs: allowed ? 0 : Math.max(...wants.map((w) => w.result.retryAfterMs)),
    };
  }

  /** Forget a revoked key's or deleted tenant's bucket. */
  forgetKey(keyId: string): void {
    this.#buckets.delete(`k:${keyId}`);
  }

  forgetTenant(tenantId: string): void {
    this.#buckets.delete(`t:${tenantId}`);
  }
}
