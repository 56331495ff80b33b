// Revision trees, CouchDB style. Pure: no I/O, no clock, no randomness.
//
// A tree is the set of revisions known for one document, each with its parent (undefined
// for a root, or when the parent was stemmed away) and its deleted flag. It is kept as an
// array sorted by (generation, rev) so that two trees holding the same revisions are
// deep-equal whatever order they were built in.
//
//        1-a ── 2-b ── 3-c            leaves: 3-c, 2-d (deleted)
//           └── 2-d (deleted)         winner: 3-c; conflicts: none (deleted leaves never conflict)
//
// Merging is a union of edges, so it is commutative, associative and idempotent; stemming
// keeps, for every leaf, the leaf and its `limit - 1` nearest ancestors (never a leaf).

export interface RevNode {
  readonly rev: string;
  readonly parent: string | undefined;
  readonly deleted: boolean;
}

export type RevTree = readonly RevNode[];

/** A history path, newest first: `revs[0]` is the leaf, `revs[i + 1]` the parent of `revs[i]`. */
export interface RevPath {
  readonly revs: readonly string[];
  /** The deleted flag of the leaf `revs[0]`. */
  readonly deleted: boolean;
}

/**
 * `<generation>-<hash>`: the generation 1 to 999999999 without a leading zero, the hash 1 to
 * 128 characters of [0-9a-z] (the regex /^([1-9][0-9]{0,8})-([0-9a-z]{1,128})$/, read by hand:
 * every replicated revision and its history pass here). The dash's index, or -1.
 */
function revFormDash(rev: string): number {
  const first = rev.charCodeAt(0);
  if (!(first >= 0x31 && first <= 0x39)) return -1;
  let dash = 1;
  while (dash < rev.length && isDigit(rev.charCodeAt(dash))) dash++;
  if (dash > 9 || rev.charCodeAt(dash) !== 0x2d) return -1;
  return isRevHashFrom(rev, dash + 1) ? dash : -1;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** `s` from `from` to its end is 1 to 128 characters of [0-9a-z]. */
function isRevHashFrom(s: string, from: number): boolean {
  const length = s.length - from;
  if (length < 1 || length > 128) return false;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!(isDigit(c) || (c >= 0x61 && c <= 0x7a))) return false;
  }
  return true;
}

/** A revision's hash part (as in `_revisions.ids`): 1 to 128 characters of [0-9a-z]. */
export function isRevHash(value: unknown): value is string {
  return typeof value === 'string' && isRevHashFrom(value, 0);
}

export interface ParsedRev {
  readonly gen: number;
  readonly hash: string;
}

export function parseRev(rev: string): ParsedRev | undefined {
  const dash = revFormDash(rev);
  if (dash < 0) return undefined;
  return { gen: Number(rev.slice(0, dash)), hash: rev.slice(dash + 1) };
}

export function isRev(value: unknown): value is string {
  return typeof value === 'string' && revFormDash(value) > 0;
}

export function revGen(rev: string): number {
  // Hot path (every sort and merge): read the digits up to the dash without a regex.
  const dash = rev.indexOf('-');
  const gen = dash > 0 && dash < 10 ? Number(rev.slice(0, dash)) : NaN;
  if (!Number.isInteger(gen) || gen < 1) throw new Error(`malformed rev ${JSON.stringify(rev)}`);
  return gen;
}

