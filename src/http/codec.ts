// JSON by default; CBOR (cbor-x) for request bodies by Content-Type and for responses by
// Accept, on every route. One codec layer: routes only ever see and return plain values.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cborHasProtoKey, decodeCbor, encodeCbor } from '../core/codec.js';
import { FirkinError } from '../core/errors.js';
import { jsonValueProblem } from '../core/values.js';

export const CBOR_TYPE = 'application/cbor';

/** Nesting a CBOR body may have: more than any route takes (each checks its own, lower, bound). */
const CBOR_BODY_DEPTH_MAX = 512;

/** True when the client lists CBOR before (or without) JSON in Accept. */
export function wantsCbor(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const cbor = accept.indexOf(CBOR_TYPE);
  if (cbor === -1) return false;
  const json = accept.indexOf('application/json');
  return json === -1 || cbor < json;
}

export function installCodec(app: FastifyInstance): void {
  // Many clients send `Content-Type: application/json` on every request, bodies or not (CouchDB
  // and Qdrant accept that): an empty body is no body, on every route. Anything else goes to
  // fastify's own parser (prototype-poisoning checks and its error codes included).
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req: FastifyRequest, body: string | Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    parseJson(req, body as string, done);
  });
  app.addContentTypeParser(CBOR_TYPE, { parseAs: 'buffer' }, (_req: FastifyRequest, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    try {
      if (cborHasProtoKey(body)) return done(new FirkinError('bad_request', 'invalid CBOR body: a map key "__proto__" (refused, as in a JSON body)'), undefined);
      const value = decodeCbor(body);
      // A CBOR body carries what a JSON one could, no more: a byte string, bigint or tag
      // stored in a document or metadata would not render as JSON, or not at all.
      const problem = jsonValueProblem(value, CBOR_BODY_DEPTH_MAX, 'body');
      if (problem !== undefined) return done(new FirkinError('bad_request', `invalid CBOR body: ${problem}`), undefined);
      done(null, value);
    } catch (err) {
      done(new FirkinError('bad_request', `invalid CBOR body: ${(err as Error).message}`), undefined);
    }
  });
  // Only object payloads reach preSerialization; strings, buffers and streams pass untouched.
  // A callback hook: it runs for every object reply, and an async one costs a promise and a turn.
  app.addHook('preSerialization', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload: unknown) => void) => {
    if (wantsCbor(request.headers.accept)) {
      reply.type(CBOR_TYPE);
      reply.serializer(encodeCbor as unknown as (payload: unknown) => string); // fastify sends Buffers as they are
    }
    done(null, payload);
  });
}
