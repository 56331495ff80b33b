// Revision trees over real HTTP against a model, on a database, on a VDB of 3 shards and on a
// VDB of a one-node cluster (its shards are Raft groups): random local edits (PUT, DELETE,
// `_bulk_docs`) naming the winner, a conflicting leaf, a deleted leaf, an inner revision, an
// unknown one or none, keeping, adding, replacing or dropping attachments (inline, as stubs);
// replicated branches (`new_edits: false`, PUT or `_bulk_docs`, with inline attachments)
// grafted anywhere in the tree; compactions; and on a database with `revs_limit` 3, stemming.
// Attachment contents come from a small set, so revisions and documents share digests. After
// each step the document's every read must be the model's: the winner and its body,
// `open_revs=all`, `conflicts`/`deleted_conflicts`, `revs`, `?rev=` of every revision with its
// attachments' contents (a leaf always, an older one while its body is held), each of the
// winner's attachments by name. After each run the database's: its counts, `_all_docs` (with
// conflicts), `_changes` (with every leaf), `_find` (with conflicts), `_revs_diff` and `_bulk_get`.
// docs/docdb.md ("Documents", "Revision trees", "Compaction") is the contract; the pure
// revision tree has its own properties (revtree.test.ts), this is the whole write and read path.
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { fcParams } from '../support/fc.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { startClusterTestNode } from '../support/one-node-cluster.js';
import { waitFor } from '../support/wait.js';

const IDS = ['a', 'b', 'c'];

type RevPick = 'none' | 'winner' | 'leaf' | 'deleted-leaf' | 'inner' | 'unknown';
/** What an edit does to the attachments of the revision it names: `none` sends no `_attachments` (CouchDB drops them all). */
interface AttEdit {
  op: 'keep' | 'put' | 'drop' | 'none';
  name: string;
  data: string;
}
type Atts = Record<string, string>;
type Step =
  | { kind: 'edit'; id: string; rev: RevPick; pick: number; n: number; deleted: boolean; via: 'put' | 'bulk' | 'delete'; att: AttEdit }
  | { kind: 'branch'; id: string; from: number | 'root'; hashes: string[]; n: number; deleted: boolean; via: 'put' | 'bulk'; atts: Atts }
  | { kind: 'compact' };

const arbHash = fc.stringMatching(/^[0-9a-f]{32}$/);
// Base64 of "hello", "world", three bytes and nothing: shared digests across revisions and documents.
const arbData = fc.constantFrom('aGVsbG8=', 'd29ybGQ=', 'AAEC', '');
const arbName = fc.constantFrom('x', 'y.txt');
const arbAttEdit = fc.record({ op: fc.constantFrom('keep' as const, 'keep' as const, 'put' as const, 'drop' as const, 'none' as const), name: arbName, data: arbData });
const arbStep = (compaction: boolean): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('edit' as const), id: fc.constantFrom(...IDS), rev: fc.constantFrom<RevPick>('none', 'winner', 'winner', 'winner', 'winner', 'leaf', 'leaf', 'deleted-leaf', 'inner', 'unknown'), pick: fc.nat(), n: fc.nat(99), deleted: fc.boolean(), via: fc.constantFrom('put' as const, 'bulk' as const, 'delete' as const), att: arbAttEdit }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('branch' as const), id: fc.constantFrom(...IDS), from: fc.oneof(fc.constant('root' as const), fc.nat()), hashes: fc.array(arbHash, { minLength: 1, maxLength: 3 }), n: fc.nat(99), deleted: fc.boolean(), via: fc.constantFrom('put' as const, 'bulk' as const), atts: fc.dictionary(arbName, arbData, { maxKeys: 2 }) }) },
    { weight: compaction ? 1 : 0, arbitrary: fc.constant({ kind: 'compact' as const }) },
  );

interface Revision {
  parent: string | undefined;
  deleted: boolean;
  /** The body's `n` while the server holds it; undefined for none (compacted, or replicated without). */
  n: number | undefined;
  /** A tombstone's body is held (as any leaf's), but what it holds is not checked. */
  held: boolean;
  /** The attachments' contents (base64) of a held live body. */
  atts: Atts;
}

/** One document's revisions; the CouchDB rules over it, written out plainly. */
class Tree {
  readonly revs = new Map<string, Revision>();