/** Order of revisions of one document: generation, then the rev string. */
export function compareRevs(a: string, b: string): number {
  const ga = revGen(a);
  const gb = revGen(b);
  if (ga !== gb) return ga < gb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A path is valid when every rev parses and generations fall by exactly one per step. */
export function isValidPath(path: RevPath): boolean {
  if (path.revs.length === 0) return false;
  let prev: number | undefined;
  for (const rev of path.revs) {
    const parsed = parseRev(rev);
    if (parsed === undefined) return false;
    if (prev !== undefined && parsed.gen !== prev - 1) return false;
    prev = parsed.gen;
  }
  return new Set(path.revs).size === path.revs.length;
}

function sorted(nodes: Iterable<RevNode>): RevTree {
  return [...nodes].sort((x, y) => compareRevs(x.rev, y.rev));
}

export interface MergeResult {
  readonly tree: RevTree;
  /** True when the leaf of the path was not in the tree before. */
  readonly added: boolean;
}

/**
 * Merge one history path into a tree (the replication write and, with a one-step path on
 * top of an existing leaf, the local edit). Known revisions gain a parent they lacked (a
 * stemmed root meets its ancestry again) and the deleted flag is or-ed: a rev's deleted
 * flag is part of its identity (it is hashed into the rev), so either copy is right.
 */
export function mergePath(tree: RevTree, path: RevPath): MergeResult {
  if (!isValidPath(path)) throw new Error(`invalid revision path ${JSON.stringify(path.revs)}`);
  const byRev = new Map(tree.map((n) => [n.rev, n]));
  const added = !byRev.has(path.revs[0]!);
  for (let i = 0; i < path.revs.length; i++) {
    const rev = path.revs[i]!;
    const parent = path.revs[i + 1];
    const deleted = i === 0 && path.deleted;
    const known = byRev.get(rev);
    if (known === undefined) {
      byRev.set(rev, { rev, parent, deleted });
    } else {
      const nextParent = known.parent ?? parent;
      const nextDeleted = known.deleted || deleted;
      if (nextParent !== known.parent || nextDeleted !== known.deleted) byRev.set(rev, { rev, parent: nextParent, deleted: nextDeleted });
    }
  }
  return { tree: sorted(byRev.values()), added };
}

/** Revisions without children. */
export function leaves(tree: RevTree): RevNode[] {
  const parents = new Set<string>();
  for (const n of tree) if (n.parent !== undefined) parents.add(n.parent);
  return tree.filter((n) => !parents.has(n.rev));
}

/**
 * The CouchDB winner rule: a non-deleted leaf beats a deleted one; then the highest
 * generation; then the greatest rev string. Undefined only for an empty tree.
 */
export function winningRev(tree: RevTree): RevNode | undefined {
  let best: RevNode | undefined;
  for (const leaf of leaves(tree)) {
    if (best === undefined) best = leaf;
    else if (best.deleted !== leaf.deleted) best = leaf.deleted ? best : leaf;
    else if (compareRevs(leaf.rev, best.rev) > 0) best = leaf;
  }
  return best;
}

/** Non-deleted leaves other than the winner, greatest first. */
export function conflicts(tree: RevTree): string[] {
  const winner = winningRev(tree);
  return leaves(tree)
    .filter((n) => !n.deleted && n.rev !== winner?.rev)
    .map((n) => n.rev)
    .sort((a, b) => compareRevs(b, a));
}

/** Deleted leaves other than the winner. */
export function deletedConflicts(tree: RevTree): string[] {
  const winner = winningRev(tree);
  return leaves(tree)
    .filter((n) => n.deleted && n.rev !== winner?.rev)
    .map((n) => n.rev)
    .sort((a, b) => compareRevs(b, a));
}

export function findRev(tree: RevTree, rev: string): RevNode | undefined {
  return tree.find((n) => n.rev === rev);
}

export function isLeaf(tree: RevTree, rev: string): boolean {
  return findRev(tree, rev) !== undefined && !tree.some((n) => n.parent === rev);
}

/** The ancestry of `rev`, newest first, as far as the tree still knows it. */
export function history(tree: RevTree, rev: string): string[] {
  const byRev = new Map(tree.map((n) => [n.rev, n]));
  const out: string[] = [];
  // Walk with a loop, not recursion: a tree can be revs_limit (1000+) deep.
  for (let node = byRev.get(rev); node !== undefined; node = node.parent === undefined ? undefined : byRev.get(node.parent)) {
    out.push(node.rev);
  }
  return out;
}

/**
 * Keep for every leaf the leaf and its `limit - 1` nearest ancestors; drop the rest. A
 * kept node whose parent is dropped becomes a root. Leaves are never dropped.
 */
export function stem(tree: RevTree, limit: number): RevTree {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`revs limit must be a positive integer, got ${limit}`);
  const byRev = new Map(tree.map((n) => [n.rev, n]));
  const keep = new Set<string>();
  for (const leaf of leaves(tree)) {
    let node: RevNode | undefined = leaf;
    for (let depth = 0; node !== undefined && depth < limit; depth++) {
      keep.add(node.rev);
      node = node.parent === undefined ? undefined : byRev.get(node.parent);
    }
  }
  if (keep.size === tree.length) return tree;
  const out: RevNode[] = [];
  for (const n of tree) {
    if (!keep.has(n.rev)) continue;
    out.push(n.parent !== undefined && !keep.has(n.parent) ? { rev: n.rev, parent: undefined, deleted: n.deleted } : n);
  }
  return out;
}

