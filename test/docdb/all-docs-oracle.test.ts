// `_all_docs` over real HTTP against brute force, on a database and on a VDB of 3 shards (whose
// listing merges the shards' pages): random ids (any code point), deletes, and every listing
// option CouchDB clients send (`startkey`, `endkey`, `inclusive_end`, `descending`, `skip`,
// `limit`, `key`, `keys`, GET or POST): the rows, their order and `total_rows` must be brute
// force's (docs/docdb.md, `_all_docs`: code point order, deleted documents omitted).
import fc from 'fast-check';
import t from 'tap';
import { compareStrings } from '../../src/core/keys.js';
import { fcParams } from '../support/fc.js';
import { startTestNode } from '../support/node.js';

const TARGETS = [
  { kind: 'database', base: '/db', create: (name: string) => ({ method: 'PUT', path: `/db/${name}` }) },
  { kind: 'VDB of 3 shards', base: '/vdb', create: (name: string) => ({ method: 'POST', path: '/vdb', body: { name, shard_count: 3 } }) },
] as const;

// Short ids from a few letters and some far code points, so bounds fall between and on ids.
const arbId = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'é', '\u{1F600}', '\uFFFD', 'Z', '0'), minLength: 1, maxLength: 3 }).filter((s) => !s.startsWith('_'));
// A bound is often one of the ids (a number picks it), where inclusive_end decides.
const arbBound = fc.option(fc.oneof(fc.nat(), arbId, fc.constant('')), { nil: undefined, freq: 2 });

interface Listing {
  startkey: string | undefined;
  endkey: string | undefined;
  inclusiveEnd: boolean;
  descending: boolean;
  skip: number;
  limit: number | undefined;
}

/** The ids `_all_docs` lists for these options, by brute force. */
function bruteForce(live: readonly string[], o: Listing): string[] {
  const dir = o.descending ? -1 : 1;
  return [...live]
    .sort((a, b) => dir * compareStrings(a, b))
    .filter((id) => o.startkey === undefined || dir * compareStrings(id, o.startkey) >= 0)
    .filter((id) => o.endkey === undefined || (o.inclusiveEnd ? dir * compareStrings(id, o.endkey) <= 0 : dir * compareStrings(id, o.endkey) < 0))
    .slice(o.skip, o.limit === undefined ? undefined : o.skip + o.limit);
}

for (const target of TARGETS) {
  t.test(`oracle (${target.kind}): _all_docs lists what brute force lists, for every listing option`, async (t) => {
    const node = await startTestNode();
    t.teardown(() => node.close());
    let round = 0;
    let rowsSeen = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(arbId, { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.record({ startkey: arbBound, endkey: arbBound, inclusiveEnd: fc.boolean(), descending: fc.boolean(), skip: fc.nat({ max: 4 }), limit: fc.option(fc.nat({ max: 8 }), { nil: undefined }) }),
        fc.array(fc.oneof(arbId, fc.constant('missing')), { maxLength: 5 }),
        fc.boolean(),
        async (ids, deletes, drawn, keys, post) => {
        const bound = (b: number | string | undefined) => (typeof b === 'number' ? ids[b % ids.length]! : b);
        const listing: Listing = { ...drawn, startkey: bound(drawn.startkey), endkey: bound(drawn.endkey) };
          const name = `listing${round++}`;
          const create = target.create(name);
          const made = await node.request(create.method, create.path, 'body' in create ? { body: create.body } : {});
          if (made.status !== 201) throw new Error(`creating ${name} answered ${made.status}`);
          const at = `${target.base}/${name}`;
          try {
            const written = await node.request('POST', `${at}/_bulk_docs`, { body: { docs: ids.map((_id, i) => ({ _id, i })) } });
            if (written.status !== 201) throw new Error(`bulk write answered ${written.status}`);
            const results = (Array.isArray(written.body) ? written.body : written.body.results) as { id: string; rev: string }[];
            const revs = new Map(results.map((r) => [r.id, r.rev]));
            const deleted = new Set<string>();
            for (const d of deletes) {
              const id = ids[d % ids.length]!;
              if (deleted.has(id)) continue;
              const r = await node.request('DELETE', `${at}/${encodeURIComponent(id)}?rev=${revs.get(id)}`);
              if (r.status !== 200) throw new Error(`delete ${id} answered ${r.status}`);
              deleted.add(id);
              revs.set(id, r.body.rev);
            }
            const live = ids.filter((id) => !deleted.has(id));
            const params = new URLSearchParams();
            if (listing.startkey !== undefined) params.set('startkey', JSON.stringify(listing.startkey));
            if (listing.endkey !== undefined) params.set('endkey', JSON.stringify(listing.endkey));
            if (!listing.inclusiveEnd) params.set('inclusive_end', 'false');
            if (listing.descending) params.set('descending', 'true');
            if (listing.skip > 0) params.set('skip', String(listing.skip));
            if (listing.limit !== undefined) params.set('limit', String(listing.limit));
            const res = post ? await node.request('POST', `${at}/_all_docs?${params}`, { body: {} }) : await node.request('GET', `${at}/_all_docs?${params}`);
            if (res.status !== 200) throw new Error(`_all_docs?${params} answered ${res.status}: ${JSON.stringify(res.body)}`);
            const got = (res.body.rows as { id: string; key: string; value: { rev: string } }[]).map((r) => r.id);
            const want = bruteForce(live, listing);
            if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`_all_docs?${params} listed ${JSON.stringify(got)}, brute force ${JSON.stringify(want)}`);
            if (res.body.total_rows !== live.length) throw new Error(`total_rows ${res.body.total_rows}, ${live.length} live`);
            for (const r of res.body.rows as { id: string; key: string; value: { rev: string } }[]) {
              if (r.key !== r.id || r.value.rev !== revs.get(r.id)) throw new Error(`row ${JSON.stringify(r)}: rev ${revs.get(r.id)}`);
            }
            rowsSeen += got.length;
            // `keys`: one row per key, in the given order, whatever the other options say of ranges.
            if (keys.length > 0) {
              const byKeys = post ? await node.request('POST', `${at}/_all_docs`, { body: { keys } }) : await node.request('GET', `${at}/_all_docs?keys=${encodeURIComponent(JSON.stringify(keys))}`);
              if (byKeys.status !== 200) throw new Error(`keys ${JSON.stringify(keys)} answered ${byKeys.status}: ${JSON.stringify(byKeys.body)}`);
              const rows = byKeys.body.rows as { id?: string; key: string; error?: string; value?: { rev: string; deleted?: boolean } }[];
              if (rows.length !== keys.length) throw new Error(`keys ${JSON.stringify(keys)}: ${rows.length} rows`);
              for (const [i, key] of keys.entries()) {
                const row = rows[i]!;
                const wanted = !revs.has(key) ? { key, error: 'not_found' } : deleted.has(key) ? { id: key, key, value: { rev: revs.get(key), deleted: true } } : { id: key, key, value: { rev: revs.get(key) } };
                const seen = row.error !== undefined ? { key: row.key, error: row.error } : { id: row.id, key: row.key, value: row.value?.deleted === true ? { rev: row.value.rev, deleted: true } : { rev: row.value?.rev } };
                if (JSON.stringify(seen) !== JSON.stringify(wanted)) throw new Error(`keys row ${i}: ${JSON.stringify(row)}, expected ${JSON.stringify(wanted)}`);
              }
            }
            return true;
          } finally {
            await node.request('DELETE', at);
          }
        },
      ),
      fcParams(120),
    );
    t.ok(rowsSeen > 0, `listings had rows (${rowsSeen})`);
  });
}
