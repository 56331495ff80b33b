// /admin/tenants...: tenants, their keys and usage. Every route needs the master key in
// X-Api-Key; the hook lives in this plugin's own context and reaches no other route.
import type { FastifyPluginAsync } from 'fastify';
import { type Gateway, publicKey } from '../../gateway/gateway.js';
import type { Limits, Tenant } from '../../gateway/types.js';
import { limitSchemas, tenantIdSchema } from './gateway-schemas.js';

const tenantParams = { type: 'object', required: ['tenant_id'], properties: { tenant_id: tenantIdSchema } } as const;
const keyParams = {
  type: 'object',
  required: ['tenant_id', 'key_id'],
  properties: { tenant_id: tenantIdSchema, key_id: { type: 'string', pattern: '^[0-9a-f]{16}$' } },
} as const;
const createTenantBody = {
  type: 'object',
  required: ['tenant_id'],
  additionalProperties: false,
  // The id's rule is checked by the gateway, so its 400 says the rule in words.
  properties: { tenant_id: { type: 'string' }, ...limitSchemas },
} as const;
const updateTenantBody = { type: 'object', minProperties: 1, additionalProperties: false, properties: limitSchemas } as const;
const createKeyBody = { type: 'object', additionalProperties: false, properties: { rpm_limit: limitSchemas.rpm_limit } } as const;

type TenantParams = { tenant_id: string };
type LimitsBody = Partial<Limits>;

function tenantView(t: Tenant) {
  return { tenant_id: t.tenant_id, limits: t.limits, created_at: t.created_at };
}

export const adminRoutes: FastifyPluginAsync<{ gateway: Gateway }> = async (app, { gateway }) => {
  app.addHook('onRequest', async (request) => {
    gateway.checkMaster(request.headers['x-api-key'] as string | undefined);
  });

  app.post<{ Body: LimitsBody & { tenant_id: string } }>('/admin/tenants', { schema: { body: createTenantBody } }, async (request, reply) => {
    const { tenant_id, ...limits } = request.body;
    const { tenant, key } = await gateway.createTenant(tenant_id, limits);
    reply.code(201);
    return { ...tenantView(tenant), api_key: key.api_key, key_id: key.record.key_id, key_prefix: key.record.key_prefix };
  });

  app.get('/admin/tenants', async () => ({ tenants: gateway.tenants().map(tenantView) }));

  app.get<{ Params: TenantParams }>('/admin/tenants/:tenant_id', { schema: { params: tenantParams } }, async (request) =>
    tenantView(gateway.tenant(request.params.tenant_id)),
  );

  app.patch<{ Params: TenantParams; Body: LimitsBody }>(
    '/admin/tenants/:tenant_id',
    { schema: { params: tenantParams, body: updateTenantBody } },
    async (request) => tenantView(await gateway.updateTenant(request.params.tenant_id, request.body)),
  );

  app.delete<{ Params: TenantParams }>('/admin/tenants/:tenant_id', { schema: { params: tenantParams } }, async (request) => ({
    status: 'deleted',
    tenant_id: request.params.tenant_id,
    ...(await gateway.deleteTenant(request.params.tenant_id)),
  }));

  app.post<{ Params: TenantParams; Body: { rpm_limit?: number } }>(
    '/admin/tenants/:tenant_id/keys',
    {
      schema: { params: tenantParams, body: createKeyBody },
      // No body at all is a key without its own limit.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const key = await gateway.createKey(request.params.tenant_id, request.body.rpm_limit);
      reply.code(201);
      return { api_key: key.api_key, ...publicKey(key.record) };
    },
  );

  app.get<{ Params: TenantParams }>('/admin/tenants/:tenant_id/keys', { schema: { params: tenantParams } }, async (request) => ({
    keys: gateway.keys(request.params.tenant_id).map(publicKey),
  }));

  app.delete<{ Params: TenantParams & { key_id: string } }>(
    '/admin/tenants/:tenant_id/keys/:key_id',
    { schema: { params: keyParams } },
    async (request) => {
      await gateway.revokeKey(request.params.tenant_id, request.params.key_id);
      return { status: 'revoked', key_id: request.params.key_id };
    },
  );

  app.get<{ Params: TenantParams }>('/admin/tenants/:tenant_id/usage', { schema: { params: tenantParams } }, async (request) => {
    const usage = gateway.usage(request.params.tenant_id);
    return { usage, limits: gateway.tenant(request.params.tenant_id).limits };
  });
};
