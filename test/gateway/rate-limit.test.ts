// Rate limits over real HTTP with the node's clock moved by hand: no sleeping.
import t from 'tap';
import { startGatewayNode } from './support.js';

t.test('tenant bucket: exactly rpm requests in a burst, then 429 with headers, refill at rpm/60 per second', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const key = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme', rpm_limit: 3 })).body.api_key as string;
  for (let i = 0; i < 3; i++) {
    const r = await gw.call('GET', '/v1/collections', key);
    t.equal(r.status, 200, `request ${i + 1}`);
    t.equal(r.headers.get('x-ratelimit-limit'), '3');
    t.equal(r.headers.get('x-ratelimit-remaining'), String(2 - i));
  }
  const refused = await gw.call('GET', '/v1/collections', key);
  t.equal(refused.status, 429);
  t.equal(refused.body.error, 'rate_limit_exceeded');
  t.type(refused.body.message, 'string');
  t.equal(refused.headers.get('retry-after'), '20', '3 rpm: one token every 20 s');
  t.equal(refused.headers.get('x-ratelimit-limit'), '3');
  t.equal(refused.headers.get('x-ratelimit-remaining'), '0');
  // Refused requests cost nothing, and bad bodies are counted like any request.
  gw.clock.advance(19_999);
  t.equal((await gw.call('GET', '/v1/collections', key)).status, 429, 'not yet');
  gw.clock.advance(1);
  const back = await gw.call('POST', '/v1/collections', key, { bad: true });
  t.equal(back.status, 400, 'one token back after 20 s (spent on a bad body)');
  t.equal((await gw.call('GET', '/v1/collections', key)).status, 429);
  gw.clock.advance(60_000);
  for (let i = 0; i < 3; i++) t.equal((await gw.call('GET', '/v1/collections', key)).status, 200, 'full again after a minute');
  t.equal((await gw.call('GET', '/v1/collections', key)).status, 429, 'never more than the capacity');

  // Failed authentication and admin routes take no tokens.
  t.equal((await gw.call('GET', '/v1/collections', 'gk_wrong')).status, 401);
  t.equal((await gw.admin('GET', '/admin/tenants/acme/usage')).status, 200);

  // PATCH of the limit applies at once.
  await gw.admin('PATCH', '/admin/tenants/acme', { rpm_limit: 600 });
  gw.clock.advance(100);
  const patched = await gw.call('GET', '/v1/collections', key);
  t.equal(patched.status, 200, '600 rpm: a token every 100 ms');
  t.equal(patched.headers.get('x-ratelimit-limit'), '600');
});

t.test('per-key limit: both the key and the tenant need a token', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const first = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme', rpm_limit: 5 })).body.api_key as string;
  const limited = (await gw.admin('POST', '/admin/tenants/acme/keys', { rpm_limit: 2 })).body.api_key as string;
  t.equal((await gw.call('GET', '/v1/collections', limited)).headers.get('x-ratelimit-limit'), '2');
  t.equal((await gw.call('GET', '/v1/collections', limited)).status, 200);
  const keyEmpty = await gw.call('GET', '/v1/collections', limited);
  t.equal(keyEmpty.status, 429, "the key's own bucket is empty");
  t.equal(keyEmpty.headers.get('retry-after'), '30');
  t.equal(keyEmpty.headers.get('x-ratelimit-limit'), '2');
  for (let i = 0; i < 3; i++) t.equal((await gw.call('GET', '/v1/collections', first)).status, 200, `tenant token ${i + 3}`);
  t.equal((await gw.call('GET', '/v1/collections', first)).status, 429, 'the tenant bucket (5) is shared by its keys');
  gw.clock.advance(30_000);
  t.equal((await gw.call('GET', '/v1/collections', limited)).status, 200, 'after 30 s: 1 key token, 2.5 tenant tokens');
});

t.test('buckets are per tenant', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const a = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'a', rpm_limit: 1 })).body.api_key as string;
  const b = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'b', rpm_limit: 1 })).body.api_key as string;
  t.equal((await gw.call('GET', '/v1/collections', a)).status, 200);
  t.equal((await gw.call('GET', '/v1/collections', a)).status, 429);
  t.equal((await gw.call('GET', '/v1/collections', b)).status, 200, "a's empty bucket does not touch b");
  const metrics = (await gw.call('GET', '/metrics', undefined)).text;
  t.match(metrics, /firkin_gateway_refused_total\{tenant="a",reason="rate_limit"\} 1/);
  t.notMatch(metrics, /firkin_gateway_refused_total\{tenant="b"/);
});
