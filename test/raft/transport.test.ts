// The gRPC transport: cookie challenge both ways, batching, chunked snapshots, reconnects.
import t from 'tap';
import { Transport, cookieMac } from '../../src/cluster/transport.js';
import { wasNotSent } from '../../src/cluster/not-sent.js';
import { FirkinError } from '../../src/core/errors.js';
import type { Message } from '../../src/raft/types.js';
import { waitFor } from '../support/wait.js';

function hb(from: string, to: string, term: number): Message {
  return { kind: 'heartbeat', group: 'g', from, to, term, commit: 0, readSeq: 0 };
}

async function pair(cookieA: string, cookieB: string, portB = 0) {
  const gotA: Message[] = [];
  const gotB: Message[] = [];
  const b = new Transport({ nodeId: 'b', cookie: cookieB, listen: `127.0.0.1:${portB}`, peers: new Map(), onMessages: (m) => gotB.push(...m), heartbeatIntervalMs: 50 });
  await b.start();
  const a = new Transport({ nodeId: 'a', cookie: cookieA, listen: '127.0.0.1:0', peers: new Map([['b', `127.0.0.1:${b.port}`]]), onMessages: (m) => gotA.push(...m), heartbeatIntervalMs: 50 });
  await a.start();
  return { a, b, gotA, gotB };
}

t.test('the HMAC never contains the cookie and depends on role, nonces and node', (t) => {
  const m1 = cookieMac('secret', 'dialler', Buffer.from('n1'), Buffer.from('n2'), 'a');
  t.not(m1.toString('hex'), cookieMac('secret', 'listener', Buffer.from('n1'), Buffer.from('n2'), 'a').toString('hex'));
  t.not(m1.toString('hex'), cookieMac('other', 'dialler', Buffer.from('n1'), Buffer.from('n2'), 'a').toString('hex'));
  t.notOk(m1.includes(Buffer.from('secret')));
  t.end();
});

t.test('messages sent in one turn arrive in one batch, in order; heartbeats mark the peer seen', async (t) => {
  const { a, b, gotB } = await pair('cookie', 'cookie');
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await waitFor(() => a.isConnected('b'), { what: 'link up' });
  a.send(Array.from({ length: 100 }, (_, i) => hb('a', 'b', i + 1)));
  await waitFor(() => gotB.length === 100, { what: 'delivery' });
  t.same(gotB.map((m) => m.term), Array.from({ length: 100 }, (_, i) => i + 1));
  t.equal(a.stats.batchesSent, 1, 'one batch for the whole turn');
  await waitFor(() => b.lastSeenMs('a') !== undefined, { what: 'heartbeat' });
  // A big message (a snapshot) is chunked and reassembled.
  const data = new Uint8Array(1_000_000).map((_, i) => i % 251);
  const snap: Message = { kind: 'snapshot', group: 'g', from: 'a', to: 'b', term: 1, snapshot: { meta: { index: 5, term: 1, conf: { voters: ['a', 'b'], learners: [] } }, data } };
  a.send([snap]);
  await waitFor(() => gotB.length === 101, { what: 'snapshot delivery' });
  const got = gotB[100]!;
  t.equal(got.kind, 'snapshot');
  t.ok(got.kind === 'snapshot' && Buffer.from(got.snapshot.data).equals(Buffer.from(data)));
  // A peer may only speak for itself: a forged sender is dropped, the next real one arrives.
  a.send([hb('x', 'b', 998)]);
  a.send([hb('a', 'b', 999)]);
  await waitFor(() => gotB.length === 102);
  await new Promise((r) => setImmediate(r));
  t.equal(gotB[101]!.term, 999);
  t.equal(gotB.length, 102);
  t.end();
});

t.test('a peer that does not dial back (it does not know the dialler) is still heard: it heartbeats on the dialler\'s stream', async (t) => {
  // b has no peers: it never dials a. a hears b past the handshake only through b's
  // heartbeats back on a's own stream (a failure detector on a would otherwise call b down).
  const { a, b } = await pair('cookie', 'cookie');
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await waitFor(() => a.isConnected('b'), { what: 'link up' });
  const first = a.lastSeenMs('b')!;
  await waitFor(() => (a.lastSeenMs('b') ?? 0) >= first + 200, { timeoutMs: 5_000, what: "b heard again after the handshake, on a's stream" });
  t.pass('a keeps hearing b');
  t.end();
});

