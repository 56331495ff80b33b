// The gateway as one fastify plugin. Each route group is its own encapsulated child context,
// so the master-key hook covers only /admin and the tenant-key + rate-limit hook only /v1;
// neither reaches the node's other routes. /v1 is registered only with a vector engine.
import type { FastifyInstance } from 'fastify';
import type { Gateway } from '../../gateway/gateway.js';
import type { GatewayMetrics } from '../../gateway/metrics.js';
import type { V1Bounds } from '../../gateway/vectors.js';
import { adminRoutes } from './gateway-admin.js';
import { v1Routes } from './gateway-v1.js';

export interface GatewayPluginOptions {
  gateway: Gateway;
  /** Undefined when there is no vector engine: admin routes only. */
  bounds: V1Bounds | undefined;
  metrics: GatewayMetrics;
}

export function gatewayFeature(options: GatewayPluginOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(adminRoutes, { gateway: options.gateway });
    if (options.bounds !== undefined) await app.register(v1Routes, { gateway: options.gateway, bounds: options.bounds, metrics: options.metrics });
  };
}
