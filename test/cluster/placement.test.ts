// Placement by property: distinct nodes per shard, the most zones a shard can span, balanced
// load, deterministic, and a clear refusal when too few nodes are up.
import fc from 'fast-check';
import t from 'tap';
import { FirkinError } from '../../src/core/errors.js';
import { type PlacementNode, placeShards, placementCandidates, replaceReplica } from '../../src/cluster/placement.js';
import { EMPTY_META, NODE_STATUSES, type NodeRecord } from '../../src/cluster/meta-state.js';
import { fcParams } from '../support/fc.js';

const nodesArb = fc
  .uniqueArray(fc.record({ name: fc.stringMatching(/^n[0-9]{1,2}$/), zone: fc.constantFrom('z1', 'z2', 'z3') }), { minLength: 1, maxLength: 9, selector: (n) => n.name })
  .map((ns) => ns.map((n) => ({ ...n, replicas: 0 })));

t.test('every shard on distinct nodes, over as many zones as it can, with balanced load', (t) => {
  fc.assert(
    fc.property(nodesArb, fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 5 }), (nodes, numShards, rf) => {
      if (rf > nodes.length) {
        try {
          placeShards(numShards, rf, nodes);
          return false;
        } catch (err) {
          return err instanceof FirkinError && err.code === 'unavailable';
        }
      }
      const shards = placeShards(numShards, rf, nodes);
      const zoneOf = new Map(nodes.map((n) => [n.name, n.zone]));
      const zones = new Set(nodes.map((n) => n.zone)).size;
      for (const replicas of shards) {
        if (replicas.length !== rf || new Set(replicas).size !== rf) return false;
        if (new Set(replicas.map((r) => zoneOf.get(r))).size !== Math.min(rf, zones)) return false;
      }
      // Within one zone layout nobody takes a second replica while a peer in a zone as
      // useful has fewer: with a single zone the spread is at most one.
      if (zones === 1) {
        const counts = nodes.map((n) => shards.flat().filter((r) => r === n.name).length);
        if (Math.max(...counts) - Math.min(...counts) > 1) return false;
      }
      return JSON.stringify(placeShards(numShards, rf, [...nodes].reverse())) === JSON.stringify(shards);
    }),
    fcParams(500),
  );
  t.end();
});

t.test('existing load steers new shards to the emptier nodes', (t) => {
  const nodes: PlacementNode[] = [
    { name: 'a', zone: 'z', replicas: 10 },
    { name: 'b', zone: 'z', replicas: 0 },
    { name: 'c', zone: 'z', replicas: 0 },
  ];
  t.same(placeShards(1, 2, nodes), [['b', 'c']]);
  t.throws(() => placeShards(1, 4, nodes), /replication_factor 4 needs 4 live nodes; 3 are up or suspect/);
  t.throws(() => placeShards(0, 1, nodes), /num_shards/);
  t.end();
});

t.test('a replacement replica avoids the shard’s nodes and prefers a new zone', (t) => {
  const nodes: PlacementNode[] = [
    { name: 'a', zone: 'z1', replicas: 1 },
    { name: 'b', zone: 'z2', replicas: 1 },
    { name: 'c', zone: 'z1', replicas: 0 },
    { name: 'd', zone: 'z3', replicas: 5 },
  ];
  t.equal(replaceReplica(['a', 'b'], 'b', nodes), 'd', 'z3 is a zone the shard lacks once b goes');
  t.equal(replaceReplica(['a', 'b'], 'a', nodes), 'c', 'once a goes, z1 and z3 are both new to the shard: the node with fewer replicas wins');
  t.throws(() => replaceReplica(['a', 'b', 'c', 'd'], 'a', nodes), FirkinError);
  t.end();
});

t.test('candidates: the up nodes when there are enough, the suspect ones too when not, never down or leaving; too few is a 400 when the cluster is too small, a 503 when nodes are away', (t) => {
  const statusesArb = fc.array(fc.constantFrom(...NODE_STATUSES), { minLength: 1, maxLength: 7 });
  fc.assert(
    fc.property(statusesArb, fc.integer({ min: 1, max: 5 }), (statuses, needed) => {
      const nodes: Record<string, NodeRecord> = {};
      statuses.forEach((status, i) => {
        nodes[`n${i}`] = { name: `n${i}`, incarnation: 'x', http: '', grpc: '', zone: 'z', status, joinedAtMs: 0, statusSinceMs: 0 };
      });
      const named = (wanted: readonly string[]) => statuses.flatMap((s, i) => (wanted.includes(s) ? [`n${i}`] : [])).sort();
      const up = named(['up']);
      const usable = up.length >= needed ? up : named(['up', 'suspect']);
      let outcome: string;
      try {
        outcome = JSON.stringify(placementCandidates({ ...EMPTY_META, nodes }, needed).map((n) => n.name).sort());
      } catch (err) {
        outcome = (err as FirkinError).code;
      }
      if (usable.length >= needed) return outcome === JSON.stringify(usable);
      return outcome === (named(['up', 'suspect', 'down']).length < needed ? 'bad_request' : 'unavailable');
    }),
    fcParams(),
  );
  t.end();
});

t.test('too few nodes for the replicas: the message says which case it is and what to do', (t) => {
  const node = (name: string, status: NodeRecord['status'], zone = 'z'): NodeRecord => ({ name, incarnation: 'x', http: '', grpc: '', zone, status, joinedAtMs: 0, statusSinceMs: 0 });
  const state = { ...EMPTY_META, nodes: { a: node('a', 'up'), b: node('b', 'up', 'y'), c: node('c', 'down'), d: node('d', 'leaving') } };
  t.throws(() => placementCandidates(state, 4), { code: 'bad_request', message: 'replication_factor 4 needs 4 nodes; the cluster has 3 (a, b, c): add nodes or ask for fewer replicas' }, 'a leaving node does not count');
  t.throws(() => placementCandidates(state, 3, [], 'replica_factor'), { code: 'unavailable', message: 'replica_factor 3 needs 3 live nodes; 2 are up or suspect (a, b), c is not: try again when they are back' });
  t.throws(() => placementCandidates(state, 2, ['y']), { code: 'bad_request', message: 'replication_factor 2 needs 2 nodes in zones y; the cluster has 1 (b): add nodes or ask for fewer replicas' }, 'only the zones’ members count');
  t.same(placementCandidates(state, 2).map((n) => n.name), ['a', 'b']);
  t.end();
});
