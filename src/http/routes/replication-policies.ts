// /_policies: replication policy CRUD, _enable, _disable, _status. Admin only.
import type { FastifyPluginAsync } from 'fastify';
import type { PolicyManager } from '../../docdb/replication/policies.js';

const nameParams = { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1, maxLength: 128 } } } as const;
const admin = { permission: 'admin' } as const;

export const replicationPolicyRoutes: FastifyPluginAsync<{ policies: PolicyManager }> = async (app, { policies }) => {
  app.get('/_policies', { config: admin }, async () => ({ policies: policies.list() }));

  app.post<{ Body: unknown }>('/_policies', { config: admin }, async (request, reply) => {
    const result = await policies.create(request.body);
    reply.code(201);
    return result;
  });

  app.get<{ Params: { name: string } }>('/_policies/:name', { config: admin, schema: { params: nameParams } }, async (request) => policies.get(request.params.name));

  app.put<{ Params: { name: string }; Body: unknown }>('/_policies/:name', { config: admin, schema: { params: nameParams } }, async (request) =>
    policies.replace(request.params.name, request.body),
  );

  app.delete<{ Params: { name: string } }>('/_policies/:name', { config: admin, schema: { params: nameParams } }, async (request) => policies.delete(request.params.name));

  app.post<{ Params: { name: string } }>('/_policies/:name/_enable', { config: admin, schema: { params: nameParams } }, async (request) => policies.enable(request.params.name));

  app.post<{ Params: { name: string } }>('/_policies/:name/_disable', { config: admin, schema: { params: nameParams } }, async (request) => policies.disable(request.params.name));

  app.get<{ Params: { name: string } }>('/_policies/:name/_status', { config: admin, schema: { params: nameParams } }, async (request) => policies.status(request.params.name));
};
