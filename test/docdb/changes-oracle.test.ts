// `_changes` over real HTTP against a model, on a database and on a VDB of 3 shards (whose feed
// merges the shards' feeds): after random bulk writes, updates, deletes and re-creations, the
// feed lists every document once, at its last write, with its winning revision and deleted
// flag, in the order of those writes; paging by `last_seq` with any `limit` lists the same
// entries; `descending` lists them backwards (a VDB refuses it: its shards' feeds are merged
// oldest first); `since` an entry's `seq` resumes right after it; `doc_ids` keeps the feed's
// order and lists only those.
import fc from 'fast-check';
import t from 'tap';
import { fcParams } from '../support/fc.js';
import { startTestNode } from '../support/node.js';

const TARGETS = [
  { kind: 'database', base: '/db', create: (name: string) => ({ method: 'PUT', path: `/db/${name}` }) },
  { kind: 'VDB of 3 shards', base: '/vdb', create: (name: string) => ({ method: 'POST', path: '/vdb', body: { name, shard_count: 3 } }) },
] as const;

const IDS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const arbOp = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('write' as const), ids: fc.uniqueArray(fc.constantFrom(...IDS), { minLength: 1, maxLength: 4 }), n: fc.nat({ max: 9 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), id: fc.constantFrom(...IDS) }) },
);

interface Entry {
  id: string;
  seq: unknown;
  rev: string;
  deleted: boolean;
}

/** The entries of a `_changes` answer, as a database (`results`) or a VDB (`changes`) gives them. */
function entriesOf(body: { results?: unknown[]; changes?: unknown[] }): Entry[] {
  const rows = (body.results ?? body.changes ?? []) as { id: string; seq: unknown; rev?: string; changes?: { rev: string }[]; deleted?: boolean }[];
  return rows.map((r) => ({ id: r.id, seq: r.seq, rev: r.rev ?? r.changes![0]!.rev, deleted: r.deleted === true }));
}

