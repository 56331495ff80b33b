// Federations over real HTTP: two local members, one member on a second node process (with
// bearer auth), a member that is down, duplicates, global order and paging.
import fc from 'fast-check';
import t from 'tap';
import { exactTotal, mergeAnswers, mergeQueries } from '../../../src/docdb/federation/federation.js';
import { fcParams } from '../../support/fc.js';
import { TEST_ADMIN_KEY, request, startTestNode, tempDir } from '../../support/node.js';
import { spawnTestNode } from '../../support/process.js';

t.test('merge is pure: dedupe by winning revision, one order, global paging', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd', 'e'), gen: fc.integer({ min: 1, max: 3 }), v: fc.nat(9) }), { maxLength: 5 }), { minLength: 1, maxLength: 3 }),
      fc.nat(3),
      fc.option(fc.nat(4), { nil: undefined }),
      (members, offset, limit) => {
        const answers = members.map((docs, m) => {
          const unique = new Map(docs.map((d) => [d.id, { _id: d.id, _rev: `${d.gen}-${'ab'[d.v % 2]}`, v: d.v }]));
          return { member: `m${m}`, docs: [...unique.values()], total: unique.size };
        });
        const out = mergeAnswers(answers, { orderBy: [], offset, limit });
        const ids = out.results.map((d) => d._id as string);
        const all = [...new Set(answers.flatMap((a) => a.docs.map((d) => d._id)))].sort();
        if (JSON.stringify(ids) !== JSON.stringify(all.slice(offset, limit === undefined ? undefined : offset + limit))) return false;
        if (out.total !== all.length) return false;
        // every returned doc carries the highest revision any member had
        return out.results.every((d) => {
          const revs = answers.flatMap((a) => a.docs.filter((x) => x._id === d._id).map((x) => x._rev));
          return revs.every((r) => Number(r.split('-')[0]) < Number((d._rev as string).split('-')[0]) || r <= (d._rev as string));
        });
      },
    ),
    fcParams(300),
  );
  t.same(mergeQueries({ where: [{ path: ['a'], value: 1 }], limit: 5 }, { where: [{ path: ['b'], value: 2 }], limit: 2 }), {
    where: [{ path: ['a'], value: 1 }, { path: ['b'], value: 2 }],
    limit: 2,
  });
  t.end();
});

t.test('the exact total is the union of the id lists, unless a list is missing or cut', (t) => {
  fc.assert(
    fc.property(fc.array(fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { maxLength: 6 }), { minLength: 1, maxLength: 4 }), (lists) => {
      const unique = lists.map((l) => [...new Set(l)]);
      return exactTotal(unique, 10) === new Set(unique.flat()).size;
    }),
    fcParams(200),
  );
  t.equal(exactTotal([['a'], undefined], 10), undefined, 'a member that failed the id round');
  t.equal(exactTotal([['a', 'b', 'c'], ['a']], 2), undefined, 'a list past the cap');
  t.end();
});

