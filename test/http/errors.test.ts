// The one error mapper: FirkinErrors keep their code and status, anything else is a logged 500
// with the generic body, and streams that fail midway use the same mapping.
import type { FastifyRequest } from 'fastify';
import t from 'tap';
import { ERROR_CODES, FirkinError } from '../../src/core/errors.js';
import { errorInStream, toErrorReply } from '../../src/http/errors.js';

function fakeRequest() {
  const logged: unknown[] = [];
  const request = { method: 'GET', url: '/x', log: { error: (obj: unknown) => logged.push(obj) } } as unknown as FastifyRequest;
  return { request, logged };
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
