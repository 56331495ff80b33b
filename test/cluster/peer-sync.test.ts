// Which transport peers a node keeps from its applied copy of the metadata
// (`src/cluster/peer-sync.ts`): a node recorded as left is dropped, unless its link is up or it
// leads; the others are dialled at their address.
import fc from 'fast-check';
import t from 'tap';
import { peerChanges } from '../../src/cluster/peer-sync.js';
import { fcParams } from '../support/fc.js';

// `linked` absent: every peer has a link.
const view = (o: { leader?: string | null; connected?: string[]; heard?: string[]; linked?: string[] } = {}) => ({
  self: 'n1',
  leader: o.leader ?? null,
  connected: (p: string) => (o.connected ?? []).includes(p),
  hasLink: (p: string) => o.linked === undefined || o.linked.includes(p),
  heard: (p: string) => (o.heard ?? []).includes(p),
  address: (p: string, advertised: string) => (p === 'n4' ? 'proxy:4' : advertised),
});

t.test('left peers go, unless their link is up or they lead; the others are dialled', (t) => {
  const nodes = [
    { name: 'n1', status: 'up', grpc: 'a:1' },
    { name: 'n2', status: 'left', grpc: 'a:2' },
    { name: 'n3', status: 'left', grpc: 'a:3' },
    { name: 'n4', status: 'down', grpc: 'a:4' },
    { name: 'n5', status: 'left', grpc: 'a:5' },
  ];
  t.same(peerChanges(nodes, view({ leader: 'n5', connected: ['n3'] })), { set: [['n4', 'proxy:4']], remove: ['n2'], heardLeft: [], missing: [] });
  t.same(peerChanges(nodes, view()), { set: [['n4', 'proxy:4']], remove: ['n2', 'n3', 'n5'], heardLeft: [], missing: [] }, 'a copy that knows no leader and no live link drops every left peer');
  // Chaos seed 184: n1's old `left`, replayed while cut off from n1 and another node led.
  t.same(
    peerChanges(nodes, view({ heard: ['n2', 'n4'] })),
    { set: [['n4', 'proxy:4']], remove: ['n3', 'n5'], heardLeft: [['n2', 'a:2']], missing: [] },
    'a left peer that is talking to this node is kept, with its address for a link dropped before',
  );
  t.same(
    peerChanges(nodes, view({ linked: ['n2', 'n3', 'n5'] })),
    { set: [['n4', 'proxy:4']], remove: ['n2', 'n3', 'n5'], heardLeft: [], missing: [['n4', 'proxy:4']] },
    'a member (down, not left) with no link at all is missing: every round dials it, at its dial address',
  );
  t.end();
});

t.test('property: never drops the leader, a live link, a peer heard lately or a node not recorded as left; keeps exactly the heard left ones; finds exactly the members without a link; never touches itself', (t) => {
  const names = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.record({ name: fc.constantFrom(...names), status: fc.constantFrom('up', 'suspect', 'down', 'leaving', 'left'), grpc: fc.constant('x') }), { selector: (n) => n.name }),
      fc.option(fc.constantFrom(...names), { nil: null }),
      fc.subarray(names),
      fc.subarray(names),
      fc.subarray(names),
      (nodes, leader, connected, heard, linked) => {
        const { set, remove, heardLeft, missing } = peerChanges(nodes, view({ leader, connected, heard, linked }));
        for (const p of remove) {
          const n = nodes.find((x) => x.name === p)!;
          if (n.status !== 'left' || p === leader || connected.includes(p) || heard.includes(p) || p === 'n1') return false;
        }
        const heardLeftWanted = nodes.filter((n) => n.name !== 'n1' && n.status === 'left' && heard.includes(n.name)).map((n) => n.name);
        if (JSON.stringify(heardLeft.map(([p]) => p)) !== JSON.stringify(heardLeftWanted)) return false;
        const missingWanted = nodes.filter((n) => n.name !== 'n1' && n.status !== 'left' && !linked.includes(n.name)).map((n) => n.name);
        if (JSON.stringify(missing.map(([p]) => p)) !== JSON.stringify(missingWanted)) return false;
        const touched = [...set.map(([p]) => p), ...remove, ...heardLeft.map(([p]) => p), ...missing.map(([p]) => p)];
        return !touched.includes('n1') && nodes.filter((n) => n.name !== 'n1' && n.status !== 'left').every((n) => set.some(([p]) => p === n.name));
      },
    ),
    fcParams(),
  );
  t.end();
});