/** `_revisions` of CouchDB: the generation of `rev` and the hashes of its ancestry, newest first. */
export function revisions(tree: RevTree, rev: string): { start: number; ids: string[] } {
  const chain = history(tree, rev);
  return { start: revGen(rev), ids: chain.map((r) => parseRev(r)!.hash) };
}

/** Rebuild a newest-first path from CouchDB's `_revisions` form. */
export function pathFromRevisions(revs: { start: number; ids: readonly string[] }, deleted: boolean): RevPath {
  return { revs: revs.ids.map((hash, i) => `${revs.start - i}-${hash}`), deleted };
}

/**
 * Which of `revs` the tree does not hold, and for each missing one the known revs that
 * could be its ancestors (lower generation): the `_revs_diff` answer replication needs.
 */
export function revsDiff(tree: RevTree, revs: readonly string[]): { missing: string[]; possibleAncestors: string[] } {
  const known = new Set(tree.map((n) => n.rev));
  const missing = [...new Set(revs.filter((r) => !known.has(r)))];
  const maxGen = Math.max(0, ...missing.map((r) => parseRev(r)?.gen ?? 0));
  const possibleAncestors = leaves(tree)
    .filter((n) => revGen(n.rev) < maxGen)
    .map((n) => n.rev)
    .sort(compareRevs);
  return { missing, possibleAncestors };
}

export type RevStatus = 'available' | 'missing' | 'deleted';

/**
 * CouchDB's `_revs_info`: the ancestry of `rev`, newest first, each with whether its body can
 * still be read (`available`), is gone (`missing`: compacted away or never replicated here),
 * or is a deletion (`deleted`, whose body is kept).
 */
export function revsInfo(tree: RevTree, rev: string, bodyKept: (rev: string) => boolean): { rev: string; status: RevStatus }[] {
  const byRev = new Map(tree.map((n) => [n.rev, n]));
  return history(tree, rev).map((r) => ({ rev: r, status: !bodyKept(r) ? 'missing' : byRev.get(r)!.deleted ? 'deleted' : 'available' }));
}

/**
 * CouchDB's `latest=true`: the leaves that descend from `rev` (itself when it is a leaf), in
 * the winner rule's order, so the first is the one a single-document read serves. Empty when
 * the tree does not hold `rev`.
 */
export function latestLeaves(tree: RevTree, rev: string): string[] {
  if (findRev(tree, rev) === undefined) return [];
  return leaves(tree)
    .filter((leaf) => history(tree, leaf.rev).includes(rev))
    .sort((a, b) => (a.deleted !== b.deleted ? (a.deleted ? 1 : -1) : compareRevs(b.rev, a.rev)))
    .map((leaf) => leaf.rev);
}

/**
 * What `open_revs=[...]&latest=true` serves: each asked revision's descending leaves in its
 * place (a leaf is its own), once each; a revision the tree lacks stays as asked (it is
 * answered `missing`).
 */
export function openRevsLatest(tree: RevTree, wanted: readonly string[]): string[] {
  return [...new Set(wanted.flatMap((r) => (findRev(tree, r) === undefined ? [r] : latestLeaves(tree, r))))];
}

/** The tree the leaves' histories (`_revisions`, as a read with `revs=true` gives them) span. */
export function treeOfLeaves(leafDocs: readonly { readonly revisions: { start: number; ids: readonly string[] }; readonly deleted: boolean }[]): RevTree {
  let tree: RevTree = [];
  for (const leaf of leafDocs) tree = mergePath(tree, pathFromRevisions(leaf.revisions, leaf.deleted)).tree;
  return tree;
}
