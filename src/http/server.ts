// Builds the fastify app (not listening). `listener.ts` owns sockets and protocols.
import { Ajv, type ErrorObject } from 'ajv';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerFactoryHandler } from 'fastify';
import { createServer } from 'node:http';
import type { Logger } from 'pino';
import type { ApiKeys } from '../auth/api-keys.js';
import type { Clock, HybridClock } from '../core/hlc.js';
import type { Metrics } from '../metrics.js';
import { installCodec } from './codec.js';
import { designDocUrl } from './design-url.js';
import { defaultConsoleDir, installConsole } from './console.js';
import { makeErrorHandler, schemaErrorMessage } from './errors.js';
import { installAuth } from './hooks/auth.js';
import { installObserve } from './hooks/observe.js';
import { type RouteInfo, installNotFound } from './not-found.js';
import type { HealthCheck } from '../core/health.js';
import { systemRoutes } from './routes/system.js';

export interface HttpDeps {
  log: Logger;
  clock: Clock;
  hlc: HybridClock;
  metrics: Metrics;
  keys: ApiKeys;
  authDisabled: boolean;
  bodyLimitBytes: number;
  nodeName: string;
  version: string;
  startedAtMs: number;
  checks: Record<string, HealthCheck>;
  /** Where the built console lives (dist/console of the package by default). */
  consoleDir?: string;
  /** Feature route plugins, registered after the platform hooks. */
  features?: ((app: FastifyInstance) => Promise<void>)[];
}

export interface BuiltHttp {
  app: FastifyInstance;
  /** fastify's request handler, protocol-agnostic (HTTP/1.1 and HTTP/2 compat requests). */
  handler: FastifyServerFactoryHandler;
  /** Every registered route (method + pattern). */
  routes: RouteInfo[];
}

// Query strings, params and headers arrive as text: coercing "10" to 10 (and a lone value
// to a one-element array) is what their schemas mean. A body is typed JSON/CBOR: `"10"` for
// an integer or `"x"` for an array is the client's mistake and must be a 400, not silently
// converted. Hence two ajv instances, chosen by the part being validated.
// `verbose`: a failing check carries its schema, which names the properties a bad request's
// message lists (errors.ts, `schemaErrorMessage`).
const AJV_OPTIONS = { allErrors: false, useDefaults: true, removeAdditional: false, allowUnionTypes: true, verbose: true } as const;
const textAjv = new Ajv({ ...AJV_OPTIONS, coerceTypes: 'array' });
const bodyAjv = new Ajv({ ...AJV_OPTIONS, coerceTypes: false });

/** ajv's validate function as fastify calls it: a boolean, and the errors on the function. */
interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

// Each schema is compiled by its first request, not at start: compiling every route's schemas
// took ~0.3 s of CPU a start (a third of it), which every node process and test paid.
function validatorCompiler({ schema, httpPart }: { schema: object; httpPart?: string }): Validator {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  let compiled: Validator | undefined;
  const validate: Validator = (data) => {
    compiled ??= ajv.compile(schema);
    const ok = compiled(data);
    validate.errors = compiled.errors;
    return ok;
  };
  return validate;
}

export async function buildHttp(deps: HttpDeps): Promise<BuiltHttp> {
  let handler: FastifyServerFactoryHandler | undefined;
  const app: FastifyInstance = Fastify({
    // `/db/name/` is `/db/name` (CouchDB clients such as PouchDB add the slash).
    routerOptions: { ignoreTrailingSlash: true },
    rewriteUrl: (req) => designDocUrl(req.url ?? '/'),
    loggerInstance: deps.log as FastifyBaseLogger,
    // One debug line per request comes from hooks/observe.ts instead of fastify's two at info.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.bodyLimitBytes,
    schemaErrorFormatter: (errors, dataVar) => new Error(schemaErrorMessage(errors, dataVar)),
    // Sockets belong to listener.ts; fastify only routes.
    serverFactory: (h) => {
      handler = h;
      return createServer();
    },
  }) as unknown as FastifyInstance;
  // CouchDB's COPY of a document (routes/docdb.ts, routes/vdb.ts): not among fastify's defaults.
  app.addHttpMethod('COPY');
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(makeErrorHandler(deps.log));
  const routes = installNotFound(app);
  installCodec(app);
  installObserve(app, deps);
  installAuth(app, { keys: deps.keys, disabled: deps.authDisabled });
  installConsole(app, { assetsDir: deps.consoleDir ?? defaultConsoleDir() });
  await app.register(systemRoutes, {
    nodeName: deps.nodeName,
    version: deps.version,
    startedAtMs: deps.startedAtMs,
    clock: deps.clock,
    metrics: deps.metrics,
    keys: deps.keys,
    authDisabled: deps.authDisabled,
    checks: deps.checks,
  });
  for (const feature of deps.features ?? []) await feature(app);
  await app.ready();
  if (handler === undefined) throw new Error('fastify did not call serverFactory');
  return { app, handler, routes };
}
