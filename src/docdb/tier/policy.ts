// Tiering decisions (pure): which tier a document's age puts it in, and which documents a
// capacity limit pushes out (oldest first).
import { FirkinError } from '../../core/errors.js';

export const TIERS = ['hot', 'warm', 'cold'] as const;
export type Tier = (typeof TIERS)[number];

export interface TierConfig {
  readonly enabled: boolean;
  readonly warm_db: string | null;
  readonly cold_db: string | null;
  /** Seconds of age (since creation) after which a document leaves hot. */
  readonly hot_threshold: number;
  /** Seconds of age after which a document leaves warm for cold. */
  readonly warm_threshold: number;
  /** Bytes the hot database may hold before the oldest documents move to warm (null = none). */
  readonly capacity_limit: number | null;
  /** Documents the hot database may hold (null = none). */
  readonly capacity_docs: number | null;
}

export const DEFAULT_TIER_CONFIG: TierConfig = {
  enabled: true,
  warm_db: null,
  cold_db: null,
  hot_threshold: 604_800,
  warm_threshold: 2_592_000,
  capacity_limit: null,
  capacity_docs: null,
};

const bad = (message: string) => new FirkinError('bad_request', message);

/** POST merges into the stored config (so `{enabled: false}` alone keeps the rest). */
export function mergeTierConfig(current: TierConfig, patch: Record<string, unknown>): TierConfig {
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (!Object.hasOwn(DEFAULT_TIER_CONFIG, key)) throw bad(`unknown tier setting ${JSON.stringify(key)}`);
    next[key] = value;
  }
  const c = next as unknown as TierConfig;
  if (typeof c.enabled !== 'boolean') throw bad('enabled must be true or false');
  for (const k of ['warm_db', 'cold_db'] as const) if (c[k] !== null && typeof c[k] !== 'string') throw bad(`${k} must be a database name or null`);
  for (const k of ['hot_threshold', 'warm_threshold'] as const) {
    if (!Number.isSafeInteger(c[k]) || c[k] < 0) throw bad(`${k} must be a non-negative integer (seconds)`);
  }
  if (c.warm_threshold < c.hot_threshold) throw bad('warm_threshold must be at least hot_threshold');
  for (const k of ['capacity_limit', 'capacity_docs'] as const) {
    if (c[k] !== null && (!Number.isSafeInteger(c[k]) || (c[k] as number) < 0)) throw bad(`${k} must be a non-negative integer or null`);
  }
  return c;
}

export function tierForAge(config: TierConfig, ageMs: number): Tier {
  if (ageMs < config.hot_threshold * 1000) return 'hot';
  if (ageMs < config.warm_threshold * 1000) return 'warm';
  return 'cold';
}

/** The oldest documents to move so that the hot tier fits its limits again. */
export function overCapacity(
  hot: readonly { id: string; createdMs: number; bytes: number }[],
  limits: { bytes: number | null; docs: number | null },
): string[] {
  let bytes = hot.reduce((n, d) => n + d.bytes, 0);
  let count = hot.length;
  const out: string[] = [];
  const oldestFirst = [...hot].sort((a, b) => a.createdMs - b.createdMs || (a.id < b.id ? -1 : 1));
  for (const d of oldestFirst) {
    const fits = (limits.bytes === null || bytes <= limits.bytes) && (limits.docs === null || count <= limits.docs);
    if (fits) break;
    out.push(d.id);
    bytes -= d.bytes;
    count--;
  }
  return out;
}
