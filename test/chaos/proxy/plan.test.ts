// The network plan: nemesis descriptions → per-link faults, checked against what each
// nemesis promises about who reaches whom.
import t from 'tap';
import fc from 'fast-check';
import { type Nemesis, PASS, linkKey, orderedPairs, planNetwork, reaches } from '../../../chaos/proxy/plan.js';
import { fcParams } from '../../support/fc.js';

const arbNodes = fc.integer({ min: 2, max: 7 }).map((n) => Array.from({ length: n }, (_, i) => `n${i + 1}`));
/** Nodes and a side index for each (sides may be empty or cover everyone). */
const arbSides = arbNodes.chain((nodes) =>
  fc.array(fc.integer({ min: 0, max: 3 }), { minLength: nodes.length, maxLength: nodes.length }).map((side) => ({ nodes, side })),
);
const arbNemesis = (nodes: string[]): fc.Arbitrary<Nemesis> => {
  const node = fc.constantFrom(...nodes);
  const subset = fc.subarray(nodes);
  return fc.oneof(
    fc.constant<Nemesis>({ kind: 'heal' }),
    fc.array(subset, { maxLength: 3 }).map((sides): Nemesis => ({ kind: 'partition', sides })),
    node.map((n): Nemesis => ({ kind: 'isolate', node: n })),
    fc.option(subset, { nil: undefined }).map((m): Nemesis => (m === undefined ? { kind: 'majority-minority' } : { kind: 'majority-minority', minority: m })),
    fc.tuple(subset, subset, node).map(([a, b, hub]): Nemesis => ({ kind: 'bridge', a, b, hub })),
    fc.tuple(node, node).filter(([a, b]) => a !== b).map(([from, to]): Nemesis => ({ kind: 'one-way', from, to })),
    fc.tuple(fc.nat(500), fc.nat(100)).map(([ms, jitterMs]): Nemesis => ({ kind: 'delay', ms, jitterMs })),
    fc.integer({ min: 1, max: 1e6 }).map((bytesPerSecond): Nemesis => ({ kind: 'throttle', bytesPerSecond })),
  );
};
const arbScenario = arbNodes.chain((nodes) => fc.array(arbNemesis(nodes), { maxLength: 4 }).map((nemeses) => ({ nodes, nemeses })));

t.test('a partition blocks a link both ways iff its endpoints are on different sides', (t) => {
  fc.assert(
    fc.property(arbSides, ({ nodes, side }) => {
      const sides = [0, 1, 2, 3].map((s) => nodes.filter((_, i) => side[i] === s));
      const plan = planNetwork(nodes, [{ kind: 'partition', sides }]);
      for (const [x, y] of orderedPairs(nodes)) {
        const apart = side[nodes.indexOf(x)] !== side[nodes.indexOf(y)];
        const l = plan.get(linkKey(x, y))!;
        if (l.a2b.blackhole !== apart || l.b2a.blackhole !== apart || reaches(plan, x, y) === apart) return false;
      }
      return true;
    }),
    fcParams(),
  );
  t.end();
});

t.test('nodes named in no side form one more side together', (t) => {
  const plan = planNetwork(['n1', 'n2', 'n3', 'n4'], [{ kind: 'partition', sides: [['n1']] }]);
  t.ok(reaches(plan, 'n2', 'n3') && reaches(plan, 'n3', 'n4'));
  t.notOk(reaches(plan, 'n1', 'n2') || reaches(plan, 'n4', 'n1'));
  t.end();
});

t.test('isolate cuts one node from every other, both ways, and nothing else', (t) => {
  fc.assert(
    fc.property(arbNodes.chain((nodes) => fc.constantFrom(...nodes).map((node) => ({ nodes, node }))), ({ nodes, node }) => {
      const plan = planNetwork(nodes, [{ kind: 'isolate', node }]);
      return orderedPairs(nodes).every(([x, y]) => reaches(plan, x, y) === (x !== node && y !== node));
    }),
    fcParams(),
  );
  t.end();
});

t.test('majority-minority by default leaves a strict majority connected and cut from the rest', (t) => {
  fc.assert(
    fc.property(arbNodes, (nodes) => {
      const plan = planNetwork(nodes, [{ kind: 'majority-minority' }]);
      const big = nodes.filter((x) => nodes.filter((y) => y !== x && reaches(plan, x, y)).length >= Math.floor(nodes.length / 2));
      if (big.length <= nodes.length / 2) return false;
      // the majority is a clique and reaches nobody outside it
      return orderedPairs(nodes).every(([x, y]) => reaches(plan, x, y) === (big.includes(x) === big.includes(y)));
    }),
    fcParams(),
  );
  t.end();
});

