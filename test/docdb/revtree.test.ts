// Properties of the pure revision tree: merge is order-independent and idempotent, stemming
// keeps every leaf, and the winner matches a naive oracle of the CouchDB rule.
import fc from 'fast-check';
import t from 'tap';
import {
  type RevNode,
  type RevPath,
  type RevTree,
  conflicts,
  history,
  isLeaf,
  isRev,
  isRevHash,
  latestLeaves,
  leaves,
  mergePath,
  openRevsLatest,
  parseRev,
  revGen,
  revisions,
  revsDiff,
  revsInfo,
  stem,
  treeOfLeaves,
  winningRev,
} from '../../src/docdb/revtree.js';
import { fcParams } from '../support/fc.js';

/** A random "true" history: each node is a new root or a child of an earlier node. */
const arbHistory = fc
  .array(fc.record({ parent: fc.option(fc.nat(), { nil: undefined }), deleted: fc.boolean(), hash: fc.nat({ max: 15 }) }), { minLength: 1, maxLength: 25 })
  .map((specs) => {
    const nodes: RevNode[] = [];
    specs.forEach((spec, i) => {
      const parent = spec.parent === undefined || nodes.length === 0 ? undefined : nodes[spec.parent % nodes.length]!;
      const gen = parent === undefined ? 1 : revGen(parent.rev) + 1;
      // The hash mixes the index in, so revs are unique but their order is not the insertion order.
      const rev = `${gen}-${spec.hash.toString(16)}${i.toString(16).padStart(3, '0')}`;
      nodes.push({ rev, parent: parent?.rev, deleted: spec.deleted });
    });
    return nodes;
  });

function pathOf(nodes: readonly RevNode[], node: RevNode): RevPath {
  const byRev = new Map(nodes.map((n) => [n.rev, n]));
  const revs: string[] = [];
  for (let n: RevNode | undefined = node; n !== undefined; n = n.parent === undefined ? undefined : byRev.get(n.parent)) revs.push(n.rev);
  return { revs, deleted: node.deleted };
}

function build(paths: readonly RevPath[], limit?: number): RevTree {
  let tree: RevTree = [];
  for (const p of paths) {
    tree = mergePath(tree, p).tree;
    if (limit !== undefined) tree = stem(tree, limit);
  }
  return tree;
}

/** The CouchDB rule written the obvious way: sort all leaves, take the first. */
function naiveWinner(tree: RevTree): string | undefined {
  const ls = leaves(tree).sort((a, b) => {
    if (a.deleted !== b.deleted) return a.deleted ? 1 : -1;
    if (revGen(a.rev) !== revGen(b.rev)) return revGen(b.rev) - revGen(a.rev);
    return a.rev < b.rev ? 1 : a.rev > b.rev ? -1 : 0;
  });
  return ls[0]?.rev;
}

const arbCase = arbHistory.chain((nodes) =>
  fc.record({
    nodes: fc.constant(nodes),
    // Which nodes are sent (as a path from them to the root), in which order; leaves always.
    order: fc.shuffledSubarray(nodes.map((_, i) => i), { minLength: nodes.length, maxLength: nodes.length }),
    other: fc.shuffledSubarray(nodes.map((_, i) => i), { minLength: nodes.length, maxLength: nodes.length }),
  }),
);

t.test('merging the same revisions in any order gives the same tree, winner and conflicts', (t) => {
  fc.assert(
    fc.property(arbCase, ({ nodes, order, other }) => {
      const a = build(order.map((i) => pathOf(nodes, nodes[i]!)));
      const b = build(other.map((i) => pathOf(nodes, nodes[i]!)));
      t.same(a, b);
      return JSON.stringify(a) === JSON.stringify(b) && winningRev(a)?.rev === winningRev(b)?.rev && JSON.stringify(conflicts(a)) === JSON.stringify(conflicts(b));
    }),
    fcParams(300),
  );
  t.end();
});

t.test('merge is idempotent', (t) => {
  fc.assert(
    fc.property(arbCase, ({ nodes, order }) => {
      const paths = order.map((i) => pathOf(nodes, nodes[i]!));
      const once = build(paths);
      const twice = build([...paths, ...paths]);
      return JSON.stringify(once) === JSON.stringify(twice) && paths.every((p) => mergePath(once, p).added === false);
    }),
    fcParams(300),
  );
  t.end();
});

