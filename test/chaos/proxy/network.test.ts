// The fault network over real TCP (echo servers standing in for nodes), then over the
// project's gRPC transport: Raft messages flow, stop under a partition, resume on heal.
import t from 'tap';
import { Transport } from '../../../src/cluster/transport.js';
import type { Message } from '../../../src/raft/types.js';
import type { Link } from '../../../chaos/proxy/link.js';
import { FaultNetwork } from '../../../chaos/proxy/network.js';
import { linkKey, orderedPairs, reaches } from '../../../chaos/proxy/plan.js';
import { SeededRand } from '../../raft/sim/rand.js';
import { waitFor } from '../../support/wait.js';
import { type Client, connect, startEcho } from './tcp.js';

const NODES = ['n1', 'n2', 'n3'];

async function echoCluster(t: { teardown(fn: () => unknown): void }) {
  const ports = new Map<string, number>();
  for (const n of NODES) {
    const echo = await startEcho();
    t.teardown(() => echo.close());
    ports.set(n, echo.port);
  }
  const net = await FaultNetwork.open({ grpcPorts: ports, rand: new SeededRand(3) });
  t.teardown(() => net.close());
  return net;
}

t.test('dial map and seed name every peer at the proxy of the node own link', async (t) => {
  const net = await echoCluster(t);
  t.equal(net.dialMap('n1'), `n2=127.0.0.1:${net.link('n1', 'n2').port},n3=127.0.0.1:${net.link('n1', 'n3').port}`);
  t.equal(net.seedFor('n3', 'n1'), `127.0.0.1:${net.link('n3', 'n1').port}`);
  t.equal(new Set([...net.stats().keys()]).size, 6, 'one link per ordered pair');
  t.throws(() => net.link('n1', 'n9'), /no link n1->n9/);
});

t.test('a bridge over live connections: round trips succeed iff both ends reach each other; heal restores all', async (t) => {
  const net = await echoCluster(t);
  const clients = new Map<string, Client>();
  for (const [from, to] of orderedPairs(NODES)) {
    const c = await connect(net.link(from, to).port);
    t.teardown(() => c.socket.destroy());
    clients.set(linkKey(from, to), c);
    c.socket.write('a');
  }
  await waitFor(() => [...clients.values()].every((c) => c.received() === 'a'), { what: 'every link up' });
  const plan = net.bridge(['n1'], ['n3'], 'n2');
  for (const c of clients.values()) c.socket.write('b');
  for (const [from, to] of orderedPairs(NODES)) {
    const key = linkKey(from, to);
    const c = clients.get(key)!;
    if (reaches(plan, from, to) && reaches(plan, to, from)) {
      await waitFor(() => c.received() === 'ab', { what: `round trip on ${key}` });
    } else {
      await waitFor(() => net.link(from, to).stats().a2b.bytesIn === 2, { what: `${key} to read` });
      const s = net.link(from, to).stats();
      t.equal(s.a2b.bytesOut, 1, `${key}: the request is held`);
      t.equal(c.received(), 'a', `${key}: no answer`);
    }
  }
  t.notOk(reaches(plan, 'n1', 'n3') || reaches(plan, 'n3', 'n1'), 'the halves are apart');
  net.heal();
  await waitFor(() => [...clients.values()].every((c) => c.received() === 'ab'), { what: 'every held byte after heal' });
  t.same(net.active(), [{ kind: 'heal' }]);
});

t.test('retarget sends new connections to a node that moved', async (t) => {
  const net = await echoCluster(t);
  const moved = await startEcho({ echo: false });
  t.teardown(() => moved.close());
  net.retarget('n2', moved.port);
  const c = await connect(net.link('n1', 'n2').port);
  t.teardown(() => c.socket.destroy());
  c.socket.write('x');
  await waitFor(() => moved.received[0]?.toString() === 'x', { what: 'the moved node' });
});

function hb(from: string, to: string, term: number): Message {
  return { kind: 'heartbeat', group: 'g', from, to, term, commit: 0, readSeq: 0 };
}