  leaves(): string[] {
    const parents = new Set([...this.revs.values()].map((r) => r.parent));
    return [...this.revs.keys()].filter((r) => !parents.has(r));
  }

  /** A live leaf beats a deleted one, then the highest generation, then the greatest rev. */
  winner(): string | undefined {
    return this.leaves().sort((a, b) => {
      const da = this.revs.get(a)!.deleted;
      const db = this.revs.get(b)!.deleted;
      if (da !== db) return da ? 1 : -1;
      if (gen(a) !== gen(b)) return gen(b) - gen(a);
      return a < b ? 1 : -1;
    })[0];
  }

  /** `revs_limit`: each leaf keeps itself and its `limit - 1` nearest ancestors; what no leaf keeps goes. */
  stem(limit: number): void {
    const kept = new Set(this.leaves().flatMap((leaf) => this.history(leaf).slice(0, limit)));
    for (const rev of [...this.revs.keys()]) if (!kept.has(rev)) this.revs.delete(rev);
    for (const [rev, r] of this.revs) if (r.parent !== undefined && !kept.has(r.parent)) this.revs.set(rev, { ...r, parent: undefined });
  }

  /** The revision's ancestry, newest first. */
  history(rev: string): string[] {
    const out: string[] = [];
    for (let r: string | undefined = rev; r !== undefined; r = this.revs.get(r)?.parent) out.push(r);
    return out;
  }
}

/** What the runs reached, said at the end of each target's runs: a model test that never gets there tests nothing. */
const reached = { edits: 0, refused: 0, branches: 0, attachmentsRead: 0, stemmed: 0, compactions: 0 };

const gen = (rev: string): number => Number(rev.slice(0, rev.indexOf('-')));
const hashOf = (rev: string): string => rev.slice(rev.indexOf('-') + 1);
const sorted = (xs: readonly string[]): string[] => [...xs].sort();
const sameAtts = (a: Record<string, string | undefined>, b: Atts): boolean => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

interface Target {
  kind: string;
  base: string;
  compaction: boolean;
  /** The node's SERVICE_REVS_LIMIT, when the runs should reach it. */
  revsLimit?: number;
  start(): Promise<TestNode>;
  create(node: TestNode, name: string): Promise<void>;
}

const TARGETS: Target[] = [
  {
    kind: 'database',
    base: '/db',
    compaction: true,
    start: () => startTestNode(),
    create: async (node, name) => expectStatus(await node.request('PUT', `/db/${name}`), 201, `PUT /db/${name}`),
  },
  {
    kind: 'database with revs_limit 3',
    base: '/db',
    compaction: true,
    revsLimit: 3,
    start: () => startTestNode({ SERVICE_REVS_LIMIT: '3' }),
    create: async (node, name) => expectStatus(await node.request('PUT', `/db/${name}`), 201, `PUT /db/${name}`),
  },
  {
    kind: 'VDB of 3 shards',
    base: '/vdb',
    compaction: false,
    start: () => startTestNode(),
    create: async (node, name) => expectStatus(await node.request('POST', '/vdb', { body: { name, shard_count: 3 } }), 201, `POST /vdb ${name}`),
  },
  {
    kind: 'VDB of 2 shards on a one-node cluster',
    base: '/vdb',
    compaction: false,
    start: () => startClusterTestNode({ SERVICE_NODE_NAME: 'rm1' }),
    create: async (node, name) => expectStatus(await node.request('POST', '/vdb', { body: { name, shard_count: 2 } }), 201, `POST /vdb ${name}`),
  },
];

function expectStatus(r: { status: number; text: string }, status: number, what: string): void {
  if (r.status !== status) throw new Error(`${what} answered ${r.status}, expected ${status}: ${r.text}`);
}

function check(ok: boolean, what: () => string): void {
  if (!ok) throw new Error(what());
}