t.test('the tree holds exactly the true history; the winner follows the CouchDB rule', (t) => {
  fc.assert(
    fc.property(arbCase, ({ nodes, order }) => {
      const tree = build(order.map((i) => pathOf(nodes, nodes[i]!)));
      const expected = [...nodes].map((n) => `${n.rev}<${n.parent ?? ''}>${n.deleted}`).sort();
      const got = tree.map((n) => `${n.rev}<${n.parent ?? ''}>${n.deleted}`).sort();
      return JSON.stringify(expected) === JSON.stringify(got) && winningRev(tree)?.rev === naiveWinner(tree);
    }),
    fcParams(300),
  );
  t.end();
});

t.test('stemming never drops a leaf and bounds every history', (t) => {
  fc.assert(
    fc.property(arbCase, fc.integer({ min: 1, max: 6 }), ({ nodes, order }, limit) => {
      const full = build(order.map((i) => pathOf(nodes, nodes[i]!)));
      const stemmed = stem(full, limit);
      const before = leaves(full).map((n) => n.rev).sort();
      const after = leaves(stemmed).map((n) => n.rev).sort();
      // Oracle: exactly the nodes within `limit` steps of some leaf survive.
      const within = new Set(before.flatMap((rev) => history(full, rev).slice(0, limit)));
      const bounded = stemmed.length === within.size && stemmed.every((n) => within.has(n.rev));
      // Stemming while building (as every write does) keeps every leaf too. (It may also
      // resurrect an old interior rev sent alone after its descendants were stemmed: as in
      // CouchDB, a stemmed tree cannot know that rev was an ancestor.)
      const incremental = new Set(leaves(build(order.map((i) => pathOf(nodes, nodes[i]!)), limit)).map((n) => n.rev));
      return JSON.stringify(before) === JSON.stringify(after) && bounded && before.every((rev) => incremental.has(rev)) && winningRev(stemmed)?.rev === winningRev(full)?.rev;
    }),
    fcParams(300),
  );
  t.end();
});

t.test('updating twice leaves no phantom conflict (the original re-rooted parents)', (t) => {
  let tree: RevTree = mergePath([], { revs: ['1-a'], deleted: false }).tree;
  tree = mergePath(tree, { revs: ['2-b', '1-a'], deleted: false }).tree;
  tree = mergePath(tree, { revs: ['3-c', '2-b'], deleted: false }).tree;
  tree = mergePath(tree, { revs: ['4-d', '3-c'], deleted: false }).tree;
  t.same(leaves(tree).map((n) => n.rev), ['4-d']);
  t.same(conflicts(tree), []);
  t.same(history(tree, '4-d'), ['4-d', '3-c', '2-b', '1-a']);
  t.same(revisions(tree, '4-d'), { start: 4, ids: ['d', 'c', 'b', 'a'] });
  t.end();
});

t.test('winner: live beats deleted, then generation, then rev string', (t) => {
  let tree: RevTree = mergePath([], { revs: ['2-b', '1-a'], deleted: false }).tree;
  tree = mergePath(tree, { revs: ['2-c', '1-a'], deleted: false }).tree;
  t.equal(winningRev(tree)!.rev, '2-c');
  t.same(conflicts(tree), ['2-b']);
  tree = mergePath(tree, { revs: ['3-d', '2-c'], deleted: true }).tree;
  t.equal(winningRev(tree)!.rev, '2-b', 'a deleted longer branch loses to a live one');
  t.same(conflicts(tree), []);
  t.ok(isLeaf(tree, '3-d'));
  tree = mergePath(tree, { revs: ['3-e', '2-b'], deleted: true }).tree;
  t.equal(winningRev(tree)!.rev, '3-e', 'all deleted: the greatest deleted leaf wins');
  t.ok(winningRev(tree)!.deleted);
  t.end();
});

t.test('a stemmed root regains its ancestry when a longer history arrives', (t) => {
  const full = { revs: ['4-d', '3-c', '2-b', '1-a'], deleted: false };
  const stemmed = stem(mergePath([], full).tree, 2);
  t.same(stemmed.map((n) => n.rev), ['3-c', '4-d']);
  t.equal(stemmed[0]!.parent, undefined);
  const again = mergePath(stemmed, full).tree;
  t.same(history(again, '4-d'), ['4-d', '3-c', '2-b', '1-a']);
  t.end();
});

t.test('revsDiff names missing revs and possible ancestors', (t) => {
  const tree = mergePath([], { revs: ['2-b', '1-a'], deleted: false }).tree;
  t.same(revsDiff(tree, ['2-b', '3-x', '1-a']), { missing: ['3-x'], possibleAncestors: ['2-b'] });
  t.same(revsDiff(tree, ['2-b']), { missing: [], possibleAncestors: [] });
  t.throws(() => mergePath(tree, { revs: ['3-x', '1-a'], deleted: false }), /invalid revision path/);
  t.end();
});

