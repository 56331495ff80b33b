// Listings name only what the caller may read. /health is open (load balancers call it
// without a key), but gives figures only for the databases the caller's key may read, and a
// count for anyone; GET /vdb lists the VDBs the key may read (as GET /_all_dbs does).
import t from 'tap';
import { startTestNode } from '../support/node.js';
import { waitFor } from '../support/wait.js';

t.test('/health names only the databases the caller may read', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const db of ['ledger', 'notes', 'shop']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  const scoped = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['notes'] } })).body.key as string;
  const names = (body: { docdb: { databases: { name: string }[] } }) => body.docdb.databases.map((d) => d.name).sort();

  const anonymous = await node.request('GET', '/health', { key: false });
  t.equal(anonymous.status, 200, 'no key needed');
  t.equal(anonymous.body.status, 'ok');
  t.equal(anonymous.body.docdb.database_count, 3, 'anyone sees how many');
  t.same(anonymous.body.docdb.databases, [], 'but no names without a key');
  t.same(names((await node.request('GET', '/health', { key: 'fk_not-a-key' })).body), [], 'a bad key is no key (and no 401 for a probe)');
  t.same(names((await node.request('GET', '/health', { key: scoped })).body), ['notes'], 'a scoped key sees its own');
  t.same(names((await node.request('GET', '/health')).body), ['ledger', 'notes', 'shop'], 'the admin key sees every one');
  t.match((await node.request('GET', '/health')).body.docdb.databases[0], { doc_count: 0, open_feeds: 0 });
});

t.test('with auth off, everyone sees every database', async (t) => {
  const node = await startTestNode({ SERVICE_AUTH_DISABLED: 'true' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/open');
  t.same((await node.request('GET', '/health', { key: false })).body.docdb.databases.map((d: { name: string }) => d.name), ['open']);
});

t.test('GET /vdb lists the VDBs the key may read', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const name of ['orders', 'users']) t.equal((await node.request('POST', '/vdb', { body: { name, shard_count: 2 } })).status, 201);
  const scoped = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['orders'] } })).body.key as string;
  const names = async (key?: string) => ((await node.request('GET', '/vdb', key === undefined ? {} : { key })).body.vdbs as { name: string }[]).map((v) => v.name).sort();
  t.same(await names(), ['orders', 'users'], 'the admin key: every one');
  t.same(await names(scoped), ['orders'], 'a scoped key: its own');
  t.equal((await node.request('GET', '/vdb/users', { key: scoped })).status, 403, 'as GET /vdb/:vdb refuses the others');
});

t.test('replication tasks: a key sees those on databases it may read, removes only with write on all of them', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const db of ['src', 'dst', 'other']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  const made = await node.request('POST', '/db/src/_replicate', { body: { target: 'dst', continuous: true } });
  t.equal(made.status, 202, made.text);
  const id = made.body.task_id as string;
  const keyFor = async (permissions: string[], databases: string[]) => (await node.request('POST', '/_keys', { body: { permissions, databases } })).body.key as string;
  const outsider = await keyFor(['write'], ['other']);
  const reader = await keyFor(['read'], ['dst']);
  const halfWriter = await keyFor(['write'], ['src']);
  const owner = await keyFor(['write'], ['src', 'dst']);
  const listed = async (key: string) => ((await node.request('GET', '/_replications', { key })).body.replications as { task_id: string }[]).map((r) => r.task_id);

  t.same(await listed(outsider), [], 'a key on another database sees no task');
  t.equal((await node.request('GET', `/_replications/${id}`, { key: outsider })).status, 404, 'nor the task by its id');
  t.equal((await node.request('DELETE', `/_replications/${id}`, { key: outsider })).status, 404, 'and cannot delete it (it could before)');
  t.same(await listed(reader), [id], 'a reader of its target sees it');
  t.equal((await node.request('DELETE', `/_replications/${id}`, { key: reader })).status, 403, 'but may not delete it');
  t.equal((await node.request('DELETE', `/_replications/${id}`, { key: halfWriter })).status, 403, 'nor may a writer of its source alone');
  t.same(await listed(node.adminKey), [id], 'the admin key sees every task');
  t.equal((await node.request('DELETE', `/_replications/${id}`, { key: owner })).status, 200, 'a writer of both removes it');
  t.same(await listed(node.adminKey), []);
});

t.test('/health describes a failing replication task only to a key that may see the task', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const db of ['private', 'missing']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  // A continuous task whose target is then deleted fails and keeps retrying.
  const made = await node.request('POST', '/db/private/_replicate', { body: { target: 'missing', continuous: true } });
  t.equal(made.status, 202, made.text);
  t.equal((await node.request('DELETE', '/db/missing')).status, 200);
  await node.request('PUT', '/db/private/d1', { body: { v: 1 } });
  const problems = async (key?: string | false) => ((await node.request('GET', '/health', key === undefined ? {} : { key })).body.replication.problems ?? []) as string[];
  const admin = await waitFor(async () => {
    const p = await problems();
    return p.length > 0 ? p : undefined;
  }, { what: 'the failing task on /health' });
  t.match(admin, [new RegExp(`^replication ${made.body.task_id} \\(private -> missing\\) failing: `)], 'the admin key sees which task and why');
  const outsider = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['elsewhere'] } })).body.key as string;
  for (const key of [false, outsider] as const) {
    const seen = await problems(key);
    t.same(seen, ['1 failing replication task of databases this key may not read'], `${key === false ? 'no key' : 'another database\'s key'}: a count, no names`);
  }
  const health = (await node.request('GET', '/health', { key: false })).body;
  t.equal(health.status, 'degraded', 'the node is degraded for anyone');
  t.notOk(/private|missing/.test(JSON.stringify(health)), 'the databases are named nowhere in it');
});
