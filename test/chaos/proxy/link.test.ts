// The link proxy over real TCP on loopback: an echo server behind it, a client in front.
// Held bytes are shown held by the proxy's own counters (read, not written on), never by
// waiting to see that nothing happens.
import net from 'node:net';
import t from 'tap';
import { Link } from '../../../chaos/proxy/link.js';
import { type DirFaults, PASS } from '../../../chaos/proxy/plan.js';
import { SeededRand } from '../../raft/sim/rand.js';
import { waitFor } from '../../support/wait.js';
import { connect, startEcho } from './tcp.js';

const HOLD: DirFaults = { ...PASS, blackhole: true };

async function setup(t: { teardown(fn: () => unknown): void }, options?: { echo?: boolean; keep?: boolean; holdBytesMax?: number }) {
  const echo = await startEcho(options);
  t.teardown(() => echo.close());
  const link = await Link.open({ port: 0, targetPort: echo.port, rand: new SeededRand(7), name: 'n1->n2', ...(options?.holdBytesMax === undefined ? {} : { holdBytesMax: options.holdBytesMax }) });
  t.teardown(() => link.close());
  const client = await connect(link.port);
  t.teardown(() => client.socket.destroy());
  return { echo, link, client };
}

t.test('pass: bytes flow both ways and are counted', async (t) => {
  const { echo, link, client } = await setup(t);
  client.socket.write('hello');
  await waitFor(() => client.received() === 'hello', { what: 'echo' });
  t.equal(echo.received[0]!.toString(), 'hello');
  const s = link.stats();
  t.same({ in: s.a2b.bytesIn, out: s.a2b.bytesOut, backIn: s.b2a.bytesIn, backOut: s.b2a.bytesOut }, { in: 5, out: 5, backIn: 5, backOut: 5 });
  t.equal(s.connectionsAccepted, 1);
  t.equal(s.connectionsOpen, 1);
});

t.test('blackhole both ways on a live connection holds bytes; heal delivers them in order', async (t) => {
  const { echo, link, client } = await setup(t);
  client.socket.write('a');
  await waitFor(() => client.received() === 'a', { what: 'first echo' });
  link.set({ a2b: HOLD, b2a: HOLD });
  client.socket.write('b');
  client.socket.write('c');
  await waitFor(() => link.stats().a2b.bytesIn === 3, { what: 'proxy to read the held bytes' });
  t.equal(link.stats().a2b.bytesOut, 1, 'read but not passed on');
  t.equal(echo.received[0]!.toString(), 'a', 'the server got nothing new');
  t.equal(link.stats().connectionsOpen, 1, 'the connection stays open');
  link.heal();
  await waitFor(() => client.received() === 'abc', { what: 'held bytes and their echo after heal' });
  t.equal(echo.received[0]!.toString(), 'abc');
  t.equal(link.stats().connectionsAccepted, 1, 'the same connection carried on');
});

t.test('one way: replies held, requests pass', async (t) => {
  const { echo, link, client } = await setup(t);
  link.setDirection('b2a', HOLD);
  client.socket.write('ping');
  await waitFor(() => echo.received[0]?.toString() === 'ping', { what: 'request to reach the server' });
  await waitFor(() => link.stats().b2a.bytesIn === 4, { what: 'the echo to reach the proxy' });
  t.equal(link.stats().b2a.bytesOut, 0, 'the reply is held');
  t.equal(client.received(), '');
  link.setDirection('b2a', PASS);
  await waitFor(() => client.received() === 'ping', { what: 'the reply after heal' });
});

t.test('one way: requests held, and a FIN waits behind them', async (t) => {
  const { echo, link, client } = await setup(t, { echo: false });
  client.socket.write('x');
  await waitFor(() => echo.received[0]?.toString() === 'x', { what: 'first byte' });
  let serverSawEnd = false;
  echo.sockets[0]!.on('end', () => (serverSawEnd = true));
  link.setDirection('a2b', HOLD);
  client.socket.end('yz');
  await waitFor(() => link.stats().a2b.bytesIn === 3, { what: 'proxy to read the held bytes' });
  t.equal(echo.received[0]!.toString(), 'x');
  t.notOk(serverSawEnd, 'the FIN is held behind the bytes');
  link.heal();
  await waitFor(() => serverSawEnd, { what: 'FIN after heal' });
  t.equal(echo.received[0]!.toString(), 'xyz', 'bytes before the FIN');
});

t.test('a dialler that resets while held: its held bytes are discarded, the reset arrives on heal', async (t) => {
  const { echo, link, client } = await setup(t, { echo: false });
  client.socket.write('x');
  await waitFor(() => echo.received[0]?.toString() === 'x', { what: 'first byte' });
  const serverClosed = new Promise<void>((resolve) => echo.sockets[0]!.once('close', () => resolve()));
  link.setDirection('a2b', HOLD);
  client.socket.write('yz');
  await waitFor(() => link.stats().a2b.bytesIn === 3, { what: 'proxy to read the held bytes' });
  client.socket.resetAndDestroy();
  await waitFor(() => link.stats().a2b.bytesDiscarded === 2, { what: 'held bytes discarded' });
  link.heal();
  await serverClosed;
  t.equal(echo.received[0]!.toString(), 'x', 'nothing sent after the hold arrived');
});