t.test('a wrong cookie is refused on both sides and nothing is delivered', async (t) => {
  const { a, b, gotB } = await pair('right', 'wrong');
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  a.send([hb('a', 'b', 1)]);
  await waitFor(() => a.stats.authFailures > 0 || b.stats.authFailures > 0, { what: 'auth failure' });
  t.notOk(a.isConnected('b'));
  t.same(gotB, []);
});

t.test('the dialler reconnects with backoff after the peer restarts', async (t) => {
  const { a, b, gotB } = await pair('c', 'c');
  t.notOk(b.linkLost('a'), 'no link to a peer: not lost');
  await waitFor(() => a.isConnected('b'));
  t.notOk(a.linkLost('b'));
  const port = b.port;
  await b.close();
  await waitFor(() => !a.isConnected('b'), { what: 'link down' });
  t.ok(a.linkLost('b'), 'an up link that broke is lost until a redial succeeds');
  const got2: Message[] = [];
  const b2 = new Transport({ nodeId: 'b', cookie: 'c', listen: `127.0.0.1:${port}`, peers: new Map(), onMessages: (m) => got2.push(...m), heartbeatIntervalMs: 50 });
  await b2.start();
  t.teardown(async () => {
    await a.close();
    await b2.close();
  });
  await waitFor(() => a.isConnected('b'), { timeoutMs: 10_000, what: 'reconnect' });
  t.notOk(a.linkLost('b'), 'found again');
  a.send([hb('a', 'b', 7)]);
  await waitFor(() => got2.length === 1, { what: 'delivery after reconnect' });
  t.equal(got2[0]!.term, 7);
  t.same(gotB, []);
  t.ok(a.stats.reconnects > 0);
});

// An error's details cross the link: a not_leader's `leader` hint reached no caller on another
// node before (only code and message did), so a node whose own stale replica named an old
// leader never learned of the real one (CI, test/chaos/short-data.test.ts).
t.test("a call's error keeps its code, message and details across the link, except `sent`", async (t) => {
  const b = new Transport({
    nodeId: 'b',
    cookie: 'cookie',
    listen: '127.0.0.1:0',
    peers: new Map(),
    onMessages: () => undefined,
    heartbeatIntervalMs: 50,
    onRequest: async (_peer, method) => {
      if (method === 'lead') throw new FirkinError('not_leader', 'b does not lead g1', { details: { leader: 'n4' } });
      if (method === 'relayed') throw new FirkinError('unavailable', 'call not sent to c: link is down', { details: { sent: false } });
      if (method === 'plain') throw new FirkinError('conflict', 'no details');
      return new Uint8Array([1]);
    },
  });
  await b.start();
  const a = new Transport({ nodeId: 'a', cookie: 'cookie', listen: '127.0.0.1:0', peers: new Map([['b', `127.0.0.1:${b.port}`]]), onMessages: () => undefined, heartbeatIntervalMs: 50 });
  await a.start();
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await waitFor(() => a.isConnected('b'), { what: 'link up' });
  const failure = (method: string) => a.call('b', method, new Uint8Array(), 2_000).then(() => undefined, (err: unknown) => err as FirkinError);
  const lead = await failure('lead');
  t.equal(lead?.code, 'not_leader');
  t.equal(lead?.message, 'b does not lead g1');
  t.same(lead?.details, { leader: 'n4' }, 'the leader hint arrives');
  const relayed = await failure('relayed');
  t.equal(relayed?.code, 'unavailable');
  t.equal(relayed?.details, undefined, "`sent: false` is b's own call to c, not a's to b: left out");
  t.notOk(wasNotSent(relayed), 'so the caller does not take its call for one never sent');
  const plain = await failure('plain');
  t.equal(plain?.code, 'conflict');
  t.equal(plain?.details, undefined);
  t.end();
});
