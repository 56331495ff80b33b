// /admin/tenants... over real HTTP: every route, error and the persistence of tenants and keys.
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { prefixRange } from '../../src/core/keys.js';
import { Store } from '../../src/storage/db.js';
import { MASTER_KEY, startGatewayNode } from './support.js';

t.test('config: the gateway refuses to start without a master key', async (t) => {
  t.throws(() => loadConfig({ SERVICE_GATEWAY_ENABLED: 'true' }), ConfigError);
  t.throws(() => loadConfig({ SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_MASTER_KEY: '  ' }), ConfigError);
  const c = loadConfig({ SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_MASTER_KEY: 'm', SERVICE_GATEWAY_DEFAULT_RPM: '7' });
  t.equal(c.gateway.defaultRpm, 7);
  t.equal(loadConfig({}).gateway.enabled, false);
});

t.test('admin routes', async (t) => {
  const gw = await startGatewayNode({ SERVICE_GATEWAY_DEFAULT_RPM: '55', SERVICE_GATEWAY_MAX_VECTORS: '1000' });
  t.teardown(() => gw.close());

  t.test('master key: missing 401 missing_api_key, wrong 401 invalid_master_key', async (t) => {
    for (const [method, path] of [
      ['GET', '/admin/tenants'],
      ['POST', '/admin/tenants'],
      ['GET', '/admin/tenants/acme'],
      ['PATCH', '/admin/tenants/acme'],
      ['DELETE', '/admin/tenants/acme'],
      ['POST', '/admin/tenants/acme/keys'],
      ['GET', '/admin/tenants/acme/keys'],
      ['DELETE', '/admin/tenants/acme/keys/0123456789abcdef'],
      ['GET', '/admin/tenants/acme/usage'],
    ] as const) {
      const none = await gw.call(method, path, undefined, method === 'GET' || method === 'DELETE' ? undefined : {});
      t.equal(none.status, 401, `${method} ${path} without key`);
      t.same(none.body.error, 'missing_api_key');
      t.type(none.body.message, 'string');
      const wrong = await gw.call(method, path, `${MASTER_KEY}x`);
      t.equal(wrong.status, 401);
      t.equal(wrong.body.error, 'invalid_master_key');
    }
    t.equal((await gw.call('GET', '/admin/tenants', '')).body.error, 'missing_api_key', 'an empty header is a missing key');
  });

  let acmeKey = '';
  let acmeKeyId = '';
  t.test('create tenant: 201 with the key once; defaults from config; 409 on a duplicate', async (t) => {
    const r = await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme', max_collections: 3 });
    t.equal(r.status, 201);
    t.equal(r.body.tenant_id, 'acme');
    t.match(r.body.api_key, /^gk_[A-Za-z0-9_-]{43}$/);
    t.match(r.body.key_id, /^[0-9a-f]{16}$/);
    t.equal(r.body.key_prefix, r.body.api_key.slice(0, 12));
    t.same(r.body.limits, { rpm_limit: 55, max_vectors: 1000, max_collections: 3, max_storage_mb: 1024 });
    acmeKey = r.body.api_key;
    acmeKeyId = r.body.key_id;
    const dup = await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme' });
    t.equal(dup.status, 409);
    t.equal(dup.body.error, 'conflict');
    t.equal((await gw.admin('POST', '/admin/tenants', { tenant_id: 'beta', rpm_limit: 5 })).status, 201);
  });

  t.test('create tenant: bad bodies are 400', async (t) => {
    for (const body of [
      {},
      { tenant_id: '' },
      { tenant_id: '../x' },
      { tenant_id: 'a/b' },
      { tenant_id: 'a b' },
      { tenant_id: 'a\nb' },
      { tenant_id: '_x' },
      { tenant_id: 'x'.repeat(65) },
      { tenant_id: 7 },
      { tenant_id: 'ok', rpm_limit: 0 },
      { tenant_id: 'ok', max_vectors: -1 },
      { tenant_id: 'ok', max_collections: 1.5 },
      { tenant_id: 'ok', extra: 1 },
      [],
      'x',
    ]) {
      const r = await gw.admin('POST', '/admin/tenants', body);
      t.equal(r.status, 400, JSON.stringify(body));
      t.equal(r.body.error, 'bad_request');
    }
    const slash = await gw.admin('POST', '/admin/tenants', { tenant_id: 'a/b' });
    t.match(slash.body.message, /letters, digits, "-", "_" or "\."/, 'the 400 names the rule');
    const broken = await gw.call('POST', '/admin/tenants', MASTER_KEY, '{"tenant_id":', { 'content-type': 'application/json' });
    t.equal(broken.status, 400);
  });

  t.test('list, get, patch', async (t) => {
    const list = await gw.admin('GET', '/admin/tenants');
    t.equal(list.status, 200);
    t.same(list.body.tenants.map((x: { tenant_id: string }) => x.tenant_id), ['acme', 'beta']);
    t.notOk(JSON.stringify(list.body).includes(acmeKey), 'no key in the list');
    const one = await gw.admin('GET', '/admin/tenants/acme');
    t.equal(one.status, 200);
    t.equal(one.body.limits.max_collections, 3);
    t.equal((await gw.admin('GET', '/admin/tenants/nobody')).status, 404);
    t.equal((await gw.admin('GET', '/admin/tenants/Unknown_Id')).status, 404);
    t.equal((await gw.admin('GET', '/admin/tenants/-bad')).status, 400);
    const patched = await gw.admin('PATCH', '/admin/tenants/acme', { max_vectors: 10, rpm_limit: 1000 });
    t.equal(patched.status, 200);
    t.same(patched.body.limits, { rpm_limit: 1000, max_vectors: 10, max_collections: 3, max_storage_mb: 1024 });
    t.equal((await gw.admin('PATCH', '/admin/tenants/acme', {})).status, 400, 'an empty patch');
    t.equal((await gw.admin('PATCH', '/admin/tenants/acme', { tenant_id: 'x' })).status, 400, 'the id is not a limit');
    t.equal((await gw.admin('PATCH', '/admin/tenants/nobody', { max_vectors: 1 })).status, 404);
  });

  let secondKey = '';
  let secondKeyId = '';
  t.test('keys: create (shown once), list (ids and prefixes), revoke only own keys', async (t) => {
    const created = await gw.admin('POST', '/admin/tenants/acme/keys', { rpm_limit: 20 });
    t.equal(created.status, 201);
    t.match(created.body, { tenant_id: 'acme', rpm_limit: 20 });
    t.match(created.body.api_key, /^gk_/);
    secondKey = created.body.api_key;
    secondKeyId = created.body.key_id;
    const noBody = await gw.admin('POST', '/admin/tenants/acme/keys');
    t.equal(noBody.status, 201, 'no body: a key without its own limit');
    t.equal(noBody.body.rpm_limit, null);
    t.equal((await gw.admin('POST', '/admin/tenants/nobody/keys', {})).status, 404, 'unknown tenant');
    t.equal((await gw.admin('POST', '/admin/tenants/acme/keys', { rpm_limit: 'many' })).status, 400);
    t.equal((await gw.admin('POST', '/admin/tenants/acme/keys', { max_vectors: 1 })).status, 400);

    const list = await gw.admin('GET', '/admin/tenants/acme/keys');
    t.equal(list.status, 200);
    t.equal(list.body.keys.length, 3);
    for (const k of list.body.keys) {
      t.same(Object.keys(k).sort(), ['created_at', 'key_id', 'key_prefix', 'rpm_limit', 'tenant_id']);
      t.equal(k.key_prefix.length, 12);
    }
    t.notOk(list.text.includes(acmeKey) || list.text.includes(secondKey), 'never the key itself');
    t.equal((await gw.admin('GET', '/admin/tenants/nobody/keys')).status, 404);

    const other = await gw.admin('DELETE', `/admin/tenants/beta/keys/${acmeKeyId}`);
    t.equal(other.status, 404, "acme's key cannot be revoked through beta");
    t.equal((await gw.admin('DELETE', '/admin/tenants/acme/keys/not-a-key-id')).status, 400);
    t.equal((await gw.admin('DELETE', '/admin/tenants/acme/keys/0123456789abcdef')).status, 404);
    const revoked = await gw.admin('DELETE', `/admin/tenants/acme/keys/${noBody.body.key_id}`);
    t.equal(revoked.status, 200);
    t.same(revoked.body, { status: 'revoked', key_id: noBody.body.key_id });
    t.equal((await gw.admin('DELETE', `/admin/tenants/acme/keys/${noBody.body.key_id}`)).status, 404, 'twice');
    t.equal((await gw.admin('GET', '/admin/tenants/acme/keys')).body.keys.length, 2);
  });

  t.test('usage of a new tenant', async (t) => {
    const u = await gw.admin('GET', '/admin/tenants/acme/usage');
    t.equal(u.status, 200);
    t.same(u.body, {
      usage: { tenant_id: 'acme', vector_count: 0, collection_count: 0, storage_bytes: 0 },
      limits: { rpm_limit: 1000, max_vectors: 10, max_collections: 3, max_storage_mb: 1024 },
    });
    t.equal((await gw.admin('GET', '/admin/tenants/nobody/usage')).status, 404);
  });

  t.test('tenant keys do not open admin routes, the master key does not open /v1', async (t) => {
    t.equal((await gw.call('GET', '/admin/tenants', acmeKey)).body.error, 'invalid_master_key');
  });

  t.test('the gateway hooks do not leak: other routes ignore X-Api-Key', async (t) => {
    const health = await gw.call('GET', '/health', undefined);
    t.equal(health.status, 200);
    t.equal(health.body.gateway.status, 'ok');
    const keys = await gw.call('GET', '/_keys', MASTER_KEY);
    t.equal(keys.status, 401, 'the document API still wants its Bearer key');
    t.equal(keys.body.error, 'unauthorized');
  });

  t.test('everything persists across a restart; keys are stored only as SHA-256', async (t) => {
    await gw.restart();
    const list = await gw.admin('GET', '/admin/tenants');
    t.same(list.body.tenants.map((x: { tenant_id: string }) => x.tenant_id), ['acme', 'beta']);
    t.equal((await gw.admin('GET', '/admin/tenants/acme')).body.limits.max_vectors, 10, 'patched limits');
    const keys = await gw.admin('GET', '/admin/tenants/acme/keys');
    t.same(keys.body.keys.map((k: { key_id: string }) => k.key_id).sort(), [acmeKeyId, secondKeyId].sort());
    await gw.node.close();
    const store = await Store.open(gw.dataDir);
    try {
      let bytes = '';
      for await (const [k, v] of store.entries('system', prefixRange([]))) bytes += k.toString('latin1') + v.toString('latin1');
      t.ok(bytes.includes('gateway.key'), 'the key records are there');
      t.notOk(bytes.includes(acmeKey.slice(3)) || bytes.includes(secondKey.slice(3)), 'no key in the system column family');
    } finally {
      await store.close();
    }
    await gw.restart();
  });

  t.test('delete tenant: its keys stop working at once', async (t) => {
    const r = await gw.admin('DELETE', '/admin/tenants/beta');
    t.equal(r.status, 200);
    t.match(r.body, { status: 'deleted', tenant_id: 'beta', keys_revoked: 1 });
    t.equal((await gw.admin('GET', '/admin/tenants/beta')).status, 404);
    t.equal((await gw.admin('DELETE', '/admin/tenants/beta')).status, 404);
    t.equal((await gw.admin('POST', '/admin/tenants', { tenant_id: 'beta' })).status, 201, 'the id can be reused');
  });

  t.test('tenant ids with "_" and "." work end to end and stay apart', async (t) => {
    const ids = ['acme_corp', 'acme.corp', 'acme.ucorp'];
    const keys: string[] = [];
    for (const id of ids) {
      const r = await gw.admin('POST', '/admin/tenants', { tenant_id: id });
      t.equal(r.status, 201, id);
      keys.push(r.body.api_key);
    }
    for (const [i, key] of keys.entries()) {
      t.equal((await gw.call('POST', '/v1/collections', key, { name: 'docs', dimension: 2 })).status, 201, `${ids[i]} creates docs`);
      const put = await gw.call('POST', '/v1/collections/docs/documents', key, { documents: [{ id: `d${i}`, vector: [i, 1], text: ids[i] }] });
      t.equal(put.status, 201);
    }
    for (const [i, key] of keys.entries()) {
      const list = await gw.call('GET', '/v1/collections', key);
      t.same(list.body.collections.map((c: { name: string }) => c.name), ['docs'], `${ids[i]} sees its own name`);
      t.equal((await gw.call('GET', `/v1/collections/docs/documents/d${i}`, key)).status, 200);
      for (const j of [0, 1, 2].filter((j) => j !== i)) {
        t.equal((await gw.call('GET', `/v1/collections/docs/documents/d${j}`, key)).status, 404, `${ids[i]} cannot read ${ids[j]}'s document`);
      }
      const usage = await gw.admin('GET', `/admin/tenants/${ids[i]}/usage`);
      t.equal(usage.body.usage.collection_count, 1);
    }
  });
});