for (const target of TARGETS) {
  t.test(`oracle (${target.kind}): _changes lists each document once at its last write, whatever the paging`, async (t) => {
    const node = await startTestNode();
    t.teardown(() => node.close());
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(arbOp, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 4 }), fc.uniqueArray(fc.constantFrom(...IDS), { minLength: 1, maxLength: 3 }), async (ops, limit, docIds) => {
        const name = `feed${round++}`;
        const create = target.create(name);
        const made = await node.request(create.method, create.path, 'body' in create ? { body: create.body } : {});
        if (made.status !== 201) throw new Error(`creating ${name} answered ${made.status}`);
        const at = `${target.base}/${name}`;
        const get = async (query: string): Promise<{ entries: Entry[]; lastSeq: unknown }> => {
          const r = await node.request('GET', `${at}/_changes${query}`);
          if (r.status !== 200) throw new Error(`_changes${query} answered ${r.status}: ${JSON.stringify(r.body)}`);
          return { entries: entriesOf(r.body), lastSeq: r.body.last_seq };
        };
        try {
          // The model: each document's winning revision, whether it is deleted, and the step of its last write.
          const model = new Map<string, { rev: string; deleted: boolean; step: number }>();
          for (const [step, op] of ops.entries()) {
            if (op.kind === 'write') {
              const docs = op.ids.map((_id) => ({ _id, n: op.n, ...(model.has(_id) ? { _rev: model.get(_id)!.rev } : {}) }));
              const r = await node.request('POST', `${at}/_bulk_docs`, { body: { docs } });
              const results = (Array.isArray(r.body) ? r.body : r.body.results) as { id: string; rev: string; ok?: boolean; error?: string }[];
              if (r.status !== 201 || results.some((x) => x.error !== undefined)) throw new Error(`bulk ${JSON.stringify(docs)} answered ${r.status}: ${JSON.stringify(r.body)}`);
              for (const x of results) model.set(x.id, { rev: x.rev, deleted: false, step });
            } else {
              const m = model.get(op.id);
              if (m === undefined || m.deleted) continue;
              const r = await node.request('DELETE', `${at}/${op.id}?rev=${m.rev}`);
              if (r.status !== 200) throw new Error(`delete ${op.id} answered ${r.status}`);
              model.set(op.id, { rev: r.body.rev, deleted: true, step });
            }
          }
          const full = (await get('')).entries;
          const describe = (es: readonly Entry[]) => JSON.stringify(es.map((e) => [e.id, e.rev, e.deleted]));
          if (full.length !== model.size || new Set(full.map((e) => e.id)).size !== full.length) throw new Error(`the feed ${describe(full)} is not one entry per document (${model.size})`);
          for (const e of full) {
            const m = model.get(e.id);
            if (m === undefined || m.rev !== e.rev || m.deleted !== e.deleted) throw new Error(`entry ${JSON.stringify(e)}, the model has ${JSON.stringify(m)}`);
          }
          const steps = full.map((e) => model.get(e.id)!.step);
          if (steps.some((s, i) => i > 0 && s < steps[i - 1]!)) throw new Error(`the feed ${describe(full)} is not in the order of the writes (steps ${steps})`);
          // Paged by last_seq.
          const paged: Entry[] = [];
          let since = '';
          for (let pages = 0; pages <= full.length + 1; pages++) {
            const page = await get(`?limit=${limit}${since}`);
            paged.push(...page.entries);
            since = `&since=${encodeURIComponent(String(page.lastSeq))}`;
            if (page.entries.length < limit) break;
          }
          if (describe(paged) !== describe(full)) throw new Error(`pages of ${limit}: ${describe(paged)}, the whole feed ${describe(full)}`);
          // Backwards, whole and cut; a VDB's merged feed refuses it rather than answer oldest first.
          if (target.base === '/vdb') {
            const refused = await node.request('GET', `${at}/_changes?descending=true`);
            if (refused.status !== 400 || !/descending=true is not offered/.test(refused.body.message)) throw new Error(`a VDB's descending feed answered ${refused.status}: ${JSON.stringify(refused.body)}`);
          } else {
            const backwards = (await get('?descending=true')).entries;
            if (describe(backwards) !== describe([...full].reverse())) throw new Error(`descending: ${describe(backwards)}, the feed reversed ${describe([...full].reverse())}`);
            const lastOnes = (await get(`?descending=true&limit=${limit}`)).entries;
            if (describe(lastOnes) !== describe([...full].reverse().slice(0, limit))) throw new Error(`descending, limit ${limit}: ${describe(lastOnes)}`);
          }
          // Since each entry's seq: what follows it.
          for (const [i, e] of full.entries()) {
            const rest = (await get(`?since=${encodeURIComponent(String(e.seq))}`)).entries;
            if (describe(rest) !== describe(full.slice(i + 1))) throw new Error(`since entry ${i} (${String(e.seq)}): ${describe(rest)}, the feed after it ${describe(full.slice(i + 1))}`);
          }
          // Only some ids, in the feed's order, also page by page.
          const only = full.filter((e) => docIds.includes(e.id));
          const filtered = (await get(`?filter=_doc_ids&doc_ids=${encodeURIComponent(JSON.stringify(docIds))}`)).entries;
          if (describe(filtered) !== describe(only)) throw new Error(`doc_ids ${docIds}: ${describe(filtered)}, the feed's ${describe(only)}`);
          const filteredPages: Entry[] = [];
          since = '';
          for (let pages = 0; pages <= full.length + 1; pages++) {
            const page = await get(`?filter=_doc_ids&doc_ids=${encodeURIComponent(JSON.stringify(docIds))}&limit=${limit}${since}`);
            filteredPages.push(...page.entries);
            since = `&since=${encodeURIComponent(String(page.lastSeq))}`;
            if (page.entries.length < limit) break;
          }
          if (describe(filteredPages) !== describe(only)) throw new Error(`doc_ids ${docIds} in pages of ${limit}: ${describe(filteredPages)}, the feed's ${describe(only)}`);
          return true;
        } finally {
          await node.request('DELETE', at);
        }
      }),
      fcParams(40),
    );
  });
}