async function runSteps(node: TestNode, at: string, steps: readonly Step[], revsLimit: number | undefined): Promise<void> {
  const trees = new Map(IDS.map((id) => [id, new Tree()]));
  const log: string[] = [];
  try {
    for (const step of steps) {
      log.push(JSON.stringify(step));
      if (step.kind === 'compact') {
        expectStatus(await node.request('POST', `${at}/_compact`), 202, 'compact');
        reached.compactions++;
        await waitFor(async () => ((await node.request('GET', at)).body.compact_running === false ? true : undefined), { what: 'compaction done', timeoutMs: 30_000 });
        for (const tree of trees.values()) {
          const leaves = new Set(tree.leaves());
          for (const [rev, r] of tree.revs) if (!leaves.has(rev)) tree.revs.set(rev, { ...r, n: undefined, held: false, atts: {} });
        }
        continue;
      }
      const tree = trees.get(step.id)!;
      if (step.kind === 'edit') await edit(node, at, tree, step);
      else await branch(node, at, tree, step);
      if (revsLimit !== undefined) {
        const before = tree.revs.size;
        tree.stem(revsLimit);
        reached.stemmed += before - tree.revs.size;
      }
      await checkDocument(node, at, step.id, tree);
    }
    await checkDatabase(node, at, trees);
  } catch (err) {
    (err as Error).message += `\nsteps:\n  ${log.join('\n  ')}\ntrees: ${JSON.stringify([...trees].map(([id, tree]) => [id, [...tree.revs]]))}`;
    throw err;
  }
}

/** A local edit; its answer must be the rules' where they decide, and is learnt from where they leave a choice. */
async function edit(node: TestNode, at: string, tree: Tree, step: Extract<Step, { kind: 'edit' }>): Promise<void> {
  const winner = tree.winner();
  const leaves = tree.leaves();
  const live = leaves.filter((r) => !tree.revs.get(r)!.deleted);
  const dead = leaves.filter((r) => tree.revs.get(r)!.deleted);
  const inner = [...tree.revs.keys()].filter((r) => !leaves.includes(r));
  const pickFrom = (xs: string[]): string | undefined => (xs.length === 0 ? undefined : xs[step.pick % xs.length]);
  let rev: string | undefined;
  switch (step.rev) {
    case 'none':
      break;
    case 'winner':
      rev = winner;
      break;
    case 'leaf':
      rev = pickFrom(live);
      break;
    case 'deleted-leaf':
      rev = pickFrom(dead);
      break;
    case 'inner':
      rev = pickFrom(inner);
      break;
    case 'unknown':
      rev = `${step.pick % 5 + 1}-${'0'.repeat(63)}1`;
  }
  const deleted = step.via === 'delete' || step.deleted;
  // The attachments sent: stubs for those of the named leaf the edit keeps, content for a new one.
  const from = rev !== undefined && leaves.includes(rev) ? tree.revs.get(rev)!.atts : {};
  const atts: Atts = step.att.op === 'none' ? {} : { ...from };
  if (step.att.op === 'put') atts[step.att.name] = step.att.data;
  if (step.att.op === 'drop') delete atts[step.att.name];
  const attachments = deleted || step.att.op === 'none' ? {} : { _attachments: Object.fromEntries(Object.entries(atts).map(([name, data]) => [name, step.att.op === 'put' && name === step.att.name ? { content_type: 'text/plain', data } : { stub: true }])) };
  let status: number;
  let newRev: string | undefined;
  let answer: string;
  if (step.via === 'delete') {
    const r = await node.request('DELETE', `${at}/${step.id}${rev === undefined ? '' : `?rev=${rev}`}`);
    status = r.status;
    answer = r.text;
    if (status === 200) newRev = r.body.rev;
  } else if (step.via === 'put') {
    const r = await node.request('PUT', `${at}/${step.id}`, { body: { n: step.n, ...(rev === undefined ? {} : { _rev: rev }), ...(step.deleted ? { _deleted: true } : {}), ...attachments } });
    status = r.status;
    answer = r.text;
    if (status === 201 || status === 200) newRev = r.body.rev;
  } else {
    const r = await node.request('POST', `${at}/_bulk_docs`, { body: { docs: [{ _id: step.id, n: step.n, ...(rev === undefined ? {} : { _rev: rev }), ...(step.deleted ? { _deleted: true } : {}), ...attachments }] } });
    expectStatus(r, 201, 'bulk edit');
    const result = (Array.isArray(r.body) ? r.body : r.body.results)[0] as { ok?: boolean; rev?: string; error?: string };
    status = result.ok === true ? 201 : result.error === 'conflict' ? 409 : result.error === 'not_found' ? 404 : 400;
    answer = JSON.stringify(result);
    if (result.ok === true) newRev = result.rev;
  }
  const ok = newRev !== undefined;
  const what = () => `edit ${JSON.stringify(step)} naming ${rev ?? 'no rev'} answered ${status} ${answer}`;
  const winnerLive = winner !== undefined && !tree.revs.get(winner)!.deleted;
  // Where the rules decide.
  if (rev !== undefined && live.includes(rev)) check(ok, what); // a live leaf: the winner or a conflict
  if (rev !== undefined && winnerLive && !leaves.includes(rev)) check(status === 409, what); // an inner or unknown revision of a live document
  if (rev === undefined && winnerLive) check(status === 409, what); // no rev for a live document
  if (rev === undefined && !deleted && !winnerLive) check(ok, what); // created, or re-created on its tombstone
  if (rev !== undefined && winner === undefined && !deleted) check(status === 409, what); // a rev for a missing document
  if (deleted && !winnerLive) check(status === 404 || status === 409 || (ok && rev !== undefined && dead.includes(rev)), what); // deleting what is missing or deleted
  if (step.via === 'delete' && !winnerLive) check(status === 404, what); // an HTTP DELETE opens the document first (CouchDB): missing or deleted is a 404, whatever the rev
  if (!ok) {
    reached.refused++;
    return;
  }
  reached.edits++;
  // What it made: a child of the revision named, or of the tombstone it re-creates on.
  const parent = rev ?? (winner !== undefined && !winnerLive ? winner : undefined);
  check(parent === undefined || tree.leaves().includes(parent), () => `${what()}: made a child of ${parent}, which is not a leaf`);
  check(gen(newRev!) === (parent === undefined ? 1 : gen(parent) + 1) && !tree.revs.has(newRev!), () => `${what()}: ${newRev} is not a new child of ${parent ?? 'nothing'}`);
  tree.revs.set(newRev!, { parent, deleted, n: deleted ? undefined : step.n, held: true, atts: deleted ? {} : atts });
}

