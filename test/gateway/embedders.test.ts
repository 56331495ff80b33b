// Tenant embedder URLs: refused unless the operator listed them (the node would otherwise
// send requests wherever a tenant says).
import t from 'tap';
import { startGatewayNode } from './support.js';

t.test('embedder url allow-list', async (t) => {
  const gw = await startGatewayNode({ SERVICE_GATEWAY_EMBEDDER_URLS: 'http://embed.internal:11434' });
  t.teardown(() => gw.close());
  const key = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme' })).body.api_key as string;
  const refused = await gw.call('POST', '/v1/collections', key, { name: 'a', dimension: 8, embedder: { type: 'ollama', url: 'http://169.254.169.254', model: 'm' } });
  t.equal(refused.status, 400);
  t.match(refused.body.message, /not allowed/);
  const listed = await gw.call('POST', '/v1/collections', key, { name: 'b', dimension: 8, embedder: { type: 'ollama', url: 'http://embed.internal:11434', model: 'm' } });
  t.equal(listed.status, 201);
  t.same(listed.body.embedder, { type: 'ollama', url: 'http://embed.internal:11434', model: 'm' });
  const defaultUrl = await gw.call('POST', '/v1/collections', key, { name: 'c', dimension: 8, embedder: { type: 'ollama', model: 'm' } });
  t.equal(defaultUrl.status, 201, 'no url: the node default');
  t.equal((await gw.admin('GET', '/admin/tenants/acme/usage')).body.usage.collection_count, 2, 'the refused one counts nothing');
});
