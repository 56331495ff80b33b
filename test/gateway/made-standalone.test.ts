// A gateway node that starts in cluster mode on a standalone node's data: the cluster's tenants
// are its metadata group's, so those made standalone are not served. Before, nothing said so:
// their keys were refused and /admin/tenants listed none.
import t from 'tap';
import { startClusterTestNode } from '../support/one-node-cluster.js';
import { request, startTestNode, tempDir } from '../support/node.js';
import { MASTER_KEY } from './support.js';

const GATEWAY = { SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_MASTER_KEY: MASTER_KEY, SERVICE_GATEWAY_PORT: '0' };

t.test("tenants made standalone are named in a cluster node's /health until the cluster has them", async (t) => {
  const dataDir = tempDir();
  const alone = await startTestNode({ ...GATEWAY, SERVICE_DATA_DIR: dataDir });
  const made = await request(alone.url, 'POST', '/admin/tenants', { key: false, headers: { 'x-api-key': MASTER_KEY }, body: { tenant_id: 'acme' } });
  t.equal(made.status, 201);
  t.equal((await alone.request('GET', '/health')).body.gateway.standalone_tenants_not_served, undefined, 'standalone: nothing to say');
  await alone.close();

  const node = await startClusterTestNode({ ...GATEWAY, SERVICE_DATA_DIR: dataDir });
  t.teardown(() => node.close());
  const admin = (await node.request('GET', '/health')).body.gateway;
  t.same(admin.standalone_tenants_not_served, ['acme'], 'an admin sees their ids');
  t.equal(admin.status, 'ok');
  const open = (await request(node.url, 'GET', '/health', { key: false })).body.gateway;
  t.equal(open.standalone_tenants_not_served, 1, 'a caller without a key sees a count');
  t.equal((await request(node.url, 'GET', '/v1/collections', { key: false, headers: { 'x-api-key': made.body.api_key } })).status, 401, 'the old key is refused');

  const again = await request(node.url, 'POST', '/admin/tenants', { key: false, headers: { 'x-api-key': MASTER_KEY }, body: { tenant_id: 'acme' } });
  t.equal(again.status, 201, 'made again in the cluster');
  t.same((await node.request('GET', '/health')).body.gateway.standalone_tenants_not_served, []);
});