/** A replicated branch: new revisions grafted under any known one (or a new root), as a replicator writes them. */
async function branch(node: TestNode, at: string, tree: Tree, step: Extract<Step, { kind: 'branch' }>): Promise<void> {
  const known = [...tree.revs.keys()];
  const from = step.from === 'root' || known.length === 0 ? undefined : known[step.from % known.length];
  const base = from === undefined ? [] : tree.history(from); // newest first
  const baseGen = from === undefined ? 0 : gen(from);
  const fresh = step.hashes.map((h, i) => `${baseGen + i + 1}-${h}`).filter((r) => !tree.revs.has(r));
  if (fresh.length !== step.hashes.length) return; // a drawn hash met a known one: nothing to learn
  const tip = fresh[fresh.length - 1]!;
  const ids = [...fresh].reverse().concat(base).map(hashOf);
  const inline = Object.fromEntries(Object.entries(step.atts).map(([name, data]) => [name, { content_type: 'application/octet-stream', data }]));
  const doc = { _id: step.id, _rev: tip, _revisions: { start: gen(tip), ids }, ...(step.deleted ? { _deleted: true } : { n: step.n, ...(Object.keys(inline).length === 0 ? {} : { _attachments: inline }) }) };
  let answer: { status: number; text: string; rev?: string };
  if (step.via === 'put') {
    const r = await node.request('PUT', `${at}/${step.id}?new_edits=false`, { body: doc });
    answer = { status: r.status, text: r.text, rev: r.body?.rev };
  } else {
    const r = await node.request('POST', `${at}/_bulk_docs`, { body: { docs: [doc], new_edits: false } });
    const result = (Array.isArray(r.body) ? r.body[0] : r.body?.results?.[0]) as { ok?: boolean; rev?: string; error?: string } | undefined;
    answer = { status: r.status === 201 && result?.error === undefined ? 201 : 400, text: r.text, rev: result?.rev };
  }
  check(answer.status === 201 && (answer.rev === undefined || answer.rev === tip), () => `branch ${JSON.stringify(doc)} answered ${answer.status} ${answer.text}`);
  reached.branches++;
  let parent = from;
  for (const rev of fresh) {
    const isTip = rev === tip;
    tree.revs.set(rev, { parent, deleted: isTip && step.deleted, n: isTip && !step.deleted ? step.n : undefined, held: isTip, atts: isTip && !step.deleted ? { ...step.atts } : {} });
    parent = rev;
  }
}

