// Whom a node out of the metadata group asks whether it has left: the leader it knew first,
// then everyone else in turn, so a leader that left or died since cannot keep it asking forever.
import fc from 'fast-check';
import t from 'tap';
import { leftProbeTarget } from '../../src/cluster/left-probe.js';
import { fcParams } from '../support/fc.js';

t.test('examples', (t) => {
  const members = ['n1', 'n2', 'n3', 'n5'];
  t.same([0, 1, 2, 3, 4].map((p) => leftProbeTarget('n2', 'n5', members, p)), ['n2', 'n1', 'n3', 'n2', 'n1'], 'the known leader, then the others, in turn');
  t.same([0, 1, 2].map((p) => leftProbeTarget(null, 'n5', members, p)), ['n1', 'n2', 'n3'], 'no leader known: the others in turn');
  t.equal(leftProbeTarget('n5', 'n5', members, 0), 'n1', 'never itself');
  t.equal(leftProbeTarget(null, 'n1', ['n1'], 3), undefined, 'nobody to ask');
  t.end();
});

t.test('property: the known leader is asked first, never the node itself, and every other member within one round', (t) => {
  const name = fc.constantFrom('n1', 'n2', 'n3', 'n4', 'n5', 'n6');
  fc.assert(
    fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 6 }), fc.option(name, { nil: null }), name, fc.nat(50), (members, leader, self, start) => {
      const everyone = new Set([...members, ...(leader === null ? [] : [leader])]);
      everyone.delete(self);
      if (leader !== null && leader !== self && leftProbeTarget(leader, self, members, 0) !== leader) return false;
      const asked = new Set(Array.from({ length: everyone.size }, (_, i) => leftProbeTarget(leader, self, members, start + i)));
      if (everyone.size === 0) return leftProbeTarget(leader, self, members, start) === undefined;
      return !asked.has(self) && asked.size === everyone.size && [...everyone].every((m) => asked.has(m));
    }),
    fcParams(),
  );
  t.end();
});
