// CouchDB's `execution_stats: true` on `_find`: what the answer read (index entries,
// documents) and how long it took; absent unless asked. And its `warning` on a full scan. Databases and VDBs (summed over
// shards). It was accepted and ignored.
import t from 'tap';
import { startTestNode } from '../../support/node.js';

interface Stats {
  total_keys_examined: number;
  total_docs_examined: number;
  total_quorum_docs_examined: number;
  results_returned: number;
  execution_time_ms: number;
}

t.test('execution_stats on a database and a VDB', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/s')).status, 201);
  const docs = Array.from({ length: 40 }, (_, i) => ({ _id: `d${String(i).padStart(2, '0')}`, color: i % 4 === 0 ? 'red' : 'blue', n: i }));
  t.equal((await node.request('POST', '/db/s/_bulk_docs', { body: { docs } })).status, 201);
  const find = async (path: string, body: Record<string, unknown>) => {
    const r = await node.request('POST', path, { body });
    t.equal(r.status, 200, r.text);
    return r.body as { docs: { _id: string }[]; execution_stats?: Stats };
  };

  t.notOk('execution_stats' in (await find('/db/s/_find', { selector: { color: 'red' } })), 'only when asked');
  t.notOk('stats' in (await find('/db/s/_find', { selector: { color: 'red' } })), 'and the executor\'s counters never leak');

  const byIndex = await find('/db/s/_find', { selector: { color: 'red', n: { $gt: 10 } }, execution_stats: true });
  const s1 = byIndex.execution_stats!;
  t.equal(s1.results_returned, byIndex.docs.length);
  t.equal(byIndex.docs.length, 7, 'red documents past n 10');
  t.ok(s1.total_keys_examined >= 7 && s1.total_keys_examined <= 40, `an index scan reads some postings (${s1.total_keys_examined})`);
  t.ok(s1.total_docs_examined >= 7 && s1.total_docs_examined < 40, `and fewer documents than a full scan (${s1.total_docs_examined})`);
  t.equal(s1.total_quorum_docs_examined, 0);
  t.ok(s1.execution_time_ms >= 0);

  const scan = await find('/db/s/_find', { selector: { n: { $ne: 3 } }, execution_stats: true });
  t.equal(scan.execution_stats!.total_docs_examined, 40, 'a full scan reads every document');
  t.equal(scan.execution_stats!.results_returned, 39);

  t.equal((await node.request('POST', '/vdb', { body: { name: 'v', shard_count: 3 } })).status, 201);
  t.equal((await node.request('POST', '/vdb/v/_bulk_docs', { body: { docs } })).status, 201);
  const vdb = await find('/vdb/v/_find', { selector: { n: { $ne: 3 } }, execution_stats: true });
  t.equal(vdb.execution_stats!.total_docs_examined, 40, `a VDB sums its shards: ${JSON.stringify(vdb.execution_stats)}`);
  t.equal(vdb.execution_stats!.results_returned, 39);
  t.notOk('stats' in (await find('/vdb/v/_find', { selector: {} })));
  t.equal((await node.request('POST', '/db/s/_find', { body: { selector: {}, execution_stats: 'yes' } })).status, 400);

  // CouchDB's `warning`: a selector no index could narrow says so; an indexed one and "everything" do not.
  t.match((await find('/db/s/_find', { selector: { n: { $ne: 3 } } })) as object, { warning: /no index could narrow this selector \(.+\): every document was read/ });
  t.match((await find('/vdb/v/_find', { selector: { n: { $ne: 3 } } })) as object, { warning: /every document was read/ }, 'from a VDB\'s shards too');
  t.notOk('warning' in (await find('/db/s/_find', { selector: { color: 'red' } })), 'an index served it');
  t.notOk('warning' in (await find('/db/s/_find', { selector: {} })), 'everything was asked for');
});
