// Cluster endpoints of the standard API on a standalone node, reshard errors, and mounting
// (custom prefix, switched off).
import t from 'tap';
import { startTestNode } from '../support/node.js';

t.test('standalone cluster endpoints and reshard errors', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let r = await node.request('GET', '/vectordb/cluster/status');
  t.same([r.status, r.body], [200, { state: 'standalone', is_leader: false, leader: null, node: 'test-node', nodes: ['test-node'], healthy_nodes: ['test-node'] }]);
  r = await node.request('GET', '/vectordb/cluster/nodes');
  t.same([r.status, r.body], [200, { nodes: ['test-node'] }]);
  r = await node.request('POST', '/vectordb/cluster/leave');
  t.same([r.status, r.body.error], [400, 'not_clustered']);
  t.type(r.body.message, 'string');
  r = await node.request('GET', '/vectordb/cluster/leave');
  t.same([r.status, r.body.error], [405, 'method_not_allowed']);

  await node.request('PUT', '/vectordb/collections/c', { body: { dimensions: 2, num_shards: 4 } });
  const bad: unknown[] = [{}, { num_shards: 0 }, { num_shards: 'two' }, { num_shards: 1.5 }, { num_shards: -1 }];
  for (const body of bad) {
    r = await node.request('POST', '/vectordb/collections/c/reshard', { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], JSON.stringify(body));
  }
  r = await node.request('POST', '/vectordb/collections/nope/reshard', { body: { num_shards: 2 } });
  t.same([r.status, r.body.error], [404, 'not_found']);
  r = await node.request('POST', '/vectordb/collections/c/reshard', { body: { num_shards: 4 } });
  t.same([r.status, r.body.error], [400, 'same_shard_count']);
  r = await node.request('POST', '/vectordb/collections/c/reshard', { body: { num_shards: 8 } });
  t.same([r.status, r.body.error], [400, 'not_clustered']);
});

t.test('cluster mode on but not joined: leave is not_member', async (t) => {
  const node = await startTestNode({ SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'test-cookie' });
  t.teardown(() => node.close());
  const r = await node.request('POST', '/vectordb/cluster/leave');
  t.same([r.status, r.body.error], [400, 'not_member']);
});

t.test('the standard API mounts under a custom prefix', async (t) => {
  const node = await startTestNode({ SERVICE_VECTORDB_PREFIX: '/api/vec' });
  t.teardown(() => node.close());
  let r = await node.request('PUT', '/api/vec/collections/c', { body: { dimensions: 2 } });
  t.equal(r.status, 201);
  r = await node.request('GET', '/api/vec/cluster/status');
  t.equal(r.body.state, 'standalone');
  r = await node.request('GET', '/vectordb/collections');
  t.equal(r.status, 404);
});

t.test('the standard API can be switched off', async (t) => {
  const node = await startTestNode({ SERVICE_VECTORDB_ENABLED: 'false' });
  t.teardown(() => node.close());
  const r = await node.request('GET', '/vectordb/collections');
  t.same([r.status, r.body.error], [404, 'not_found']);
  t.notOk(node.node.routes.some((route) => route.url.startsWith('/vectordb')));
});