t.test('bridge: the hub reaches and is reached by everyone; the two halves do not reach each other', (t) => {
  const arb = arbNodes
    .filter((n) => n.length >= 3)
    .chain((nodes) => fc.tuple(fc.constant(nodes), fc.constantFrom(...nodes), fc.array(fc.boolean(), { minLength: nodes.length, maxLength: nodes.length })));
  fc.assert(
    fc.property(arb, ([nodes, hub, inA]) => {
      const rest = nodes.filter((x) => x !== hub);
      const a = rest.filter((x) => inA[nodes.indexOf(x)]);
      const b = rest.filter((x) => !inA[nodes.indexOf(x)]);
      const plan = planNetwork(nodes, [{ kind: 'bridge', a, b, hub }]);
      for (const x of rest) if (!reaches(plan, hub, x) || !reaches(plan, x, hub)) return false;
      for (const x of a) for (const y of b) if (reaches(plan, x, y) || reaches(plan, y, x)) return false;
      return orderedPairs(rest).every(([x, y]) => reaches(plan, x, y) === (a.includes(x) === a.includes(y)));
    }),
    fcParams(),
  );
  t.end();
});

t.test('one-way holds exactly the bytes from `from` to `to`', (t) => {
  const plan = planNetwork(['n1', 'n2', 'n3'], [{ kind: 'one-way', from: 'n1', to: 'n2' }]);
  t.notOk(reaches(plan, 'n1', 'n2'));
  t.ok(reaches(plan, 'n2', 'n1'));
  t.ok(plan.get(linkKey('n1', 'n2'))!.a2b.blackhole, 'n1 dials n2: its requests are held');
  t.notOk(plan.get(linkKey('n1', 'n2'))!.b2a.blackhole, 'n2 answers on n1->n2 still arrive');
  t.ok(plan.get(linkKey('n2', 'n1'))!.b2a.blackhole, 'n2 dials n1: the answers n1 writes are held');
  t.equal([...plan.values()].filter((l) => l.a2b.blackhole || l.b2a.blackhole).length, 2);
  t.end();
});

t.test('delay and throttle apply to every link in both directions', (t) => {
  const nodes = ['n1', 'n2', 'n3'];
  const plan = planNetwork(nodes, [{ kind: 'delay', ms: 50, jitterMs: 10 }, { kind: 'throttle', bytesPerSecond: 1000 }]);
  for (const l of plan.values()) for (const d of [l.a2b, l.b2a]) t.same(d, { blackhole: false, delayMs: 50, jitterMs: 10, bytesPerSecond: 1000 });
  t.end();
});

t.test('heal, or nothing, leaves every link passing', (t) => {
  fc.assert(
    fc.property(arbNodes, fc.boolean(), (nodes, withHeal) => {
      const plan = planNetwork(nodes, withHeal ? [{ kind: 'heal' }] : []);
      return plan.size === nodes.length * (nodes.length - 1) && [...plan.values()].every((l) => l.a2b === PASS && l.b2a === PASS);
    }),
    fcParams(),
  );
  t.end();
});

t.test('the plan is a function of the node list and the descriptions only', (t) => {
  fc.assert(
    fc.property(arbScenario, ({ nodes, nemeses }) => {
      const copy = structuredClone(nemeses);
      const a = planNetwork(nodes, nemeses);
      const b = planNetwork([...nodes], copy);
      // same answer from an equal copy, and the descriptions are left as they were
      return JSON.stringify([...a]) === JSON.stringify([...b]) && JSON.stringify(copy) === JSON.stringify(nemeses);
    }),
    fcParams(),
  );
  t.end();
});

t.test('combining nemeses: a link is blocked iff some nemesis alone blocks it', (t) => {
  fc.assert(
    fc.property(arbScenario, ({ nodes, nemeses }) => {
      const all = planNetwork(nodes, nemeses);
      const alone = nemeses.map((n) => planNetwork(nodes, [n]));
      return orderedPairs(nodes).every(([x, y]) => reaches(all, x, y) === alone.every((p) => reaches(p, x, y)));
    }),
    fcParams(),
  );
  t.end();
});

t.test('a nemesis naming an unknown node is refused', (t) => {
  t.throws(() => planNetwork(['n1', 'n2'], [{ kind: 'isolate', node: 'n9' }]), /n9/);
  t.throws(() => planNetwork(['n1', 'n2'], [{ kind: 'one-way', from: 'n1', to: 'n1' }]), /two nodes/);
  t.end();
});
