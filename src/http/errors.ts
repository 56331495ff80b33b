// The only place that turns an error into an HTTP response: `{error, message}` always.
import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { type ErrorCode, isFirkinError } from '../core/errors.js';

const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  already_exists: 409,
  precondition_failed: 412,
  too_large: 413,
  unsupported_media_type: 415,
  unavailable: 503,
  bad_gateway: 502,
  timeout: 504,
  error: 500,
  no_bm25_index: 400,
  same_shard_count: 400,
  not_clustered: 400,
  not_member: 400,
  not_leader: 503,
  already_member: 409,
  no_quorum: 503,
  stale_epoch: 503,
  reshard_in_progress: 409,
  missing_api_key: 401,
  invalid_api_key: 401,
  invalid_master_key: 401,
  collection_not_found: 404,
  document_not_found: 404,
  collection_already_exists: 409,
  quota_exceeded: 403,
  rate_limit_exceeded: 429,
};

/** fastify's own client errors carry only a status: name them by it. */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'too_large',
  415: 'unsupported_media_type',
  429: 'rate_limit_exceeded',
};

export interface ErrorReply {
  status: number;
  body: { error: string; message: string; [extra: string]: unknown };
  headers: Record<string, string>;
}

/**
 * A request that fails its schema, in words: fastify's form (`body/index/m must be >= 0`) plus
 * what ajv's message leaves out, so a client can fix the request from the answer alone: an
 * unknown property's name and the properties that are known there, an enum's values. Errors
 * need ajv's `verbose` for the known properties (the schema is on them then).
 */
export function schemaErrorMessage(errors: readonly Partial<ErrorObject>[], dataVar: string): string {
  return errors.map((e) => `${dataVar}${e.instancePath ?? ''} ${e.message ?? 'is invalid'}${schemaErrorDetail(e)}`).join(', ');
}

function schemaErrorDetail(e: Partial<ErrorObject>): string {
  const params = (e.params ?? {}) as { additionalProperty?: unknown; allowedValues?: unknown };
  if (e.keyword === 'additionalProperties' && params.additionalProperty !== undefined) {
    const properties = (e.parentSchema as { properties?: unknown } | undefined)?.properties;
    const known = typeof properties === 'object' && properties !== null ? Object.keys(properties) : [];
    return `: ${JSON.stringify(params.additionalProperty)}${known.length > 0 ? ` (known: ${known.join(', ')})` : ''}`;
  }
  if (e.keyword === 'enum' && Array.isArray(params.allowedValues)) return `: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (e.keyword === 'required') {
    // A misspelt property is reported as the one it should have been, missing: name the spelling given.
    const properties = (e.parentSchema as { properties?: unknown } | undefined)?.properties;
    const given = typeof e.data === 'object' && e.data !== null && !Array.isArray(e.data) ? Object.keys(e.data) : [];
    const unknown = typeof properties === 'object' && properties !== null ? given.filter((k) => !Object.hasOwn(properties, k)) : [];
    if (unknown.length > 0) return ` (${unknown.map((k) => JSON.stringify(k)).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not a property of it)`;
  }
  return '';
}

export function toErrorReply(err: unknown): ErrorReply {
  if (isFirkinError(err)) {
    return {
      status: STATUS[err.code],
      body: { error: err.code, message: err.message, ...err.details },
      headers: err.headers ?? {},
    };
  }
  const fe = err as Partial<FastifyError>;
  if (fe.validation !== undefined) {
    return { status: 400, body: { error: 'bad_request', message: fe.message ?? 'invalid request' }, headers: {} };
  }
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    const message = status === 413 ? `request body is too large: ${fe.message}` : (fe.message ?? 'bad request');
    return { status, body: { error: CODE_BY_STATUS[status] ?? 'bad_request', message }, headers: {} };
  }
  return { status: 500, body: { error: 'error', message: 'internal error' }, headers: {} };
}

/**
 * The error body for a response whose status line is already sent (a stream that fails
 * midway): the same mapping as every other route, and a bug is logged the same way.
 */
export function errorInStream(err: unknown, request: FastifyRequest): ErrorReply['body'] {
  const { status, body } = toErrorReply(err);
  logServerError(request.log, err, status, body, request, 'stream failed');
  return body;
}

/**
 * A bug (an error that is not a FirkinError, or one with the code `error`: a state that should
 * not be) is logged at error with its stack. A FirkinError answered 502–504 (no quorum,
 * unavailable, a deadline) is how the cluster is, not a bug: a warning with its code and
 * message, so a failover does not fill the log with stacks.
 */
function logServerError(log: Pick<Logger, 'error' | 'warn'>, err: unknown, status: number, body: ErrorReply['body'], request: FastifyRequest, msg: string): void {
  if (status < 500) return;
  if (isFirkinError(err) && status !== 500) log.warn({ status, error: body.error, reason: body.message, method: request.method, url: request.url }, msg);
  else log.error({ err, method: request.method, url: request.url }, msg);
}

export function makeErrorHandler(log: Logger) {
  return function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
    const { status, body, headers } = toErrorReply(err);
    logServerError(log, err, status, body, request, 'request failed');
    void reply.code(status).headers(headers).send(body);
  };
}
