// Convergence (fast-check): three databases, random interleavings of creates, edits and
// deletes (concurrent edits of one document on several databases included) and pairwise
// one-shot replications; after a final round of full replication all three hold identical
// revision trees (every leaf with its history and body), the same winner and the same
// `_conflicts` for every document.
import fc from 'fast-check';
import t from 'tap';
import { type TestNode, startTestNode } from '../../support/node.js';
import { fcParams } from '../../support/fc.js';

type Op = { kind: 'put'; db: number; id: string; v: number } | { kind: 'del'; db: number; id: string } | { kind: 'rep'; from: number; to: number };

const IDS = ['x', 'y', 'z'];
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('put' as const), db: fc.integer({ min: 0, max: 2 }), id: fc.constantFrom(...IDS), v: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('del' as const), db: fc.integer({ min: 0, max: 2 }), id: fc.constantFrom(...IDS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('rep' as const), from: fc.integer({ min: 0, max: 2 }), to: fc.integer({ min: 0, max: 2 }) }).filter((o) => o.from !== o.to) },
);

async function apply(node: TestNode, dbs: string[], o: Op): Promise<void> {
  if (o.kind === 'rep') {
    const r = await node.request('POST', `/db/${dbs[o.from]}/_replicate`, { body: { target: dbs[o.to] } });
    if (r.status !== 200 || r.body.doc_write_failures !== 0) throw new Error(`replicate: ${r.status} ${r.text}`);
    return;
  }
  const db = dbs[o.db]!;
  const cur = await node.request('GET', `/db/${db}/${o.id}`);
  if (o.kind === 'put') {
    const headers: Record<string, string> = cur.status === 200 ? { 'if-match': cur.body._rev } : {};
    const r = await node.request('PUT', `/db/${db}/${o.id}`, { body: { v: o.v, db: o.db }, headers });
    if (r.status !== 201) throw new Error(`put: ${r.status} ${r.text}`);
  } else if (cur.status === 200) {
    const r = await node.request('DELETE', `/db/${db}/${o.id}`, { headers: { 'if-match': cur.body._rev } });
    if (r.status !== 200) throw new Error(`delete: ${r.status} ${r.text}`);
  }
}

/** Everything that must agree: every leaf (rev, deleted, body, history), the winner, the conflicts. */
async function snapshot(node: TestNode, db: string): Promise<unknown> {
  const out: Record<string, unknown> = {};
  const leaves = (await node.request('POST', `/db/${db}/_bulk_get?revs=true`, { body: { docs: IDS.map((id) => ({ id })) } })).body.results;
  for (const [i, id] of IDS.entries()) {
    const docs = (leaves[i].docs as { ok?: Record<string, unknown> }[]).flatMap((d) => (d.ok === undefined ? [] : [d.ok])).sort((a, b) => String(a._rev).localeCompare(String(b._rev)));
    const winner = await node.request('GET', `/db/${db}/${id}?conflicts=true&deleted=true`);
    out[id] = { leaves: docs, winner: winner.status === 200 ? { rev: winner.body._rev, deleted: winner.body._deleted ?? false, conflicts: winner.body._conflicts ?? [] } : winner.status };
  }
  return out;
}

t.test('three databases converge after full replication', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
      run++;
      const dbs = [0, 1, 2].map((i) => `conv${run}_${i}`);
      for (const db of dbs) await node.request('PUT', `/db/${db}`);
      for (const o of ops) await apply(node, dbs, o);
      for (let round = 0; round < 2; round++) {
        for (let from = 0; from < 3; from++) for (let to = 0; to < 3; to++) if (from !== to) await apply(node, dbs, { kind: 'rep', from, to });
      }
      const [a, b, c] = await Promise.all(dbs.map((db) => snapshot(node, db)));
      t.same(b, a, `run ${run}: db 1 = db 0`);
      t.same(c, a, `run ${run}: db 2 = db 0`);
      for (const db of dbs) await node.request('DELETE', `/db/${db}`);
      return JSON.stringify(a) === JSON.stringify(b) && JSON.stringify(a) === JSON.stringify(c);
    }),
    fcParams(8),
  );
});