t.test('past the hold bound the proxy stops reading; heal delivers every byte, in order', async (t) => {
  const holdBytesMax = 64 * 1024;
  const total = 16 * 1024 * 1024;
  const { echo, link, client } = await setup(t, { echo: false, keep: false, holdBytesMax });
  await waitFor(() => echo.sockets.length === 1, { what: 'the target to accept' });
  let offset = 0;
  let inOrder = true;
  echo.sockets[0]!.on('data', (d: Buffer) => {
    for (const byte of d) if (byte !== (offset++ * 7) % 251) inOrder = false;
  });
  link.setDirection('a2b', HOLD);
  const data = Buffer.alloc(total);
  for (let i = 0; i < total; i++) data[i] = (i * 7) % 251;
  client.socket.write(data);
  await waitFor(() => link.stats().a2b.readsPaused === 1, { what: 'reading paused at the bound' });
  // one socket read (at most 64 KiB) may land after the bound is crossed, never more
  t.ok(link.stats().a2b.bytesIn < holdBytesMax + 64 * 1024, `${link.stats().a2b.bytesIn} bytes read while held`);
  link.heal();
  await waitFor(() => echo.bytes[0] === total, { what: 'every byte after heal', timeoutMs: 30_000 });
  t.ok(inOrder, 'in order, none lost or repeated');
  t.equal(link.stats().a2b.readsPaused, 0);
});

t.test('delay: every chunk arrives in order and not before the configured latency, each way', async (t) => {
  const { link, client } = await setup(t);
  const delay: DirFaults = { ...PASS, delayMs: 60, jitterMs: 40 };
  link.set({ a2b: delay, b2a: delay });
  const sent: { atMs: number; data: string }[] = [];
  for (let i = 0; i < 10; i++) {
    const data = String.fromCharCode(97 + i);
    sent.push({ atMs: Date.now(), data });
    client.socket.write(data);
    await new Promise((r) => setImmediate(r)); // separate writes, so jitter can differ
  }
  await waitFor(() => client.received() === 'abcdefghij', { what: 'every echo' });
  // each arrival may carry several chunks: check each chunk against its own send time
  for (const a of client.arrivals) {
    for (const ch of a.data) {
      const s = sent.find((x) => x.data === ch)!;
      t.ok(a.atMs - s.atMs >= 2 * delay.delayMs, `${ch} took ${a.atMs - s.atMs} ms, at least ${2 * delay.delayMs}`);
    }
  }
});

t.test('a delay set on a live connection applies to bytes read after it', async (t) => {
  const { link, client } = await setup(t);
  client.socket.write('1');
  await waitFor(() => client.received() === '1', { what: 'first echo' });
  link.setDirection('a2b', { ...PASS, delayMs: 100, jitterMs: 0 });
  const atMs = Date.now();
  client.socket.write('2');
  await waitFor(() => client.received() === '12', { what: 'delayed echo' });
  t.ok(client.arrivals.at(-1)!.atMs - atMs >= 100);
});

t.test('cut resets live connections and refuses new ones until healed', async (t) => {
  const { link, client } = await setup(t);
  client.socket.write('a');
  await waitFor(() => client.received() === 'a', { what: 'first echo' });
  link.cut();
  const err = await client.closed;
  t.match(err, { code: 'ECONNRESET' }, 'the live connection is reset');
  const again = net.connect({ host: '127.0.0.1', port: link.port });
  t.teardown(() => again.destroy());
  const outcome = await new Promise<string>((resolve) => {
    again.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    again.on('close', () => resolve('closed'));
    again.on('data', () => resolve('data'));
    again.write('b');
  });
  t.match(outcome, /ECONNRESET|EPIPE|closed/, 'a new connection is refused');
  t.ok(link.stats().connectionsReset >= 2);
  link.heal();
  const fresh = await connect(link.port);
  t.teardown(() => fresh.socket.destroy());
  fresh.socket.write('c');
  await waitFor(() => fresh.received() === 'c', { what: 'echo after heal' });
});

t.test('throttle bounds throughput from above; heal lets the rest through', async (t) => {
  const { echo, link, client } = await setup(t, { echo: false });
  const bytesPerSecond = 50_000;
  const total = 200_000;
  link.setDirection('a2b', { ...PASS, bytesPerSecond });
  const startMs = Date.now();
  client.socket.write(Buffer.alloc(total, 1));
  await waitFor(() => (echo.bytes[0] ?? 0) >= 40_000, { what: 'some throttled bytes', timeoutMs: 20_000 });
  const windowMs = Date.now() - startMs;
  const got = echo.bytes[0]!;
  const burst = (bytesPerSecond * 50) / 1000;
  t.ok(got <= (bytesPerSecond * windowMs * 1.5) / 1000 + burst, `${got} bytes in ${windowMs} ms at ${bytesPerSecond} B/s`);
  link.heal();
  await waitFor(() => echo.bytes[0] === total, { what: 'the rest after heal' });
});

t.test('close ends every connection it opened', async (t) => {
  const echo = await startEcho();
  t.teardown(() => echo.close());
  const link = await Link.open({ port: 0, targetPort: echo.port, rand: new SeededRand(1) });
  const client = await connect(link.port);
  t.teardown(() => client.socket.destroy());
  client.socket.write('a');
  await waitFor(() => client.received() === 'a', { what: 'echo' });
  await link.close();
  await client.closed;
  t.equal(link.stats().connectionsOpen, 0);
  await t.rejects(connect(link.port), { code: 'ECONNREFUSED' });
});
