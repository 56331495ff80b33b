// The one error mapper: FirkinErrors keep their code and status, anything else is a logged 500
// with the generic body, and streams that fail midway use the same mapping.
import type { FastifyRequest } from 'fastify';
import t from 'tap';
import { ERROR_CODES, FirkinError } from '../../src/core/errors.js';
import { errorInStream, toErrorReply } from '../../src/http/errors.js';

function fakeRequest() {
  const logged: unknown[] = [];
  const warned: unknown[] = [];
  const request = { method: 'GET', url: '/x', log: { error: (obj: unknown) => logged.push(obj), warn: (obj: unknown) => warned.push(obj) } } as unknown as FastifyRequest;
  return { request, logged, warned };
}

t.test('every code has a status in 400..599', (t) => {
  for (const code of ERROR_CODES) {
    const { status, body } = toErrorReply(new FirkinError(code, 'm'));
    t.ok(status >= 400 && status < 600, code);
    t.equal(body.error, code);
  }
  t.end();
});

t.test('a bug is a 500 with the generic body; its message never leaks', (t) => {
  const reply = toErrorReply(new TypeError('secret detail'));
  t.same(reply, { status: 500, body: { error: 'error', message: 'internal error' }, headers: {} });
  t.end();
});

t.test('errorInStream: same body as a route would send; bugs are logged, client errors are not', (t) => {
  const bug = fakeRequest();
  t.same(errorInStream(new Error('boom'), bug.request), { error: 'error', message: 'internal error' });
  t.equal(bug.logged.length, 1);
  const gone = fakeRequest();
  t.same(errorInStream(new FirkinError('not_found', 'database deleted', { details: { db: 'x' } }), gone.request), {
    error: 'not_found',
    message: 'database deleted',
    db: 'x',
  });
  t.equal(gone.logged.length, 0);
  t.end();
});

t.test('a 5xx FirkinError (the cluster unavailable, a deadline) is a warning without a stack; a bug an error with it', (t) => {
  const { request, logged, warned } = fakeRequest();
  const body = errorInStream(new FirkinError('unavailable', 'replication_factor 5 needs 5 live nodes'), request);
  t.same(body, { error: 'unavailable', message: 'replication_factor 5 needs 5 live nodes' });
  t.same(logged, [], 'not logged as an error');
  t.same(warned, [{ status: 503, error: 'unavailable', reason: 'replication_factor 5 needs 5 live nodes', method: 'GET', url: '/x' }], 'a warning with code and message, no stack');
  errorInStream(new RangeError('a bug'), request);
  errorInStream(new FirkinError('error', 'shard snapshot does not decode'), request);
  t.equal(logged.length, 2);
  t.match(logged[0], { err: { message: 'a bug' } }, 'the bug keeps its error (and so its stack) in the log');
  t.match(logged[1], { err: { message: 'shard snapshot does not decode' } }, 'as does a FirkinError of the code error (a state that should not be)');
  t.end();
});
