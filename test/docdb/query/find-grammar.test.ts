// `_find` over real HTTP with conditions drawn from the whole query grammar (every operator,
// nested `$and`/`$or`/`$not`/`$elemMatch`, several top-level conditions so plans narrow one
// scan by the others' keys), as a selector or as a `where` list, sorted or not, paged by offset
// or by bookmark: the answer, its order and its total must be brute force's, and `_explain` must
// answer (test/support/find-oracle.ts). find.test.ts's oracles draw from fixed lists; this one
// reaches plans they do not. test/cluster/vdb-shards.test.ts runs it on a VDB across processes.
import fc from 'fast-check';
import t from 'tap';
import { fcParams } from '../../support/fc.js';
import { arbFindCase, findRound } from '../../support/find-oracle.js';
import { startTestNode } from '../../support/node.js';

/** Where the documents live: a database, or a VDB whose shards' pages `_find` merges. */
const TARGETS = [
  { kind: 'database', base: '/db', create: (name: string) => ({ method: 'PUT', path: `/db/${name}` }) },
  { kind: 'VDB of 3 shards', base: '/vdb', create: (name: string) => ({ method: 'POST', path: '/vdb', body: { name, shard_count: 3 } }) },
] as const;

for (const target of TARGETS) {
  t.test(`oracle (${target.kind}): any condition of the grammar, as a selector or a where list, answers what brute force answers`, async (t) => {
    const node = await startTestNode();
    t.teardown(() => node.close());
    const send = (method: string, path: string, body?: unknown) => node.request(method, path, body === undefined ? {} : { body });
    let round = 0;
    let asWhere = 0;
    let hits = 0;
    await fc.assert(
      fc.asyncProperty(arbFindCase, async (c) => {
        const name = `grammar${round++}`;
        const create = target.create(name);
        const made = await send(create.method, create.path, 'body' in create ? create.body : undefined);
        if (made.status !== 201) throw new Error(`creating ${name} answered ${made.status}`);
        const at = `${target.base}/${name}`;
        try {
          const r = await findRound(send, at, c, '');
          if (r.asWhere) asWhere++;
          if (r.matched > 0) hits++;
          if (r.mismatch !== undefined) throw new Error(r.mismatch);
        } finally {
          await send('DELETE', at);
        }
      }),
      fcParams(150),
    );
    t.ok(asWhere > 0, `some queries went as where lists (${asWhere})`);
    t.ok(hits > 0, `some queries matched documents (${hits})`);
  });
}
