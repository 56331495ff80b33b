// Token bucket, pure: time comes in as `nowMs`, nothing here reads a clock.
//
// Capacity = rpm tokens; refill = rpm/60 tokens per second, continuously (millisecond
// resolution). Tokens are kept as integer "units", UNITS_PER_TOKEN per token, so refill is
// exact integer arithmetic: one millisecond adds `rpm` units, and 60_000 units are one token
// (60_000 ms * rpm units/ms = rpm tokens per minute). Floats would let 100 requests at
// 600 ms intervals drift below a whole token and answer a spurious 429.

export const UNITS_PER_TOKEN = 60_000;

export interface Bucket {
  /** 0 <= units <= capacity * UNITS_PER_TOKEN */
  readonly units: number;
  /** When `units` was last brought up to date. */
  readonly updatedMs: number;
}

export interface TakeResult {
  readonly allowed: boolean;
  readonly bucket: Bucket;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** When refused: milliseconds until one whole token is back; 0 when allowed. */
  readonly retryAfterMs: number;
}

/** A new bucket starts full. */
export function fullBucket(capacity: number, nowMs: number): Bucket {
  return { units: capacity * UNITS_PER_TOKEN, updatedMs: nowMs };
}

/** Bring a bucket up to `nowMs`. A clock that steps backwards adds nothing (and is not remembered). */
export function refill(bucket: Bucket, capacity: number, nowMs: number): Bucket {
  const maxUnits = capacity * UNITS_PER_TOKEN;
  const elapsedMs = Math.max(0, nowMs - bucket.updatedMs);
  // A lowered capacity (PATCH of rpm_limit) clamps what was saved under the old one.
  const units = Math.min(maxUnits, bucket.units + elapsedMs * capacity);
  return { units, updatedMs: Math.max(bucket.updatedMs, nowMs) };
}

/** Milliseconds until a bucket holding `units` has one whole token. */
export function msUntilToken(units: number, capacity: number): number {
  return units >= UNITS_PER_TOKEN ? 0 : Math.ceil((UNITS_PER_TOKEN - units) / capacity);
}

/** Peek: the refilled bucket and whether it holds a token, without taking it. */
export function check(bucket: Bucket | undefined, capacity: number, nowMs: number): TakeResult {
  const current = refill(bucket ?? fullBucket(capacity, nowMs), capacity, nowMs);
  const allowed = current.units >= UNITS_PER_TOKEN;
  return {
    allowed,
    bucket: current,
    remaining: Math.floor(current.units / UNITS_PER_TOKEN) - (allowed ? 1 : 0),
    retryAfterMs: allowed ? 0 : msUntilToken(current.units, capacity),
  };
}

/** Take one token if there is one. */
export function take(bucket: Bucket | undefined, capacity: number, nowMs: number): TakeResult {
  const result = check(bucket, capacity, nowMs);
  if (!result.allowed) return result;
  return { ...result, bucket: { ...result.bucket, units: result.bucket.units - UNITS_PER_TOKEN } };
}