/** Every read of one document against its tree. */
async function checkDocument(node: TestNode, at: string, id: string, tree: Tree): Promise<void> {
  const winner = tree.winner();
  const live = winner !== undefined && !tree.revs.get(winner)!.deleted;
  const doc = await node.request('GET', `${at}/${id}?conflicts=true&deleted_conflicts=true&revs=true`);
  if (!live) {
    check(doc.status === 404, () => `GET ${id} answered ${doc.status} ${doc.text}, the model's winner ${winner ?? 'none'} is not live`);
    if (winner === undefined) return;
  } else {
    const w = tree.revs.get(winner)!;
    const leaves = tree.leaves();
    const conflicts = sorted(leaves.filter((r) => r !== winner && !tree.revs.get(r)!.deleted));
    const deletedConflicts = sorted(leaves.filter((r) => tree.revs.get(r)!.deleted));
    check(doc.status === 200 && doc.body._rev === winner && doc.body.n === w.n, () => `GET ${id} answered ${doc.status} ${doc.text}, the model's winner is ${winner} with n ${w.n}`);
    check(JSON.stringify(sorted(doc.body._conflicts ?? [])) === JSON.stringify(conflicts), () => `GET ${id}: _conflicts ${JSON.stringify(doc.body._conflicts)}, the model's ${JSON.stringify(conflicts)}`);
    check(doc.body._conflicts === undefined || doc.body._conflicts.length > 0, () => `GET ${id}: an empty _conflicts`);
    check(JSON.stringify(sorted(doc.body._deleted_conflicts ?? [])) === JSON.stringify(deletedConflicts), () => `GET ${id}: _deleted_conflicts ${JSON.stringify(doc.body._deleted_conflicts)}, the model's ${JSON.stringify(deletedConflicts)}`);
    const history = tree.history(winner);
    check(doc.body._revisions?.start === gen(winner) && JSON.stringify(doc.body._revisions.ids) === JSON.stringify(history.map(hashOf)), () => `GET ${id}: _revisions ${JSON.stringify(doc.body._revisions)}, the model's history ${JSON.stringify(history)}`);
  }
  const open = await node.request('GET', `${at}/${id}?open_revs=all`);
  check(open.status === 200 && Array.isArray(open.body), () => `open_revs=all of ${id} answered ${open.status} ${open.text}`);
  const got = (open.body as { ok?: { _rev: string; _deleted?: boolean; n?: number } }[]).map((e) => e.ok);
  const want = tree.leaves();
  check(got.every((d) => d !== undefined) && JSON.stringify(sorted(got.map((d) => d!._rev))) === JSON.stringify(sorted(want)), () => `open_revs=all of ${id}: ${open.text}, the model's leaves ${JSON.stringify(want)}`);
  for (const d of got) {
    const r = tree.revs.get(d!._rev)!;
    check((d!._deleted === true) === r.deleted && (r.deleted || d!.n === r.n), () => `open_revs=all of ${id}: ${JSON.stringify(d)}, the model's ${JSON.stringify(r)}`);
  }
  for (const [rev, r] of tree.revs) {
    const one = await node.request('GET', `${at}/${id}?rev=${rev}&attachments=true`);
    if (!r.held) check(one.status === 404, () => `GET ${id}?rev=${rev} answered ${one.status} ${one.text}; its body is not held (${JSON.stringify(r)})`);
    else if (r.deleted) check(one.status === 200 && one.body._deleted === true && one.body._rev === rev, () => `GET ${id}?rev=${rev} (a tombstone) answered ${one.status} ${one.text}`);
    else {
      const served = Object.fromEntries(Object.entries((one.body?._attachments ?? {}) as Record<string, { data?: string }>).map(([name, a]) => [name, a.data]));
      reached.attachmentsRead += Object.keys(served).length;
      check(one.status === 200 && one.body._rev === rev && one.body.n === r.n && sameAtts(served, r.atts), () => `GET ${id}?rev=${rev}&attachments=true answered ${one.status} ${one.text}, the model holds n ${r.n} and attachments ${JSON.stringify(r.atts)}`);
    }
  }
  // The winner's attachments by name, as bytes.
  if (live) {
    for (const [name, data] of Object.entries(tree.revs.get(winner)!.atts)) {
      const res = await fetch(`${node.url}${at}/${id}/${encodeURIComponent(name)}`, { headers: { authorization: `Bearer ${node.adminKey}` } });
      const bytes = Buffer.from(await res.arrayBuffer());
      check(res.status === 200 && bytes.equals(Buffer.from(data, 'base64')), () => `GET ${id}/${name} answered ${res.status} ${bytes.toString('base64')}, the model's ${data}`);
    }
  }
}

