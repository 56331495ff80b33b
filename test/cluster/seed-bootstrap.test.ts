// The all-seeded start: at most one node of nodes that may see each other's answers starts a
// cluster, only the lowest address of a list they all share, and only once every seed answered.
import fc from 'fast-check';
import t from 'tap';
import { type SeedAnswer, normaliseSeeds, seedAnswerOf, shouldBootstrapFromSeeds } from '../../src/cluster/seed-bootstrap.js';
import { fcParams } from '../support/fc.js';

const addr = (i: number) => `10.0.0.${i}:9081`;

t.test('three nodes with one list: the lowest starts once it heard both others; nobody else ever does', (t) => {
  const seeds = [addr(3), addr(1), addr(2)];
  const joining: SeedAnswer = { kind: 'joining', seeds: normaliseSeeds(seeds) };
  const answers = (self: number, heard: Record<number, SeedAnswer>) => new Map<string, SeedAnswer>([[addr(self), { kind: 'self' }], ...Object.entries(heard).map(([i, a]) => [addr(Number(i)), a] as [string, SeedAnswer])]);
  t.ok(shouldBootstrapFromSeeds(seeds, answers(1, { 2: joining, 3: joining })));
  t.notOk(shouldBootstrapFromSeeds(seeds, answers(1, { 2: joining })), 'a seed not heard from yet');
  t.notOk(shouldBootstrapFromSeeds(seeds, answers(1, { 2: joining, 3: { kind: 'other' } })), 'a seed that is down, or a member');
  t.notOk(shouldBootstrapFromSeeds(seeds, answers(1, { 2: joining, 3: { kind: 'joining', seeds: normaliseSeeds([addr(1), addr(3)]) } })), 'a seed with another list');
  t.notOk(shouldBootstrapFromSeeds(seeds, answers(2, { 1: joining, 3: joining })), 'not the lowest');
  t.notOk(shouldBootstrapFromSeeds(seeds, answers(3, { 1: joining, 2: joining })), 'not the lowest');
  t.notOk(shouldBootstrapFromSeeds([addr(1)], answers(1, {})), 'a list of itself alone');
  t.notOk(shouldBootstrapFromSeeds(seeds, new Map([[addr(2), joining], [addr(3), joining]])), 'its own address not found among them');
  t.same(normaliseSeeds([' b:1', 'a:1', '', 'b:1']), ['a:1', 'b:1']);
  t.end();
});

t.test('property: whatever each node heard and whichever lists they were given, no two nodes that name each other start a cluster', (t) => {
  // Up to 5 nodes, each with a list drawn from the addresses (itself always in it, as a
  // StatefulSet's identical lists are, or not). Each node's view: for every seed, the answer
  // it last had: the seed's true state (joining with that node's own list) or `other`, or none.
  const arb = fc.integer({ min: 2, max: 5 }).chain((n) =>
    fc.record({
      n: fc.constant(n),
      lists: fc.array(fc.subarray(Array.from({ length: n }, (_, i) => i), { minLength: 1 }), { minLength: n, maxLength: n }),
      heard: fc.array(fc.array(fc.constantFrom('true', 'other', 'none'), { minLength: n, maxLength: n }), { minLength: n, maxLength: n }),
      sameList: fc.boolean(),
    }),
  );
  fc.assert(
    fc.property(arb, ({ n, lists, heard, sameList }) => {
      const listOf = (i: number) => (sameList ? Array.from({ length: n }, (_, j) => addr(j)) : [...new Set([i, ...lists[i]!])].map(addr));
      const starts: number[] = [];
      for (let i = 0; i < n; i++) {
        const answers = new Map<string, SeedAnswer>();
        for (const s of listOf(i)) {
          const j = Number(s.split('.')[3]!.split(':')[0]);
          if (j === i) answers.set(s, { kind: 'self' });
          else if (heard[i]![j] === 'true') answers.set(s, { kind: 'joining', seeds: normaliseSeeds(listOf(j)) });
          else if (heard[i]![j] === 'other') answers.set(s, { kind: 'other' });
        }
        if (shouldBootstrapFromSeeds(listOf(i), answers)) starts.push(i);
      }
      // Two starters that name each other, or share a seed, would be two clusters of one set.
      for (const a of starts) {
        for (const b of starts) {
          if (a === b) continue;
          const shared = listOf(a).some((s) => listOf(b).includes(s));
          if (shared) return false;
        }
      }
      // With one list, only node 0 (the lowest address) may start, and only having heard all.
      if (sameList) return starts.every((i) => i === 0 && heard[0]!.every((h, j) => j === 0 || h === 'true'));
      return true;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a seed answer from the details that crossed the link', (t) => {
  t.same(seedAnswerOf({ self: true }), { kind: 'self' });
  t.same(seedAnswerOf({ joining: true, seeds: ['a:1', 'b:1'] }), { kind: 'joining', seeds: ['a:1', 'b:1'] });
  t.same(seedAnswerOf({ joining: true, seeds: ['a:1', 2] }), { kind: 'other' }, 'a malformed list counts for nothing');
  t.same(seedAnswerOf({ joining: true }), { kind: 'other' });
  t.same(seedAnswerOf(undefined), { kind: 'other' });
  t.end();
});
