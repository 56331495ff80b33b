// Bearer-key auth for the document-database routes. Which routes need a key is decided by
// path prefix, so a new route under /db can never be left open by forgetting a flag; the
// permission comes from the method (GET/HEAD read, else write) unless the route asks for
// more with `config: { permission: 'admin' }`.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type ApiKeys, type ApiKeyRecord, CONFIRM_FIRST, type Permission, allows } from '../../auth/api-keys.js';
import { FirkinError } from '../../core/errors.js';

export const PROTECTED_PREFIXES = ['/db', '/_all_dbs', '/vdb', '/_policies', '/_federation', '/_keys', '/_replications', '/_active_tasks', '/_cluster'] as const;

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

/**
 * The API key of a request: `Bearer <key>`, or `Basic` with the key as the password (any
 * user name) for clients that only speak basic auth (replication peers, CouchDB tools).
 */
export function presentedKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer !== null) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (basic === null) return undefined;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 || colon === decoded.length - 1 ? undefined : decoded.slice(colon + 1);
}

/**
 * A route config for a POST that only reads (a query in its body: `_find`, `_all_docs` with
 * keys, `_bulk_get`, `_revs_diff`, filtered changes): a read key may call it, as a CouchDB
 * reader may.
 */
export const READ = { permission: 'read' } as const;

/**
 * Whether the request's key allows `permission` on a database the route did not check (one
 * named in a body, or each entry of a listing); with auth off there is no key, and it does.
 */
export function keyAllows(request: FastifyRequest, permission: Permission, db: string): boolean {
  return request.apiKey === undefined || allows(request.apiKey, permission, db);
}

/** The 403 of a key that lacks `permission` on `db` (`why`: what named it, when not the route). */
function lacks(permission: Permission, db: string | undefined, why?: string): FirkinError {
  const scope = db === undefined ? '' : ` on database ${JSON.stringify(db)}`;
  return new FirkinError('forbidden', `this API key lacks the ${permission} permission${scope}${why === undefined ? '' : ` (${why})`}`);
}

/** `keyAllows`, or the 403 saying what the key lacks. */
export function requireKey(request: FastifyRequest, permission: Permission, db: string, why?: string): void {
  if (!keyAllows(request, permission, db)) throw lacks(permission, db, why);
}

export function neededPermission(request: FastifyRequest): Permission {
  const configured = request.routeOptions.config.permission;
  if (configured !== undefined) return configured;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
}

export function installAuth(app: FastifyInstance, options: { keys: ApiKeys; disabled: boolean }): void {
  if (options.disabled) return;
  app.decorateRequest('apiKey', undefined);
  // A callback hook, answered at once for a key this node knows (a promise and a turn less on
  // every request); only a key the cluster's copy must confirm first waits.
  app.addHook('onRequest', (request, _reply, done) => {
    // Unmatched routes fall through to the 404/405 handler without revealing anything.
    if (request.routeOptions.url === undefined || !isProtected(request.url)) return done();
    const key = presentedKey(request.headers.authorization);
    if (key === undefined) {
      return done(new FirkinError('unauthorized', 'missing API key: send Authorization: Bearer <key>', { headers: { 'www-authenticate': 'Bearer' } }));
    }
    const now = options.keys.verifyNow(key);
    if (now !== CONFIRM_FIRST) return done(admit(request, now));
    options.keys.verify(key).then(
      (record) => done(admit(request, record)),
      (err: unknown) => done(err as Error),
    );
  });
}

/** Sets the request's key, or the error that refuses it (unknown, or lacking the route's permission). */
function admit(request: FastifyRequest, record: ApiKeyRecord | undefined): FirkinError | undefined {
  if (record === undefined) return new FirkinError('unauthorized', 'unknown or revoked API key', { headers: { 'www-authenticate': 'Bearer' } });
  const needed = neededPermission(request);
  const param = request.routeOptions.config.databaseParam ?? 'db';
  const db = (request.params as Record<string, string> | undefined)?.[param];
  if (!allows(record, needed, db)) return lacks(needed, db);
  request.apiKey = record;
  return undefined;
}
