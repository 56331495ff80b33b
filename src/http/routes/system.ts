// /health, /metrics and API-key management.
import type { FastifyPluginAsync } from 'fastify';
import { type ApiKeys, PERMISSIONS, type Permission, allows, publicInfo } from '../../auth/api-keys.js';
import { type HealthCheck, type HealthReport, type HealthState, type HealthViewer, worseHealth } from '../../core/health.js';
import { presentedKey } from '../hooks/auth.js';
import type { Clock } from '../../core/hlc.js';
import type { Metrics } from '../../metrics.js';



export interface SystemRouteDeps {
  nodeName: string;
  version: string;
  startedAtMs: number;
  clock: Clock;
  metrics: Metrics;
  keys: ApiKeys;
  /** SERVICE_AUTH_DISABLED: every caller sees everything. */
  authDisabled: boolean;
  checks: Record<string, HealthCheck>;
}

const createKeyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['permissions'],
  properties: {
    permissions: { type: 'array', minItems: 1, items: { enum: PERMISSIONS } },
    databases: {
      anyOf: [
        { const: 'all' },
        { type: 'array', items: { type: 'string', minLength: 1, maxLength: 63 }, maxItems: 10_000 },
      ],
    },
    label: { type: 'string', maxLength: 200 },
  },
} as const;

const keyIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[0-9a-f]{16}$' } },
} as const;

export const systemRoutes: FastifyPluginAsync<SystemRouteDeps> = async (app, deps) => {
  /** The caller of an open route, by the key it presents (if any): a bad key is no key here. */
  const viewerOf = async (authorization: string | undefined): Promise<HealthViewer> => {
    if (deps.authDisabled) return { mayRead: () => true, admin: true };
    const presented = presentedKey(authorization);
    const record = presented === undefined ? undefined : await deps.keys.verify(presented);
    return record === undefined ? { mayRead: () => false, admin: false } : { mayRead: (db) => allows(record, 'read', db), admin: allows(record, 'admin', undefined) };
  };

  app.get('/health', async (request, reply) => {
    const viewer = await viewerOf(request.headers.authorization);
    const parts: Record<string, HealthReport> = {};
    const problems: string[] = [];
    let status: HealthState = 'ok';
    for (const [name, check] of Object.entries(deps.checks)) {
      let report: HealthReport;
      try {
        report = await check(viewer);
      } catch (err) {
        report = { status: 'failing', problems: [`${name} check failed: ${(err as Error).message}`] };
      }
      parts[name] = report;
      for (const p of report.problems ?? []) problems.push(`${name}: ${p}`);
      status = worseHealth(status, report.status);
    }
    reply.code(status === 'failing' ? 503 : 200);
    return {
      status,
      node: deps.nodeName,
      version: deps.version,
      uptime_s: Math.floor((deps.clock.nowMs() - deps.startedAtMs) / 1000),
      problems,
      ...parts,
    };
  });

  app.get('/metrics', async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });

  app.post<{ Body: { permissions: Permission[]; databases?: 'all' | string[]; label?: string } }>(
    '/_keys',
    { schema: { body: createKeyBody }, config: { permission: 'admin' } },
    async (request, reply) => {
      const { key, record } = await deps.keys.create({
        permissions: request.body.permissions,
        databases: request.body.databases ?? 'all',
        label: request.body.label,
        nowMs: deps.clock.nowMs(),
      });
      reply.code(201);
      // The only time the key itself is ever shown.
      return { ...publicInfo(record), key };
    },
  );

  app.get('/_keys', { config: { permission: 'admin' } }, async () => ({ keys: deps.keys.list().map(publicInfo) }));

  app.delete<{ Params: { id: string } }>(
    '/_keys/:id',
    { schema: { params: keyIdParams }, config: { permission: 'admin' } },
    async (request) => {
      await deps.keys.revoke(request.params.id);
      return { ok: true, id: request.params.id };
    },
  );
};
