// Bearer-key auth for the document-database routes. Which routes need a key is decided by
// path prefix, so a new route under /db can never be left open by forgetting a flag; the
// permission comes from the method (GET/HEAD read, else write) unless the route asks for
// more with `config: { permission: 'admin' }`.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type ApiKeys, type ApiKeyRecord, type Permission, allows } from '../../auth/api-keys.js';
import { FirkinError } from '../../core/errors.js';

export const PROTECTED_PREFIXES = ['/db', '/vdb', '/_policies', '/_federation', '/_keys', '/_replications'] as const;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Minimum permission of the route; default by method. */
    permission?: Permission;
    /** Route params naming the database the key must be allowed on (default: `db`). */
    databaseParam?: string;
  }
  interface FastifyRequest {
    apiKey?: ApiKeyRecord;
  }
}

function isProtected(url: string): boolean {
  const path = url.split('?', 1)[0]!;
  return PROTECTED_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));
}

export function neededPermission(request: FastifyRequest): Permission {
  const configured = request.routeOptions.config.permission;
  if (configured !== undefined) return configured;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
}

export function installAuth(app: FastifyInstance, options: { keys: ApiKeys; disabled: boolean }): void {
  if (options.disabled) return;
  app.decorateRequest('apiKey', undefined);
  app.addHook('onRequest', async (request) => {
    // Unmatched routes fall through to the 404/405 handler without revealing anything.
    if (request.routeOptions.url === undefined || !isProtected(request.url)) return;
    const header = request.headers.authorization;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null) {
      throw new FirkinError('unauthorized', 'missing API key: send Authorization: Bearer <key>', {
        headers: { 'www-authenticate': 'Bearer' },
      });
    }
    const record = options.keys.verify(match[1]!);
    if (record === undefined) {
      throw new FirkinError('unauthorized', 'unknown or revoked API key', { headers: { 'www-authenticate': 'Bearer' } });
    }
    const needed = neededPermission(request);
    const param = request.routeOptions.config.databaseParam ?? 'db';
    const db = (request.params as Record<string, string> | undefined)?.[param];
    if (!allows(record, needed, db)) {
      const scope = db === undefined ? '' : ` on database ${JSON.stringify(db)}`;
      throw new FirkinError('forbidden', `this API key lacks the ${needed} permission${scope}`);
    }
    request.apiKey = record;
  });
}
