// The web console: static files from dist/console (built by scripts/build-console.mjs) at
// /_console/, and the redirect of browsers from `/` to it. API clients asking for `/` keep
// getting the 404 they always got.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { FirkinError } from '../core/errors.js';
import { packagePath } from '../core/package-root.js';

export const CONSOLE_PREFIX = '/_console';

// No inline script or style, nothing from elsewhere, never framed. uPlot and Preact set
// styles through the CSSOM (element.style), which style-src does not govern.
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

// Built names are `[name]-[hash].ext`: anything else is not ours to serve (and no `..`).
const ASSET_NAME = /^[A-Za-z0-9_-]+\.(js|css)$/;

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer');
}

function wantsHtml(accept: string | undefined): boolean {
  return accept !== undefined && accept.toLowerCase().includes('text/html');
}

/** dist/console of the package this file belongs to (it runs from src/ under tsx, dist/src/ when built). */
export function defaultConsoleDir(): string {
  return packagePath('dist', 'console');
}

export function installConsole(app: FastifyInstance, options: { assetsDir: string }): void {
  // A hook, not a `GET /` route: a route would turn today's 404 for other methods on `/`
  // into a 405, and API clients must see no change.
  // A callback hook (every request passes it): answering from it, it calls no `done`.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method !== 'GET' || request.url !== '/' || !wantsHtml(request.headers.accept)) return done();
    reply.redirect(`${CONSOLE_PREFIX}/`, 302);
  });

  const sendFile = async (reply: FastifyReply, name: string, cacheControl: string) => {
    let body: Buffer;
    try {
      body = await readFile(path.join(options.assetsDir, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (name === 'index.html') throw new FirkinError('unavailable', 'the console is not built: run npm run build');
      throw new FirkinError('not_found', `no console asset ${name}`);
    }
    return secure(reply)
      .type(CONTENT_TYPES[path.extname(name)]!)
      .header('cache-control', cacheControl)
      .send(body);
  };

  // index.html names the current hashed assets, so it must be revalidated every time.
  app.get(`${CONSOLE_PREFIX}/`, async (_request, reply) => sendFile(reply, 'index.html', 'no-cache'));
  app.get<{ Params: { asset: string } }>(`${CONSOLE_PREFIX}/:asset`, async (request, reply) => {
    const { asset } = request.params;
    if (!ASSET_NAME.test(asset)) throw new FirkinError('not_found', `no console asset ${asset}`);
    return sendFile(reply, asset, 'public, max-age=31536000, immutable');
  });
}