/** The database's listings against the trees. */
async function checkDatabase(node: TestNode, at: string, trees: Map<string, Tree>): Promise<void> {
  const written = [...trees].filter(([, tree]) => tree.revs.size > 0);
  const winners = new Map(written.map(([id, tree]) => [id, tree.winner()!]));
  const liveIds = written.filter(([id, tree]) => !tree.revs.get(winners.get(id)!)!.deleted).map(([id]) => id).sort();
  const info = await node.request('GET', at);
  check(info.status === 200 && info.body.doc_count === liveIds.length, () => `info: ${info.text}, the model has ${liveIds.length} live documents`);
  if (info.body.doc_del_count !== undefined) check(info.body.doc_del_count === written.length - liveIds.length, () => `info: ${info.text}, the model has ${written.length - liveIds.length} deleted documents`);
  const all = await node.request('GET', `${at}/_all_docs`);
  const rows = (all.body.rows ?? []) as { id: string; value: { rev: string } }[];
  check(all.status === 200 && JSON.stringify(rows.map((r) => [r.id, r.value.rev])) === JSON.stringify(liveIds.map((id) => [id, winners.get(id)])), () => `_all_docs: ${all.text}, the model's ${JSON.stringify(liveIds.map((id) => [id, winners.get(id)]))}`);
  const changes = await node.request('GET', `${at}/_changes`);
  const entries = ((changes.body.results ?? changes.body.changes ?? []) as { id: string; rev?: string; changes?: { rev: string }[]; deleted?: boolean }[]).map((e) => [e.id, e.rev ?? e.changes?.[0]?.rev, e.deleted === true] as const);
  const wantEntries = written.map(([id, tree]) => [id, winners.get(id), tree.revs.get(winners.get(id)!)!.deleted] as const).sort();
  check(changes.status === 200 && JSON.stringify([...entries].sort()) === JSON.stringify(wantEntries), () => `_changes: ${changes.text}, the model's ${JSON.stringify(wantEntries)}`);
  // CouchDB's forms a replicator and a client read: every leaf of each change (`style=all_docs`),
  // and each live document's conflicts through `_all_docs` and `_find`.
  const allLeaves = await node.request('GET', `${at}/_changes?style=all_docs`);
  const leafSets = ((allLeaves.body.results ?? []) as { id: string; changes: { rev: string }[] }[]).map((e) => [e.id, sorted(e.changes.map((c) => c.rev))] as const).sort();
  const wantLeafSets = written.map(([id, tree]) => [id, sorted(tree.leaves())] as const).sort();
  check(allLeaves.status === 200 && JSON.stringify(leafSets) === JSON.stringify(wantLeafSets), () => `_changes?style=all_docs: ${allLeaves.text}, the model's leaves ${JSON.stringify(wantLeafSets)}`);
  const conflictsOf = (id: string) => sorted(trees.get(id)!.leaves().filter((r) => r !== winners.get(id) && !trees.get(id)!.revs.get(r)!.deleted));
  const listed = await node.request('GET', `${at}/_all_docs?include_docs=true&conflicts=true`);
  for (const row of (listed.body.rows ?? []) as { id: string; doc: { _conflicts?: string[] } }[]) {
    check(JSON.stringify(sorted(row.doc._conflicts ?? [])) === JSON.stringify(conflictsOf(row.id)), () => `_all_docs?conflicts=true: ${JSON.stringify(row)}, the model's conflicts ${JSON.stringify(conflictsOf(row.id))}`);
  }
  const found = await node.request('POST', `${at}/_find`, { body: { selector: {}, conflicts: true } });
  check(found.status === 200 && JSON.stringify((found.body.docs as { _id: string }[]).map((d) => d._id).sort()) === JSON.stringify(liveIds), () => `_find {}: ${found.text}, the model's live documents ${JSON.stringify(liveIds)}`);
  for (const doc of found.body.docs as { _id: string; _rev: string; _conflicts?: string[] }[]) {
    check(doc._rev === winners.get(doc._id) && JSON.stringify(sorted(doc._conflicts ?? [])) === JSON.stringify(conflictsOf(doc._id)), () => `_find with conflicts: ${JSON.stringify(doc)}, the model's winner ${winners.get(doc._id)} and conflicts ${JSON.stringify(conflictsOf(doc._id))}`);
  }
  // Every known revision is had; an unknown one is missing.
  const unknown = `9-${'f'.repeat(32)}`;
  const ask = Object.fromEntries(IDS.map((id) => [id, [...trees.get(id)!.revs.keys(), unknown]]));
  const diff = await node.request('POST', `${at}/_revs_diff`, { body: ask });
  const wantDiff = Object.fromEntries(IDS.map((id) => [id, [unknown]]));
  const gotDiff = Object.fromEntries(Object.entries((diff.body ?? {}) as Record<string, { missing: string[] }>).map(([id, d]) => [id, d.missing]));
  check(diff.status === 200 && JSON.stringify(gotDiff) === JSON.stringify(wantDiff), () => `_revs_diff ${JSON.stringify(ask)}: ${diff.text}`);
  // Every leaf through `_bulk_get`, as a replicator reads them.
  const wanted = written.flatMap(([id, tree]) => tree.leaves().map((rev) => ({ id, rev })));
  if (wanted.length > 0) {
    const bulk = await node.request('POST', `${at}/_bulk_get?revs=true`, { body: { docs: wanted } });
    check(bulk.status === 200, () => `_bulk_get: ${bulk.status} ${bulk.text}`);
    const served = (bulk.body.results as { id: string; docs: { ok?: { _rev: string; _deleted?: boolean; n?: number } }[] }[]).flatMap((r) => r.docs.map((d) => ({ id: r.id, doc: d.ok })));
    check(served.length === wanted.length, () => `_bulk_get of ${wanted.length} leaves: ${bulk.text}`);
    for (const [i, { id, rev }] of wanted.entries()) {
      const d = served[i]!.doc;
      const r = trees.get(id)!.revs.get(rev)!;
      check(served[i]!.id === id && d !== undefined && d._rev === rev && (d._deleted === true) === r.deleted && (r.deleted || d.n === r.n), () => `_bulk_get of ${id} ${rev}: ${JSON.stringify(served[i])}, the model's ${JSON.stringify(r)}`);
    }
  }
}

