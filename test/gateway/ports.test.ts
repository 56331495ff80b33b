// SERVICE_GATEWAY_PORT: equal to the HTTP port = one server; another port = a second listener
// that serves the gateway (and /health, /metrics), while the main port does not.
import net from 'node:net';
import t from 'tap';
import { request } from '../support/node.js';
import { MASTER_KEY, startGatewayNode } from './support.js';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test('same port: one server', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  t.equal(gw.node.gatewayUrl, gw.node.url);
});

t.test('another port: a second listener with only the gateway and platform routes', async (t) => {
  const gw = await startGatewayNode({ SERVICE_GATEWAY_PORT: String(await freePort()) });
  t.teardown(() => gw.close());
  t.not(gw.node.gatewayUrl, gw.node.url);
  const headers = { 'x-api-key': MASTER_KEY };
  t.equal((await request(gw.node.gatewayUrl!, 'GET', '/admin/tenants', { headers })).status, 200, 'admin on the gateway port');
  t.equal((await request(gw.node.url!, 'GET', '/admin/tenants', { headers })).status, 404, 'not on the main port');
  t.equal((await request(gw.node.gatewayUrl!, 'GET', '/health')).status, 200, '/health on both');
  await gw.restart();
  t.equal((await request(gw.node.gatewayUrl!, 'GET', '/admin/tenants', { headers })).status, 200, 'after a restart');
});

t.test('gateway off: no gateway routes', async (t) => {
  const gw = await startGatewayNode({ SERVICE_GATEWAY_ENABLED: 'false' });
  t.teardown(() => gw.close());
  t.equal(gw.node.gatewayUrl, undefined);
  t.equal((await request(gw.node.url!, 'GET', '/admin/tenants', { headers: { 'x-api-key': MASTER_KEY } })).status, 404);
});

t.test('standard API off: /v1 still works; on: its routes ignore X-Api-Key', async (t) => {
  const off = await startGatewayNode({ SERVICE_VECTORDB_ENABLED: 'false' });
  t.teardown(() => off.close());
  const key = (await off.admin('POST', '/admin/tenants', { tenant_id: 'acme' })).body.api_key as string;
  t.equal((await off.call('POST', '/v1/collections', key, { name: 'docs', dimension: 2 })).status, 201, '/v1 served');
  t.equal((await off.call('GET', '/vectordb/collections', undefined)).status, 404, 'no standard API');

  const on = await startGatewayNode();
  t.teardown(() => on.close());
  const std = await on.call('GET', '/vectordb/collections', undefined);
  t.equal(std.status, 200, 'the gateway hook does not reach the standard API');
  t.equal(std.headers.get('x-ratelimit-limit'), null);
});

t.test('main HTTP listener off: the gateway still gets its own', async (t) => {
  const gw = await startGatewayNode({ SERVICE_HTTP_ENABLED: 'false' });
  t.teardown(() => gw.close());
  t.equal(gw.node.url, undefined);
  t.equal((await gw.admin('GET', '/admin/tenants')).status, 200);
});
