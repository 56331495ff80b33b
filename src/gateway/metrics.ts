// The gateway's metrics on the node's registry: per-tenant usage sampled at scrape time, and
// refusals by tenant and reason. Label values are tenant ids, so cardinality is bounded by the
// number of tenants.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Gateway } from './gateway.js';

export const REFUSAL_REASONS = ['rate_limit', 'quota'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export interface GatewayMetrics {
  refused(tenantId: string, reason: RefusalReason): void;
}

export function gatewayMetrics(registry: Registry, gateway: Gateway): GatewayMetrics {
  const usageGauge = (name: string, help: string, pick: (u: ReturnType<Gateway['usage']>) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['tenant'] as const,
      registers: [registry],
      collect() {
        this.reset(); // deleted tenants disappear
        for (const t of gateway.tenants()) this.set({ tenant: t.tenant_id }, pick(gateway.usage(t.tenant_id)));
      },
    });
  usageGauge('firkin_gateway_vectors', 'Documents stored per tenant', (u) => u.vector_count);
  usageGauge('firkin_gateway_collections', 'Collections per tenant', (u) => u.collection_count);
  usageGauge('firkin_gateway_storage_bytes', 'Approximate bytes stored per tenant', (u) => u.storage_bytes);
  const refusals = new Counter({
    name: 'firkin_gateway_refused_total',
    help: 'Tenant requests refused by a rate limit (429) or a quota (403)',
    labelNames: ['tenant', 'reason'] as const,
    registers: [registry],
  });
  return { refused: (tenant, reason) => refusals.inc({ tenant, reason }) };
}