t.test('federations over HTTP', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const remote = await spawnTestNode({ SERVICE_DATA_DIR: tempDir() });
  t.teardown(() => remote.stop());
  const callRemote = (method: string, path: string, body?: unknown) => request(remote.url, method, path, { body, key: TEST_ADMIN_KEY });

  await node.request('PUT', '/db/eu');
  await node.request('PUT', '/db/us');
  await node.request('POST', '/db/eu/_bulk_docs', { body: { docs: [{ _id: 'a', region: 'eu', n: 5 }, { _id: 'c', region: 'eu', n: 1 }, { _id: 'dup', src: 'eu-v1', n: 9 }] } });
  await node.request('POST', '/db/us/_bulk_docs', { body: { docs: [{ _id: 'b', region: 'us', n: 3 }, { _id: 'd', region: 'us', n: 8 }] } });
  await callRemote('PUT', '/db/asia');
  await callRemote('POST', '/db/asia/_bulk_docs', { docs: [{ _id: 'e', region: 'asia', n: 4 }, { _id: 'dup', src: 'asia-v1', n: 9 }] });
  // Make the remote copy of `dup` newer (generation 2): it must win the dedupe.
  const dup = await callRemote('GET', '/db/asia/dup');
  await callRemote('PUT', '/db/asia/dup', { _rev: dup.body._rev, src: 'asia-v2', n: 9 });

  const remoteMember = `${remote.url}/db/asia`;
  const created = await node.request('POST', '/_federation', {
    body: { name: 'world', members: ['eu', 'us', remoteMember], auth: { bearer_token: TEST_ADMIN_KEY }, query: { where: [{ path: ['n'], op: 'exists' }] } },
  });
  t.equal(created.status, 201);
  t.match(created.body, { ok: true, name: 'world', members: ['eu', 'us', remoteMember], has_auth: true });
  t.notMatch(JSON.stringify(created.body), TEST_ADMIN_KEY, 'credentials are never echoed');
  t.equal((await node.request('POST', '/_federation', { body: { name: 'world', members: ['eu'] } })).status, 409);
  for (const bad of [{ name: 'x', members: [] }, { name: 'x', members: ['nosuchdb'] }, { name: 'X!', members: ['eu'] }, { name: 'x', members: ['ftp://h/db/a'] }, { name: 'x', members: ['eu'], query: { where: [{ path: ['a'], op: 'zz' }] } }]) {
    t.equal((await node.request('POST', '/_federation', { body: bad })).status, 400, JSON.stringify(bad));
  }

  const all = await node.request('POST', '/_federation/world/_find', { body: {} });
  t.equal(all.status, 200);
  t.same(all.body.results.map((d: { _id: string }) => d._id), ['a', 'b', 'c', 'd', 'dup', 'e'], 'one global _id order');
  t.equal(all.body.results.find((d: { _id: string }) => d._id === 'dup').src, 'asia-v2', 'the winning revision wins the duplicate');
  t.match(all.body.meta, { total: 6, sources: ['eu', 'us', remoteMember], errors: {}, members_queried: 3 });

  const ordered = await node.request('POST', '/_federation/world/_find', { body: { order_by: [{ path: ['n'], dir: 'desc' }], limit: 2, offset: 1 } });
  t.same(ordered.body.results.map((d: { _id: string }) => d._id), ['d', 'a'], 'global order_by then offset/limit');
  // The members answer whole documents: the order is by a field the projection drops.
  const cut = await node.request('POST', '/_federation/world/_find', { body: { sort: [{ n: 'desc' }], fields: ['_id'], limit: 2, offset: 1 } });
  t.same(cut.body.results, [{ _id: 'd' }, { _id: 'a' }], 'fields apply after the merge');
  const idDesc = await node.request('POST', '/_federation/world/_find', { body: { sort: [{ _id: 'desc' }], fields: ['_id'], limit: 2 } });
  t.same(idDesc.body.results, [{ _id: 'e' }, { _id: 'dup' }], '_id descending over the members');
  const filtered = await node.request('POST', '/_federation/world/_find', { body: { where: [{ path: ['region'], value: 'us' }] } });
  t.same(filtered.body.results.map((d: { _id: string }) => d._id), ['b', 'd'], 'request where is AND-ed with the stored query');

  t.test('a virtual database is a member by its URL', async (t) => {
    t.equal((await callRemote('POST', '/vdb', { name: 'asiav', shard_count: 3 })).status, 201);
    await callRemote('POST', '/vdb/asiav/_bulk_docs', { docs: [{ _id: 'f', region: 'asia', n: 6 }, { _id: 'g', region: 'asia', n: 7 }] });
    const vdbMember = `${remote.url}/vdb/asiav`;
    t.equal((await node.request('POST', '/_federation', { body: { name: 'withvdb', members: ['us', vdbMember], auth: { bearer_token: TEST_ADMIN_KEY } } })).status, 201);
    const found = await node.request('POST', '/_federation/withvdb/_find', { body: { sort: [{ n: 'asc' }] } });
    t.same(found.body.results.map((d: { _id: string }) => d._id), ['b', 'f', 'g', 'd'], 'the VDB member merged with the database member');
    t.match(found.body.meta, { total: 4, sources: ['us', vdbMember], errors: {} });
    t.equal((await node.request('DELETE', '/_federation/withvdb')).status, 200);
  });

  t.test('total is exact with a limit: a document on two members outside every page counts once', async (t) => {
    // Pages of one: eu gives a, us b, asia dup; eu also holds dup, outside its page.
    const paged = await node.request('POST', '/_federation/world/_find', { body: { limit: 1 } });
    t.same(paged.body.results.map((d: { _id: string }) => d._id), ['a']);
    t.match(paged.body.meta, { total: 6, total_exact: true, limit: 1 });
    const counted = await node.request('POST', '/_federation/world/_find', { body: { limit: 0 } });
    t.match(counted.body.meta, { total: 6, total_exact: true });
    t.same(counted.body.results, []);
    // Each member is asked for offset + limit documents: past a `_find`'s largest limit, a 400 here.
    const far = await node.request('POST', '/_federation/world/_find', { body: { limit: 100_000, skip: 1 } });
    t.same([far.status, far.body.message], [400, 'offset + limit must be at most 100000 on a federation (each member is asked for that many), got 100001']);
  });

  t.test('execution_stats and warning: the members\' counts summed, the full scans named', async (t) => {
    const plain = await node.request('POST', '/_federation', { body: { name: 'plain', members: ['eu', remoteMember], auth: { bearer_token: TEST_ADMIN_KEY } } });
    t.equal(plain.status, 201);
    const scan = await node.request('POST', '/_federation/plain/_find', { body: { selector: { n: { $ne: 0 } }, execution_stats: true } });
    t.equal(scan.status, 200, scan.text);
    t.equal(scan.body.results.length, 4, 'a, c, dup and e (dup once)');
    t.match(scan.body.execution_stats, { total_docs_examined: 5, total_quorum_docs_examined: 0, results_returned: 4, execution_time_ms: Number }, 'every document of both members read: 3 + 2');
    t.match(scan.body.warning, new RegExp(`^no index could narrow this selector on eu, ${remoteMember.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:`), 'both members scanned, the remote one by its own warning');
    const narrowed = await node.request('POST', '/_federation/plain/_find', { body: { selector: { region: 'eu' } } });
    t.notOk('warning' in narrowed.body, 'an equality narrows on every member: no warning');
    t.notOk('execution_stats' in narrowed.body, 'execution_stats only when asked');
    t.equal((await node.request('DELETE', '/_federation/plain')).status, 200);
  });

  t.test('members are managed by URL-encoded path', async (t) => {
    const gone = 'http://127.0.0.1:1/db/nowhere';
    t.equal((await node.request('POST', `/_federation/world/members/${encodeURIComponent(gone)}`)).status, 200);
    const partial = await node.request('POST', '/_federation/world/_find', { body: {} });
    t.equal(partial.status, 200, 'a down member gives a partial result');
    t.match(partial.body.meta.errors[gone], /bad_gateway/);
    t.equal(partial.body.results.length, 6);
    t.equal((await node.request('DELETE', `/_federation/world/members/${encodeURIComponent(gone)}`)).status, 200);
    t.same((await node.request('GET', '/_federation/world')).body.members, ['eu', 'us', remoteMember]);
    const wrongAuth = await node.request('POST', '/_federation/world/_find', { body: { auth: { bearer_token: 'fk_wrong' } } });
    t.ok(wrongAuth.body.meta.errors[remoteMember], 'per-query auth overrides the stored one');
  });

  t.test('all members failing is a 502', async (t) => {
    await node.request('POST', '/_federation', { body: { name: 'dead', members: ['http://127.0.0.1:1/db/a', 'http://127.0.0.1:2/db/b'] } });
    const res = await node.request('POST', '/_federation/dead/_find', { body: {} });
    t.equal(res.status, 502);
    t.equal(res.body.error, 'bad_gateway');
  });

  t.test('list, get, update query, delete, persistence, admin only', async (t) => {
    t.same((await node.request('GET', '/_federation')).body.federations.map((f: { name: string }) => f.name), ['dead', 'world']);
    t.equal((await node.request('PUT', '/_federation/world', { body: { query: { where: [{ path: ['region'], value: 'eu' }] } } })).status, 200);
    t.same((await node.request('GET', '/_federation/world/_find')).body.results.map((d: { _id: string }) => d._id), ['a', 'c']);
    const key = (await node.request('POST', '/_keys', { body: { permissions: ['write'] } })).body.key;
    t.equal((await node.request('GET', '/_federation', { key })).status, 403);
    await node.restart();
    t.same((await node.request('GET', '/_federation/world')).body.query, { where: [{ path: ['region'], value: 'eu' }] }, 'persisted in JSON form');
    t.equal((await node.request('DELETE', '/_federation/dead')).status, 200);
    t.equal((await node.request('GET', '/_federation/dead')).status, 404);
    t.equal((await node.request('POST', '/_federation/dead/_find', { body: {} })).status, 404);
  });
});
