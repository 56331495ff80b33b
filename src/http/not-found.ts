// 404 for unknown paths, 405 (with Allow) for a known path with a method it does not take.
// fastify answers both with its 404 handler, so we keep a shadow router of every route.
import type { FastifyInstance, HTTPMethods } from 'fastify';
import FindMyWay from 'find-my-way';
import { FirkinError } from '../core/errors.js';

const METHODS: readonly HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'COPY'];

export interface RouteInfo {
  method: string;
  url: string;
}

/** Installs the 404/405 handler; returns the live list of registered routes (for tests and docs). */
export function installNotFound(app: FastifyInstance): RouteInfo[] {
  const routes: RouteInfo[] = [];
  const shadow = FindMyWay({ ignoreTrailingSlash: true, caseSensitive: true });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (!METHODS.includes(method as HTTPMethods)) continue;
      if (method !== 'HEAD') routes.push({ method, url: route.url });
      try {
        shadow.on(method as never, route.url, () => undefined);
      } catch {
        // the same route registered twice (HEAD auto-routes): already known
      }
    }
  });
  app.setNotFoundHandler(async (request) => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = METHODS.filter((m) => m !== request.method && shadow.find(m as never, path) !== null);
    if (allowed.length > 0) {
      // The methods in the message too: a client that shows only the body still learns them.
      throw new FirkinError('method_not_allowed', `${request.method} is not allowed on ${path} (allowed: ${allowed.join(', ')})`, {
        headers: { allow: allowed.join(', ') },
      });
    }
    throw new FirkinError('not_found', `no route for ${request.method} ${path}`);
  });
  return routes;
}
