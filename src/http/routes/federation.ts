// /_federation: admin only.
import type { FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import type { Federations } from '../../docdb/federation/federation.js';

const nameParams = { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 200 } } } as const;
const memberParams = {
  type: 'object',
  required: ['name', 'member'],
  properties: { name: { type: 'string', maxLength: 200 }, member: { type: 'string', minLength: 1, maxLength: 2048 } },
} as const;
const objectBody = { type: 'object' } as const;
const admin = { permission: 'admin' as const };

export const federationRoutes: FastifyPluginAsync<{ federations: Federations }> = async (app, { federations }) => {
  app.get('/_federation', { config: admin }, async () => ({ federations: federations.list() }));

  app.post<{ Body: Record<string, unknown> }>('/_federation', { schema: { body: objectBody }, config: admin }, async (request, reply) => {
    const created = await federations.create(request.body);
    reply.code(201);
    return { ok: true, ...created };
  });

  app.get<{ Params: { name: string } }>('/_federation/:name', { schema: { params: nameParams }, config: admin }, async (r) => federations.info(r.params.name));

  app.put<{ Params: { name: string }; Body: { query?: unknown } }>('/_federation/:name', { schema: { params: nameParams, body: objectBody }, config: admin }, async (r) => ({
    ok: true,
    ...(await federations.setQuery(r.params.name, r.body.query)),
  }));

  app.delete<{ Params: { name: string } }>('/_federation/:name', { schema: { params: nameParams }, config: admin }, async (r) => {
    await federations.delete(r.params.name);
    return { ok: true };
  });

  // `:member` arrives percent-decoded once by the router: a URL member is sent encoded.
  const addMember = async (r: { params: { name: string; member: string } }) => ({ ok: true, ...(await federations.addMember(r.params.name, r.params.member)) });
  app.post<{ Params: { name: string; member: string } }>('/_federation/:name/members/:member', { schema: { params: memberParams }, config: admin }, addMember);
  app.put<{ Params: { name: string; member: string } }>('/_federation/:name/members/:member', { schema: { params: memberParams }, config: admin }, addMember);
  app.delete<{ Params: { name: string; member: string } }>('/_federation/:name/members/:member', { schema: { params: memberParams }, config: admin }, async (r) => ({
    ok: true,
    ...(await federations.removeMember(r.params.name, r.params.member)),
  }));

  app.post<{ Params: { name: string }; Body: Record<string, unknown> | undefined }>('/_federation/:name/_find', { schema: { params: nameParams }, config: admin }, async (r) => {
    const body = r.body ?? {};
    if (typeof body !== 'object' || Array.isArray(body) || body === null) throw new FirkinError('bad_request', 'the _find body must be an object');
    return federations.find(r.params.name, body);
  });

  app.get<{ Params: { name: string } }>('/_federation/:name/_find', { schema: { params: nameParams }, config: admin }, async (r) => federations.find(r.params.name, {}));
};
