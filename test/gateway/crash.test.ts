// The node as a process: kill -9 after acknowledged gateway writes, start again on the same
// data, and every acknowledged tenant, key, collection, document and counter is there. Also:
// the process refuses to start with the gateway on and no master key.
import { rmSync } from 'node:fs';
import t from 'tap';
import { request, tempDir } from '../support/node.js';
import { runNodeExpectingExit, spawnTestNode } from '../support/process.js';
import { MASTER_KEY } from './support.js';

t.test('no master key: the node exits with the reason', async (t) => {
  const { code, output } = await runNodeExpectingExit({ SERVICE_DATA_DIR: tempDir(), SERVICE_GATEWAY_ENABLED: 'true' });
  t.not(code, 0);
  t.match(output, /SERVICE_GATEWAY_MASTER_KEY is required/);
});

t.test('kill -9 loses nothing acknowledged', async (t) => {
  const dataDir = tempDir('firkin-gateway-crash-');
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { SERVICE_DATA_DIR: dataDir, SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_PORT: '0', SERVICE_GATEWAY_MASTER_KEY: MASTER_KEY };
  const call = (url: string, method: string, path: string, key: string, body?: unknown) =>
    request(url, method, path, { key: false, headers: { 'x-api-key': key }, body });

  const first = await spawnTestNode(env);
  const created = await call(first.url, 'POST', '/admin/tenants', MASTER_KEY, { tenant_id: 'acme', max_vectors: 50 });
  const key = created.body.api_key as string;
  const second = (await call(first.url, 'POST', '/admin/tenants/acme/keys', MASTER_KEY, { rpm_limit: 1000 })).body;
  await call(first.url, 'POST', '/v1/collections', key, { name: 'docs', dimension: 2 });
  const documents = Array.from({ length: 20 }, (_, i) => ({ id: `d${i}`, vector: [1, i + 1], metadata: { i } }));
  t.equal((await call(first.url, 'POST', '/v1/collections/docs/documents', key, { documents })).status, 201);
  t.equal((await call(first.url, 'DELETE', '/v1/collections/docs/documents/d0', key)).status, 200);
  t.equal((await call(first.url, 'DELETE', `/admin/tenants/acme/keys/${created.body.key_id}`, MASTER_KEY)).status, 200);
  await first.kill9();

  const again = await spawnTestNode(env);
  t.teardown(() => again.stop());
  t.equal((await call(again.url, 'GET', '/v1/collections', key)).body.error, 'invalid_api_key', 'the revoked key stays revoked');
  const usage = (await call(again.url, 'GET', '/admin/tenants/acme/usage', MASTER_KEY)).body;
  t.same(usage.usage, { tenant_id: 'acme', vector_count: 19, collection_count: 1, storage_bytes: usage.usage.storage_bytes });
  t.equal(usage.limits.max_vectors, 50);
  const doc = await call(again.url, 'GET', '/v1/collections/docs/documents/d7', second.api_key);
  t.same(doc.body, { id: 'd7', text: '', metadata: { i: 7 } }, 'the second key works and the documents are there');
  t.equal((await call(again.url, 'GET', '/v1/collections/docs/documents/d0', second.api_key)).status, 404);
  const hits = await call(again.url, 'POST', '/v1/collections/docs/search', second.api_key, { vector: [1, 8], k: 1 });
  t.equal(hits.body.hits[0].id, 'd7', 'the index answers after the crash');
});