/** Two gRPC transports, n1 and n2, each dialling the other through its own proxy. */
async function grpcPair(t: { teardown(fn: () => unknown): void }) {
  const got = new Map<string, Message[]>(NODES.slice(0, 2).map((n) => [n, []]));
  const transports = new Map<string, Transport>();
  for (const n of ['n1', 'n2']) {
    const tr = new Transport({ nodeId: n, cookie: 'chaos-cookie', listen: '127.0.0.1:0', peers: new Map(), onMessages: (m) => got.get(n)!.push(...m), heartbeatIntervalMs: 20 });
    await tr.start();
    t.teardown(() => tr.close());
    transports.set(n, tr);
  }
  const net = await FaultNetwork.open({ grpcPorts: new Map([...transports].map(([n, tr]) => [n, tr.port])), rand: new SeededRand(5) });
  t.teardown(() => net.close());
  // Each node dials its peer where its dial map says: the proxy of its own link.
  for (const [n, tr] of transports) {
    for (const entry of net.dialMap(n).split(',')) {
      const [peer, address] = entry.split('=') as [string, string];
      tr.setPeer(peer, address);
    }
  }
  const n1 = transports.get('n1')!;
  const n2 = transports.get('n2')!;
  await waitFor(() => n1.isConnected('n2') && n2.isConnected('n1'), { what: 'both links up' });
  return { net, n1, n2, got };
}

/**
 * Send one message and wait until the proxy has read it: heartbeats written after its batch
 * reach the proxy behind it (one stream, in order), so once 200 more bytes arrived, it did.
 */
async function sendPastProxy(from: Transport, link: Link, m: Message): Promise<void> {
  const batches = from.stats.batchesSent;
  from.send([m]);
  await waitFor(() => from.stats.batchesSent > batches, { what: 'the batch written' });
  const inAfter = link.stats().a2b.bytesIn;
  await waitFor(() => link.stats().a2b.bytesIn > inAfter + 200, { what: 'later frames to reach the proxy' });
}

t.test('gRPC transport through the proxies: messages flow, stop under a partition, resume after heal', async (t) => {
  const { net, n1, n2, got } = await grpcPair(t);
  n1.send([hb('n1', 'n2', 1)]);
  n2.send([hb('n2', 'n1', 1)]);
  await waitFor(() => got.get('n2')!.length === 1 && got.get('n1')!.length === 1, { what: 'first messages' });

  net.partition([['n1'], ['n2']]);
  const link12 = net.link('n1', 'n2');
  await sendPastProxy(n1, link12, hb('n1', 'n2', 2));
  const s = link12.stats();
  t.ok(s.a2b.bytesIn > s.a2b.bytesOut, 'bytes held on n1->n2');
  t.same(got.get('n2')!.map((m) => m.term), [1], 'nothing new delivered to n2');

  net.heal();
  await waitFor(() => got.get('n2')!.some((m) => m.term === 2), { what: 'the held message after heal' });
  t.same(got.get('n2')!.map((m) => m.term), [1, 2]);
  n2.send([hb('n2', 'n1', 3)]);
  await waitFor(() => got.get('n1')!.some((m) => m.term === 3), { what: 'the other way after heal' });
  t.equal(link12.stats().connectionsAccepted, 1, 'the same gRPC connection carried on');
});

t.test('gRPC transport, one way: n1 cannot reach n2 while n2 still reaches n1', async (t) => {
  const { net, n1, n2, got } = await grpcPair(t);
  net.oneWay('n1', 'n2');
  await sendPastProxy(n1, net.link('n1', 'n2'), hb('n1', 'n2', 1));
  n2.send([hb('n2', 'n1', 1)]);
  await waitFor(() => got.get('n1')!.length === 1, { what: 'n2 reaches n1' });
  t.same(got.get('n2'), [], 'n1 does not reach n2');
  net.heal();
  await waitFor(() => got.get('n2')!.length === 1, { what: 'the held message after heal' });
});
