// A gateway tenant's usage against its quotas, as bars (`GET /admin/tenants/:t/usage`).
// Pure: the Gateway page renders what this returns.
export interface TenantUsage {
  readonly vector_count: number;
  readonly collection_count: number;
  readonly storage_bytes: number;
}

export interface TenantLimits {
  readonly rpm_limit: number;
  readonly max_vectors: number;
  readonly max_collections: number;
  readonly max_storage_mb: number;
}

export type Tone = 'ok' | 'warn' | 'full';

export interface QuotaBar {
  readonly label: string;
  readonly used: number;
  readonly limit: number;
  /** used / limit in [0, 1]; a zero limit is full (nothing more may be written). */
  readonly fraction: number;
  readonly tone: Tone;
  readonly text: string;
}

// Amber from here on: room for a little more, but the tenant is about to be refused (403).
const WARN_FRACTION = 0.8;
const BYTES_PER_MB = 1024 * 1024;

export function quotaBar(label: string, used: number, limit: number, format: (n: number) => string = String): QuotaBar {
  const fraction = limit <= 0 ? 1 : Math.min(1, Math.max(0, used / limit));
  const tone: Tone = used >= limit ? 'full' : fraction >= WARN_FRACTION ? 'warn' : 'ok';
  return { label, used, limit, fraction, tone, text: `${format(used)} of ${format(limit)}` };
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

export function quotaBars(usage: TenantUsage, limits: TenantLimits): QuotaBar[] {
  return [
    quotaBar('Vectors', usage.vector_count, limits.max_vectors),
    quotaBar('Collections', usage.collection_count, limits.max_collections),
    quotaBar('Storage', usage.storage_bytes, limits.max_storage_mb * BYTES_PER_MB, formatBytes),
  ];
}