t.test('revision forms are read as the regex reads them', (t) => {
  const FORM = /^([1-9][0-9]{0,8})-([0-9a-z]{1,128})$/;
  const HASH = /^[0-9a-z]{1,128}$/;
  // Near misses are what matter: strings built from the characters the form is made of.
  const char = fc.constantFrom(...'0123456789-az_AZ\n\u00e9');
  const nearRev = fc.oneof(
    fc.string({ unit: char, maxLength: 14 }),
    fc.tuple(fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 11 }), fc.string({ unit: char, minLength: 0, maxLength: 3 }), fc.integer({ min: 0, max: 130 })).map(([gen, mid, n]) => `${gen}${mid}${'a'.repeat(n)}`),
    fc.string({ maxLength: 10 }),
  );
  fc.assert(
    fc.property(nearRev, (s) => {
      const m = FORM.exec(s);
      const parsed = parseRev(s);
      const hashPart = s.slice(s.indexOf('-') + 1);
      return (
        isRev(s) === (m !== null) &&
        JSON.stringify(parsed) === JSON.stringify(m === null ? undefined : { gen: Number(m[1]), hash: m[2] }) &&
        isRevHash(s) === HASH.test(s) &&
        isRevHash(hashPart) === HASH.test(hashPart)
      );
    }),
    fcParams(5000),
  );
  t.equal(isRev(42), false);
  t.equal(isRevHash(null), false);
  t.equal(isRev(`999999999-${'z'.repeat(128)}`), true);
  t.equal(isRev(`1000000000-a`), false);
  t.equal(isRev(`1-${'a'.repeat(129)}`), false);
  t.end();
});

t.test('latestLeaves: exactly the leaves descending from a rev, the winner rule\'s pick first', (t) => {
  fc.assert(
    fc.property(arbHistory, fc.nat(), (nodes, pick) => {
      const tree = build(nodes.map((n) => pathOf(nodes, n)));
      const rev = nodes[pick % nodes.length]!.rev;
      const got = latestLeaves(tree, rev);
      const descendants = leaves(tree).filter((leaf) => pathOf(nodes, leaf).revs.includes(rev));
      const subtreeWinner = naiveWinner(descendants);
      return (
        got.length === descendants.length &&
        descendants.every((leaf) => got.includes(leaf.rev)) &&
        got[0] === subtreeWinner &&
        (isLeaf(tree, rev) ? got.length === 1 && got[0] === rev : !got.includes(rev))
      );
    }),
    fcParams(),
  );
  t.same(latestLeaves([{ rev: '1-a', parent: undefined, deleted: false }], '1-b'), [], 'an unknown rev has no latest leaf');
  t.end();
});

t.test('revsInfo: the history of a rev with each body\'s status', (t) => {
  fc.assert(
    fc.property(arbHistory, fc.nat(), fc.func(fc.boolean()), (nodes, pick, kept) => {
      const tree = build(nodes.map((n) => pathOf(nodes, n)));
      const rev = nodes[pick % nodes.length]!.rev;
      const info = revsInfo(tree, rev, kept);
      const byRev = new Map(nodes.map((n) => [n.rev, n]));
      return (
        JSON.stringify(info.map((i) => i.rev)) === JSON.stringify(history(tree, rev)) &&
        info.every((i) => i.status === (!kept(i.rev) ? 'missing' : byRev.get(i.rev)!.deleted ? 'deleted' : 'available'))
      );
    }),
    fcParams(),
  );
  t.end();
});

t.test('openRevsLatest over the tree rebuilt from the leaves\' histories answers as over the stored tree', (t) => {
  fc.assert(
    fc.property(arbHistory, fc.array(fc.nat(), { maxLength: 4 }), fc.boolean(), (nodes, picks, unknown) => {
      const tree = build(nodes.map((n) => pathOf(nodes, n)));
      const wanted = picks.map((p) => nodes[p % nodes.length]!.rev).concat(unknown ? ['99-ab'] : []);
      // What a VDB reads: each leaf with `revs=true`.
      const rebuilt = treeOfLeaves(leaves(tree).map((leaf) => ({ revisions: revisions(tree, leaf.rev), deleted: leaf.deleted })));
      const got = openRevsLatest(rebuilt, wanted);
      const expected = [...new Set(wanted.flatMap((r) => (nodes.some((n) => n.rev === r) ? latestLeaves(tree, r) : [r])))];
      return JSON.stringify(got) === JSON.stringify(expected) && JSON.stringify(openRevsLatest(tree, wanted)) === JSON.stringify(expected);
    }),
    fcParams(),
  );
  t.end();
});
