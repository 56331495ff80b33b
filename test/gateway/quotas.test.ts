// Quotas at their edges, and the registry reconciled with the vector engine at start-up
// (the engine changed behind the gateway's back stands in for a crash between the two writes).
import t from 'tap';
import { internalName } from '../../src/gateway/names.js';
import { startGatewayNode } from './support.js';

t.test('quotas of zero, storage quota, lowered limits', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const none = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'none', max_collections: 0 })).body.api_key as string;
  const r = await gw.call('POST', '/v1/collections', none, { name: 'docs', dimension: 2 });
  t.equal(r.status, 403);
  t.equal(r.body.error, 'quota_exceeded');
  t.match(r.body.message, /max_collections 0/);
  t.equal(r.headers.get('x-ratelimit-limit'), '100', 'rate-limit headers on errors after admission too');

  const tiny = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'tiny', max_storage_mb: 0 })).body.api_key as string;
  t.equal((await gw.call('POST', '/v1/collections', tiny, { name: 'docs', dimension: 2 })).status, 201);
  const big = await gw.call('POST', '/v1/collections/docs/documents', tiny, { id: 'a', vector: [1, 0] });
  t.equal(big.status, 403, 'any byte exceeds max_storage_mb 0');
  t.match(big.body.message, /storage quota/);

  const some = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'some', max_vectors: 3 })).body.api_key as string;
  await gw.call('POST', '/v1/collections', some, { name: 'docs', dimension: 2 });
  t.equal((await gw.call('POST', '/v1/collections/docs/documents', some, { documents: [{ id: 'a', vector: [1, 0] }, { id: 'a', vector: [0, 1] }, { id: 'b', vector: [1, 1] }] })).status, 201, 'a repeated id counts once');
  t.equal((await gw.admin('GET', '/admin/tenants/some/usage')).body.usage.vector_count, 2);
  t.same((await gw.call('GET', '/v1/collections/docs/documents/a', some)).body.id, 'a');
  await gw.admin('PATCH', '/admin/tenants/some', { max_vectors: 1 });
  t.equal((await gw.call('POST', '/v1/collections/docs/documents', some, { id: 'c', vector: [1, 0] })).status, 403, 'a lowered limit refuses new ids');
  t.equal((await gw.call('POST', '/v1/collections/docs/documents', some, { id: 'a', vector: [1, 0] })).status, 201, 'and still takes overwrites');
  t.equal((await gw.call('DELETE', '/v1/collections/docs/documents/a', some)).status, 200, 'and deletes');

  const metrics = (await gw.call('GET', '/metrics', undefined)).text;
  t.match(metrics, /firkin_gateway_refused_total\{tenant="none",reason="quota"\} 1/);
  t.match(metrics, /firkin_gateway_refused_total\{tenant="some",reason="quota"\} 1/);
  t.match(metrics, /firkin_gateway_vectors\{tenant="some"\} 1/);
  t.match(metrics, /firkin_gateway_collections\{tenant="tiny"\} 1/);
  t.match(metrics, /firkin_gateway_storage_bytes\{tenant="some"\} \d+/);
});

t.test('start-up reconciles the registry with the vector engine', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const key = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme' })).body.api_key as string;
  await gw.call('POST', '/v1/collections', key, { name: 'kept', dimension: 2 });
  await gw.call('POST', '/v1/collections', key, { name: 'lost', dimension: 2 });
  await gw.call('POST', '/v1/collections/kept/documents', key, { id: 'a', vector: [1, 0] });
  // Behind the gateway: two more documents in one collection, the other collection gone.
  const kept = internalName('acme', 'kept');
  for (const id of ['b', 'c']) t.equal((await gw.call('POST', `/vectordb/collections/${kept}/docs`, undefined, { id, vector: [0, 1] })).status < 300, true);
  t.equal((await gw.call('DELETE', `/vectordb/collections/${internalName('acme', 'lost')}`, undefined)).status, 200);
  await gw.restart();
  const usage = (await gw.admin('GET', '/admin/tenants/acme/usage')).body.usage;
  t.equal(usage.vector_count, 3, 'the count comes from the engine');
  // Each document as its write counts it: id, text, metadata's JSON, 4 bytes a dimension.
  t.equal(usage.storage_bytes, 3 * (1 + 2 * 4), 'and so do the stored bytes (they were 9: the two documents behind the gateway went uncounted)');
  t.equal(usage.collection_count, 1, 'the vanished collection is dropped');
  t.same((await gw.call('GET', '/v1/collections', key)).body.collections.map((c: { name: string }) => c.name), ['kept']);
  t.equal((await gw.call('POST', '/v1/collections', key, { name: 'lost', dimension: 2 })).status, 201, 'and its name is free again');
});

t.test('an overwrite of a document without text or metadata leaves the stored bytes as they were', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const key = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme' })).body.api_key as string;
  await gw.call('POST', '/v1/collections', key, { name: 'docs', dimension: 2 });
  const bytes = async () => (await gw.admin('GET', '/admin/tenants/acme/usage')).body.usage.storage_bytes as number;
  t.equal((await gw.call('POST', '/v1/collections/docs/documents', key, { id: 'a', vector: [1, 0] })).status, 201);
  t.equal(await bytes(), 1 + 2 * 4);
  // The old document reads back with text '' and metadata {}: it used to subtract 2 bytes more than its write added.
  for (let i = 0; i < 3; i++) t.equal((await gw.call('POST', '/v1/collections/docs/documents', key, { id: 'a', vector: [0, 1] })).status, 201);
  t.equal(await bytes(), 1 + 2 * 4, 'three overwrites later');
});

t.test('a leftover engine collection without a record is replaced on create', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const key = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme' })).body.api_key as string;
  const internal = internalName('acme', 'docs');
  t.equal((await gw.call('PUT', `/vectordb/collections/${internal}`, undefined, { dimensions: 2 })).status, 201);
  await gw.call('POST', `/vectordb/collections/${internal}/docs`, undefined, { id: 'stale', vector: [1, 0] });
  t.equal((await gw.call('POST', '/v1/collections', key, { name: 'docs', dimension: 3 })).status, 201);
  const info = await gw.call('GET', '/v1/collections/docs', key);
  t.match(info.body, { dimension: 3, count: 0 }, 'a fresh collection, not the leftover');
});

t.test('concurrent writes of one tenant never overshoot a quota', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  const key = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme', max_collections: 2, max_vectors: 10 })).body.api_key as string;
  const creates = await Promise.all(Array.from({ length: 8 }, (_, i) => gw.call('POST', '/v1/collections', key, { name: `c${i}`, dimension: 2 })));
  t.equal(creates.filter((r) => r.status === 201).length, 2, 'exactly max_collections created');
  t.ok(creates.every((r) => r.status === 201 || r.body.error === 'quota_exceeded'));
  const name = creates.findIndex((r) => r.status === 201);
  const writes = await Promise.all(
    Array.from({ length: 30 }, (_, i) => gw.call('POST', `/v1/collections/c${name}/documents`, key, { id: `d${i}`, vector: [1, i + 1] })),
  );
  t.equal(writes.filter((r) => r.status === 201).length, 10, 'exactly max_vectors written');
  const usage = (await gw.admin('GET', '/admin/tenants/acme/usage')).body.usage;
  t.equal(usage.vector_count, 10);
  t.equal(usage.collection_count, 2);
  t.equal((await gw.call('GET', `/v1/collections/c${name}`, key)).body.count, 10, 'and the engine agrees');
});
