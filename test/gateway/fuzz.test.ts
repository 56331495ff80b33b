// Every gateway route with random params and bodies, as the master and as a tenant: bad input
// gets a 4xx, never a 5xx, and the node stays healthy. (The node-wide fuzzer runs without the
// gateway, so the gateway's routes are fuzzed here.)
import { encode } from 'cbor-x';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { fcSequenceParams } from '../support/fc.js';
import { oneNodeClusterEnv, waitForMember } from '../support/one-node-cluster.js';
import { type GatewayNode, MASTER_KEY, startGatewayNode } from './support.js';

const arbSegment = fc.oneof(
  fc.constantFrom('acme', 'docs', 'a', 'a_b', '53bc_acme_docs', '0123456789abcdef', '..', '%00', 'UPPER', 'x'.repeat(80), 'constructor', 'tostring', 'toString', '__proto__'),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);
const arbJson = fc.jsonValue({ maxDepth: 3 });
const arbBody = fc.oneof(
  fc.constant(undefined),
  arbJson,
  fc.dictionary(
    fc.constantFrom('tenant_id', 'rpm_limit', 'max_vectors', 'max_collections', 'max_storage_mb', 'name', 'dimension', 'embedder', 'id', 'text', 'vector', 'metadata', 'documents', 'query', 'k', 'filter'),
    fc.oneof(arbJson, fc.array(fc.double(), { maxLength: 4 }), fc.constantFrom({ type: 'hash' }, { type: 'ollama', url: 'x' }, [{ id: 'a', vector: [1, 0] }])),
    { maxKeys: 5 },
  ),
);

/** Every gateway route of `gw` with `runs` random requests: no 5xx, and healthy after. */
async function fuzz(t: Test, gw: GatewayNode, runs: number): Promise<void> {
  // A tenant and a collection named as Object.prototype's members, which a lookup in a plain object finds.
  const odd = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'constructor', rpm_limit: 10_000_000 })).body.api_key as string;
  const made = await gw.call('POST', '/v1/collections', odd, { name: 'tostring', dimension: 2 });
  t.equal(made.status, 201, made.text);
  t.equal((await gw.call('POST', '/v1/collections', odd, { name: 'constructor', dimension: 2 })).status, 201);
  const tenantKey = (await gw.admin('POST', '/admin/tenants', { tenant_id: 'acme', rpm_limit: 10_000_000 })).body.api_key as string;
  await gw.call('POST', '/v1/collections', tenantKey, { name: 'docs', dimension: 2 });
  await gw.call('POST', '/v1/collections', tenantKey, { name: 'a', dimension: 2, embedder: { type: 'hash' } });
  const routes = gw.node.routes.filter((r) => r.url.startsWith('/admin') || r.url.startsWith('/v1'));
  t.ok(routes.length >= 17, `${routes.length} gateway routes`);
  const failures: string[] = [];
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), fc.array(arbSegment, { minLength: 3, maxLength: 3 }), arbBody, fc.boolean(), async (route, segments, body, cbor) => {
      let i = 0;
      const path = route.url.replace(/:[A-Za-z_]+/g, () => segments[i++]!);
      const key = route.url.startsWith('/admin') ? MASTER_KEY : tenantKey;
      const headers: Record<string, string> = { 'x-api-key': key };
      let payload: string | Buffer | undefined;
      if (route.method !== 'GET' && body !== undefined) {
        headers['content-type'] = cbor ? 'application/cbor' : 'application/json';
        payload = cbor ? encode(body) : JSON.stringify(body);
      }
      const res = await fetch(gw.url + path, { method: route.method, headers, body: payload });
      const answer = await res.text();
      if (res.status >= 500) failures.push(`${route.method} ${path} ${JSON.stringify(body)} -> ${res.status} ${answer.slice(0, 300)}`);
      return true; // collected in `failures`, said below with their answers
    }),
    fcSequenceParams(runs, (text) => t.comment(text)),
  );
  t.same(failures, []);
  t.equal((await gw.call('GET', '/health', undefined)).status, 200);
}

t.test('no gateway route answers bad input with a 5xx', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());
  await fuzz(t, gw, 300);
});

// A cluster node's gateway keeps its tenants in the metadata group: a one-node cluster.
t.test('a cluster node: no gateway route answers bad input with a 5xx', async (t) => {
  const gw = await startGatewayNode(await oneNodeClusterEnv('gateway-test'));
  t.teardown(() => gw.close());
  await waitForMember(gw.node.url!);
  await fuzz(t, gw, 120);
});
