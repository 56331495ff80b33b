// Gateway tenants, keys and quotas through the metadata group, on three real processes.
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

const MASTER = 'master-test-key-0123456789';

t.test('a tenant made on n2 authenticates and hits its quota on n3; a key revoked on n1 stops on n3', async (t) => {
  const c = await TestCluster.start(3, { SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_PORT: '0', SERVICE_GATEWAY_MASTER_KEY: MASTER });
  t.teardown(() => c.close());
  const admin = (node: string, method: string, path: string, body?: unknown) => c.request(node, method, path, { key: false, body, headers: { 'x-api-key': MASTER } });
  const call = (node: string, method: string, path: string, key: string, body?: unknown) => c.request(node, method, path, { key: false, body, headers: { 'x-api-key': key } });

  const made = await admin('n2', 'POST', '/admin/tenants', { tenant_id: 'acme', max_collections: 1, rpm_limit: 6 });
  t.equal(made.status, 201);
  const key = made.body.api_key as string;
  // Visible everywhere once applied (the write waited for n2 only).
  await waitFor(async () => (await admin('n3', 'GET', '/admin/tenants/acme')).status === 200, { what: 'the tenant on n3' });
  t.equal((await call('n3', 'POST', '/v1/collections', key, { name: 'docs', dimension: 2 })).status, 201);
  const over = await call('n3', 'POST', '/v1/collections', key, { name: 'more', dimension: 2 });
  t.same([over.status, over.body.error], [403, 'quota_exceeded']);

  // rpm_limit 6 over 3 up nodes: each node admits 2 a minute (docs/cluster.md).
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await call('n1', 'GET', '/v1/collections', key)).status);
  t.same(statuses, [200, 200, 429]);

  // A second key, revoked on n1: refused on n3 once applied.
  const second = await admin('n1', 'POST', '/admin/tenants/acme/keys', {});
  t.equal(second.status, 201);
  await waitFor(async () => (await call('n2', 'GET', '/v1/collections', second.body.api_key)).status === 200, { what: 'the second key on n2' });
  t.equal((await admin('n1', 'DELETE', `/admin/tenants/acme/keys/${second.body.key_id}`)).status, 200);
  await waitFor(async () => (await call('n3', 'GET', '/v1/collections', second.body.api_key)).status === 401, { what: 'the revoked key to fail on n3' });

  // Deleting the tenant on n1 revokes its first key everywhere.
  t.equal((await admin('n1', 'DELETE', '/admin/tenants/acme')).status, 200);
  await waitFor(async () => (await call('n3', 'GET', '/v1/collections', key)).status === 401, { what: 'the tenant gone on n3' });
});
