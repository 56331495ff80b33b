// Leader balancing, pure: every transfer it plans is one Raft can make at once and narrows the
// gap it was made for; and driven as the nodes drive it (each leader one transfer a round,
// from the counts of the round before), it settles with every group led by a node that no
// caught-up voter of the group trails by two or more.
import t from 'tap';
import fc from 'fast-check';
import { type LedGroup, planLeaderTransfer } from '../../src/cluster/leader-balance.js';
import { fcParams } from '../support/fc.js';

const nodeName = (i: number) => `n${i + 1}`;

interface World {
  nodes: string[];
  groups: { group: string; voters: string[] }[];
  leader: Map<string, string>;
}

const worldArb = fc
  .record({ nodeCount: fc.integer({ min: 1, max: 6 }), groupCount: fc.integer({ min: 0, max: 30 }), rf: fc.integer({ min: 1, max: 5 }), seed: fc.integer() })
  .chain(({ nodeCount, groupCount, rf }) =>
    fc.tuple(
      fc.constant(nodeCount),
      fc.array(fc.tuple(fc.shuffledSubarray(Array.from({ length: nodeCount }, (_, i) => nodeName(i)), { minLength: Math.min(rf, nodeCount), maxLength: Math.min(rf, nodeCount) }), fc.nat()), { minLength: groupCount, maxLength: groupCount }),
    ),
  )
  .map(([nodeCount, gs]): World => {
    const groups = gs.map(([voters], i) => ({ group: `g${String(i).padStart(2, '0')}`, voters: [...voters].sort() }));
    const leader = new Map(gs.map(([voters, pick], i) => [groups[i]!.group, voters[pick % voters.length]!]));
    return { nodes: Array.from({ length: nodeCount }, (_, i) => nodeName(i)), groups, leader };
  });

function counts(w: World): Map<string, number> {
  const c = new Map(w.nodes.map((n) => [n, 0]));
  for (const l of w.leader.values()) c.set(l, c.get(l)! + 1);
  return c;
}

function ledBy(w: World, node: string): LedGroup[] {
  return w.groups.filter((g) => w.leader.get(g.group) === node).map((g) => ({ group: g.group, voters: g.voters, caughtUp: new Set(g.voters) }));
}

t.test('a planned transfer goes to a caught-up, eligible, heard voter leading two fewer', async (t) => {
  const prop = fc.property(
    fc.array(fc.record({ voters: fc.uniqueArray(fc.constantFrom('n1', 'n2', 'n3', 'n4', 'n5'), { minLength: 1, maxLength: 5 }), caughtUp: fc.uniqueArray(fc.constantFrom('n1', 'n2', 'n3', 'n4', 'n5')) }), { maxLength: 8 }),
    fc.integer({ min: 0, max: 12 }),
    fc.dictionary(fc.constantFrom('n2', 'n3', 'n4', 'n5'), fc.integer({ min: 0, max: 12 })),
    fc.uniqueArray(fc.constantFrom('n2', 'n3', 'n4', 'n5')),
    (raw, extra, heard, ineligible) => {
      const movable: LedGroup[] = raw.map((g, i) => ({ group: `g${i}`, voters: ['n1', ...g.voters.filter((v) => v !== 'n1')], caughtUp: new Set(g.caughtUp) }));
      const leads = movable.length + extra;
      const peerLeads = new Map(Object.entries(heard));
      const eligible = (n: string) => !(ineligible as string[]).includes(n);
      const plan = planLeaderTransfer({ me: 'n1', leads, movable, peerLeads, eligible });
      const allowed = (g: LedGroup, to: string) => to !== 'n1' && g.caughtUp.has(to) && eligible(to) && peerLeads.has(to) && leads - peerLeads.get(to)! >= 2;
      if (plan === undefined) return movable.every((g) => g.voters.every((v) => !allowed(g, v)));
      const g = movable.find((m) => m.group === plan.group);
      if (g === undefined || !g.voters.includes(plan.to) || !allowed(g, plan.to)) return false;
      // The least loaded target of all those allowed.
      return movable.every((m) => m.voters.every((v) => !allowed(m, v) || peerLeads.get(v)! >= peerLeads.get(plan.to)!));
    },
  );
  fc.assert(prop, fcParams(500));
  t.pass('every plan checked');
});

t.test('driven round by round from last round\'s counts, the leaders settle', async (t) => {
  const prop = fc.property(worldArb, fc.infiniteStream(fc.nat()), (w, orders) => {
    for (let round = 0; round < 200; round++) {
      // Every node decides from the counts heard at the start of the round (its own exact).
      const heard = counts(w);
      const order = [...w.nodes];
      const shift = orders.next().value % Math.max(1, order.length);
      const transfers: { group: string; to: string }[] = [];
      for (const me of [...order.slice(shift), ...order.slice(0, shift)]) {
        const plan = planLeaderTransfer({ me, leads: heard.get(me)!, movable: ledBy(w, me), peerLeads: new Map([...heard].filter(([n]) => n !== me)), eligible: () => true });
        if (plan !== undefined) transfers.push(plan);
      }
      if (transfers.length === 0) {
        // Settled: no caught-up voter trails the leader of its group by two or more.
        const c = counts(w);
        for (const g of w.groups) {
          const l = w.leader.get(g.group)!;
          if (g.voters.some((v) => c.get(v)! <= c.get(l)! - 2)) return false;
        }
        // Where every node votes in every group, the counts differ by at most one.
        if (w.groups.length > 0 && w.groups.every((g) => g.voters.length === w.nodes.length)) {
          const all = [...c.values()];
          if (Math.max(...all) - Math.min(...all) > 1) return false;
        }
        return true;
      }
      for (const tr of transfers) w.leader.set(tr.group, tr.to);
    }
    return false; // never settled
  });
  fc.assert(prop, fcParams(300));
  t.pass('settled every time');
});

t.test('examples', async (t) => {
  const g = (group: string, voters: string[], caughtUp = voters): LedGroup => ({ group, voters, caughtUp: new Set(caughtUp) });
  const all = () => true;
  t.same(planLeaderTransfer({ me: 'n1', leads: 4, movable: [g('a', ['n1', 'n2', 'n3']), g('b', ['n1', 'n2', 'n3'])], peerLeads: new Map([['n2', 1], ['n3', 0]]), eligible: all }), { group: 'a', to: 'n3', why: 'n1 leads 4 shard groups, n3 leads 0' }, 'the least loaded voter takes the first group');
  t.equal(planLeaderTransfer({ me: 'n1', leads: 2, movable: [g('a', ['n1', 'n2'])], peerLeads: new Map([['n2', 1]]), eligible: all }), undefined, 'a gap of one stays');
  t.equal(planLeaderTransfer({ me: 'n1', leads: 3, movable: [g('a', ['n1', 'n2'], ['n1'])], peerLeads: new Map([['n2', 0]]), eligible: all }), undefined, 'a voter behind the log is no target');
  t.equal(planLeaderTransfer({ me: 'n1', leads: 3, movable: [g('a', ['n1', 'n2'])], peerLeads: new Map(), eligible: all }), undefined, 'a voter not heard from (or of a build before the counts) is no target');
  t.equal(planLeaderTransfer({ me: 'n1', leads: 3, movable: [g('a', ['n1', 'n2'])], peerLeads: new Map([['n2', 0]]), eligible: () => false }), undefined, 'a voter down or leaving is no target');
  t.equal(planLeaderTransfer({ me: 'n1', leads: 3, movable: [], peerLeads: new Map([['n2', 0]]), eligible: all }), undefined, 'groups under a membership step stay');
});
