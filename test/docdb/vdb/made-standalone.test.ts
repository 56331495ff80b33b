// A node that starts in cluster mode on a standalone node's data keeps serving the VDBs it
// made standalone (node-local, as its plain databases and collections stay), beside the
// cluster's. Before, they were gone from /vdb and their shards showed as plain databases.
import t from 'tap';
import { startClusterTestNode } from '../../support/one-node-cluster.js';
import { startTestNode, tempDir } from '../../support/node.js';
import { localFirstVdbs } from '../../../src/docdb/vdb/local-first.js';
import type { VdbService } from '../../../src/docdb/vdb/service.js';

/** A service whose every method answers `[who, method]`; `has` and `list` from `names`. */
function fakeVdbs(who: string, names: string[]): VdbService {
  return new Proxy({} as VdbService, {
    get: (_, method: string) => {
      if (method === 'has') return (name: string) => names.includes(name);
      if (method === 'list') return () => names;
      return async () => [who, method];
    },
  });
}

t.test('each call on a name goes to the service that has it; new names to the cluster', async (t) => {
  const vdbs = localFirstVdbs(fakeVdbs('local', ['l']), fakeVdbs('cluster', ['c']));
  const named = Object.keys(localFirstVdbs(fakeVdbs('x', []), fakeVdbs('y', []))).filter((m) => !['create', 'list', 'has'].includes(m));
  t.ok(named.length >= 25, 'every per-VDB method');
  for (const method of named) {
    const call = (name: string) => (vdbs as unknown as Record<string, (name: string) => Promise<unknown>>)[method]!(name);
    t.same(await call('l'), ['local', method], `${method} of a local VDB`);
    t.same(await call('c'), ['cluster', method], `${method} of a cluster VDB`);
    t.same(await call('new'), ['cluster', method], `${method} of an unknown name goes to the cluster (its not_found)`);
  }
  t.same(vdbs.list(), ['c', 'l']);
  t.ok(vdbs.has('l') && vdbs.has('c') && !vdbs.has('new'));
  await t.rejects(vdbs.create({ name: 'l' } as never), /already exists \(node-local/);
  t.same(await vdbs.create({ name: 'n' } as never), ['cluster', 'create']);
});

t.test("VDBs made standalone are served beside the cluster's after the node joins a cluster", async (t) => {
  const dataDir = tempDir();
  const alone = await startTestNode({ SERVICE_DATA_DIR: dataDir });
  t.equal((await alone.request('POST', '/vdb', { body: { name: 'mine', shard_count: 2 } })).status, 201);
  t.equal((await alone.request('PUT', '/vdb/mine/a', { body: { n: 1 } })).status, 201);
  await alone.close();

  const node = await startClusterTestNode({ SERVICE_DATA_DIR: dataDir });
  t.teardown(() => node.close());
  const a = await node.request('GET', '/vdb/mine/a');
  t.equal(a.status, 200);
  t.equal(a.body.n, 1, 'a document written standalone reads back');
  t.equal((await node.request('PUT', '/vdb/mine/b', { body: { n: 2 } })).status, 201, 'and it takes writes');
  const all = await node.request('GET', '/vdb/mine/_all_docs');
  t.same(
    all.body.rows.map((r: { id: string }) => r.id),
    ['a', 'b'],
  );
  t.equal((await node.request('GET', '/vdb/mine')).body.shard_count, 2);

  const taken = await node.request('POST', '/vdb', { body: { name: 'mine' } });
  t.equal(taken.status, 409, 'the cluster cannot make a VDB the local one would hide here');
  t.match(taken.body.message, /already exists \(node-local/);

  t.equal((await node.request('POST', '/vdb', { body: { name: 'shared', shard_count: 1 } })).status, 201, "a new VDB is the cluster's");
  t.equal((await node.request('PUT', '/vdb/shared/x', { body: { n: 3 } })).status, 201);
  t.equal((await node.request('GET', '/vdb/shared/x')).body.n, 3);
  const listed = await node.request('GET', '/vdb');
  t.same(
    listed.body.vdbs.map((v: { name?: string } | string) => (typeof v === 'string' ? v : v.name)),
    ['mine', 'shared'],
  );
});