async function property(t: Test, target: Target, runs: number): Promise<void> {
  const node = await target.start();
  t.teardown(() => node.close());
  let round = 0;
  const params = fcParams<[Step[]]>(runs);
  await fc.assert(
    fc.asyncProperty(fc.array(arbStep(target.compaction), { minLength: 1, maxLength: 20 }), async (steps) => {
      const name = `revs${round++}`;
      await target.create(node, name);
      await runSteps(node, `${target.base}/${name}`, steps, target.revsLimit);
    }),
    params,
  );
  t.pass(`${params.numRuns} random histories`);
  t.comment(`reached: ${JSON.stringify(reached)}`);
  t.ok(reached.edits > 0 && reached.refused > 0 && reached.branches > 0 && reached.attachmentsRead > 0, 'edits made and refused, branches grafted, attachments read');
  if (target.compaction) t.ok(reached.compactions > 0, 'compactions run');
  if (target.revsLimit !== undefined) t.ok(reached.stemmed > 0, 'revisions stemmed');
  for (const key of Object.keys(reached) as (keyof typeof reached)[]) reached[key] = 0;
}

t.test('a database: every read is the revision model\'s', (t) => property(t, TARGETS[0]!, 60));
t.test('a database with revs_limit 3: every read is the revision model\'s', (t) => property(t, TARGETS[1]!, 40));
t.test('a VDB: every read is the revision model\'s', (t) => property(t, TARGETS[2]!, 25));
t.test('a VDB on a one-node cluster: every read is the revision model\'s', (t) => property(t, TARGETS[3]!, 15));
