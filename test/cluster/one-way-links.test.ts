import fc from 'fast-check';
import t from 'tap';
import { describeOneWay, dialReason, oneWayPeers } from '../../src/cluster/one-way-links.js';

t.test('a peer is reported iff it was heard lately and this node has failed to dial it long enough', async (t) => {
  const peer = fc.record({
    name: fc.constantFrom('n1', 'n2', 'n3', 'n4'),
    heardAgoMs: fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined }),
    failingForMs: fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined }),
  });
  fc.assert(
    fc.property(fc.array(peer, { maxLength: 6 }), fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 10_000 }), (peers, heardWithinMs, reportAfterMs) => {
      const nowMs = 1_000_000;
      const views = peers.map((p) => ({
        name: p.name,
        heardMs: p.heardAgoMs === undefined ? undefined : nowMs - p.heardAgoMs,
        failure: p.failingForMs === undefined ? undefined : { address: `127.0.0.1:1`, why: 'refused', sinceMs: nowMs - p.failingForMs },
      }));
      const found = oneWayPeers(views, { nowMs, heardWithinMs, reportAfterMs });
      const expected = peers.filter((p) => p.heardAgoMs !== undefined && p.heardAgoMs < heardWithinMs && p.failingForMs !== undefined && p.failingForMs >= reportAfterMs);
      t.same(
        found.map((f) => [f.name, f.forMs]),
        expected.map((p) => [p.name, p.failingForMs]),
      );
    }),
  );
});

t.test("the socket's reason is dug out of grpc-js's wrapping; other reasons stay as they are", async (t) => {
  t.equal(dialReason('14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:19999. Resolution note: '), 'connect ECONNREFUSED 127.0.0.1:19999');
  t.equal(dialReason('handshake timeout'), 'handshake timeout');
  t.equal(dialReason('peer failed the cookie challenge: RELEASE_COOKIE differs'), 'peer failed the cookie challenge: RELEASE_COOKIE differs');
  const bare = '14 UNAVAILABLE: No connection established. Last error: null. Resolution note: ';
  t.equal(dialReason(bare), bare);
  t.equal(
    describeOneWay({ name: 'n4', address: '10.0.0.9:9000', why: 'handshake timeout', forMs: 12_400 }),
    "node n4 reaches this node, but this node has not reached n4 at 10.0.0.9:9000 (the gRPC address it advertises) for 12 s: handshake timeout; check n4's SERVICE_GRPC_ADVERTISE",
  );
});
