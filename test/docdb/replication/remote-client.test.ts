// The replicator's HTTP client against a bare node:http server: answers, the remote's errors,
// and every way a call can fail (refused, silent, cut short, stopped), each as one FirkinError.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t, { type Test } from 'tap';
import { FirkinError } from '../../../src/core/errors.js';
import { HybridClock, hlcToBase64 } from '../../../src/core/hlc.js';
import { RemoteDb } from '../../../src/docdb/replication/remote-client.js';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

/** A server whose answer each test sets; counts the connections it was given. */
async function remote(t: Test, handler: { current: Handler }): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler.current(req, Buffer.concat(chunks).toString(), res));
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/db/target`, connections: () => connections };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

async function failure(call: Promise<unknown>): Promise<FirkinError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof FirkinError) return err;
    throw err;
  }
  throw new Error('the call succeeded');
}

t.test('answers: JSON parsed, the remote clock merged, the body and auth sent, one kept-alive connection', async (t) => {
  const handler = { current: ((_req, _body, res) => json(res, 200, {})) as Handler };
  const server = await remote(t, handler);
  const hlc = new HybridClock({ nowMs: () => 1_000 });
  const db = new RemoteDb({ url: server.url, auth: { kind: 'bearer', token: 'k' }, hlc, timeoutMs: 5_000 });
  const ahead = { wallMs: 5_000_000, logical: 7 };
  const seen: { method?: string; url?: string; auth?: string; type?: string; body?: string } = {};
  handler.current = (req, body, res) => {
    Object.assign(seen, { method: req.method, url: req.url, auth: req.headers.authorization, type: req.headers['content-type'], body });
    json(res, 201, { ok: true }, { 'x-service-hlc': hlcToBase64(ahead) });
  };
  t.same(await db.call('POST', '/_revs_diff', { body: { a: ['1-x'] } }), { status: 201, body: { ok: true } });
  t.same(seen, { method: 'POST', url: '/db/target/_revs_diff', auth: 'Bearer k', type: 'application/json', body: '{"a":["1-x"]}' });
  t.ok(hlc.peek().wallMs >= ahead.wallMs, 'the remote clock was merged');
  handler.current = (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('plain words');
  };
  t.same(await db.call('GET', ''), { status: 200, body: 'plain words' }, 'a body that is not JSON is returned as text');
  t.equal(server.connections(), 1, 'both calls on one connection');
});

t.test("the remote's errors: accepted statuses returned, others thrown with its message", async (t) => {
  const handler = { current: ((_req, _body, res) => json(res, 409, { error: 'conflict', reason: 'Document update conflict.' })) as Handler };
  const server = await remote(t, handler);
  const db = new RemoteDb({ url: server.url, auth: { kind: 'none' }, hlc: new HybridClock({ nowMs: () => Date.now() }), timeoutMs: 5_000 });
  t.same(await db.call('PUT', '/_local/x', { body: {}, accept: [409] }), { status: 409, body: { error: 'conflict', reason: 'Document update conflict.' } });
  const conflict = await failure(db.call('PUT', '/_local/x', { body: {} }));
  t.match(conflict, { code: 'conflict', message: /PUT http:\/\/127\.0\.0\.1:\d+\/db\/target\/_local\/x: the remote answered 409: Document update conflict\./ });
  handler.current = (_req, _body, res) => json(res, 500, { error: 'internal', message: 'boom' });
  t.match(await failure(db.call('GET', '')), { code: 'bad_gateway', message: /answered 500: boom/, details: { remote_status: 500 } });
  handler.current = (_req, _body, res) => {
    res.writeHead(301, { location: 'http://elsewhere.example/' });
    res.end();
  };
  t.match(await failure(db.call('GET', '')), { code: 'bad_gateway', message: /answered 301/ }, 'a redirect is not followed');
  handler.current = (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"cut');
  };
  t.match(await failure(db.call('GET', '')), { code: 'bad_gateway', message: /answered 200 with invalid JSON/ });
});

t.test('failures: refused, silent past the timeout, cut short, stopped', async (t) => {
  const handler = { current: ((_req, _body, res) => json(res, 200, {})) as Handler };
  const server = await remote(t, handler);
  const hlc = new HybridClock({ nowMs: () => Date.now() });
  // A port nothing listens on: a server's, closed.
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const refused = new RemoteDb({ url: `http://127.0.0.1:${port}/db/x`, auth: { kind: 'none' }, hlc, timeoutMs: 5_000 });
  t.match(await failure(refused.call('GET', '')), { code: 'bad_gateway', message: /cannot reach the remote \(ECONNREFUSED\)/ });

  const db = new RemoteDb({ url: server.url, auth: { kind: 'none' }, hlc, timeoutMs: 5_000 });
  handler.current = () => undefined; // never answers
  t.match(await failure(db.call('GET', '/_changes', { timeoutMs: 150 })), { code: 'timeout', message: /no answer within 150 ms/ });

  handler.current = (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"results": [');
    setImmediate(() => res.socket?.destroy());
  };
  t.match(await failure(db.call('GET', '/_changes')), { code: 'bad_gateway', message: /cannot reach the remote/ }, 'an answer cut short');

  const stop = new AbortController();
  const stopped = new RemoteDb({ url: server.url, auth: { kind: 'none' }, hlc, timeoutMs: 5_000, signal: stop.signal });
  handler.current = () => undefined;
  const pending = failure(stopped.call('GET', '/_changes'));
  setImmediate(() => stop.abort());
  t.match(await pending, { code: 'unavailable', message: /replication stopped/ });

  handler.current = (_req, _body, res) => json(res, 200, { ok: true });
  t.same(await db.call('GET', ''), { status: 200, body: { ok: true } }, 'the client works again after all that');
});
