// Tenant isolation, as a property: random operations by several tenants that share collection
// names and use crafted ones ("_", other tenants' internal names). Every answer must equal what
// a model of per-tenant namespaces predicts, so no tenant ever reads, lists, searches, counts or
// deletes another's data, and the usage counters equal the model's counts after every run.
import fc from 'fast-check';
import t from 'tap';
import { internalName } from '../../src/gateway/names.js';
import { fcParams } from '../support/fc.js';
import { startGatewayNode } from './support.js';

const TENANTS = { acme: { max_collections: 3, max_vectors: 6 }, beta: { max_collections: 2, max_vectors: 4 }, 'acme-2': { max_collections: 4, max_vectors: 8 } } as const;
type TenantId = keyof typeof TENANTS;
const TENANT_IDS = Object.keys(TENANTS) as TenantId[];
const NAMES = ['docs', 'a_b', 'docs_acme', internalName('acme', 'docs'), internalName('beta', 'docs'), `${internalName('acme-2', 'a')}_b`];
const IDS = ['a', 'b', 'c', 'd', 'a_b'];
const VECTORS = [[1, 0], [0, 1], [1, 1], [-1, 0.5]];
const DIMENSION = 2;

interface Doc { id: string; vector: number[]; text: string; metadata: { owner: string; collection: string; n: number } }

type Op =
  | { kind: 'create'; tenant: TenantId; name: string }
  | { kind: 'drop'; tenant: TenantId; name: string }
  | { kind: 'upsert'; tenant: TenantId; name: string; docs: { id: string; v: number; n: number }[]; batch: boolean }
  | { kind: 'get'; tenant: TenantId; name: string; id: string }
  | { kind: 'delete'; tenant: TenantId; name: string; id: string }
  | { kind: 'search'; tenant: TenantId; name: string; v: number; k: number }
  | { kind: 'list'; tenant: TenantId }
  | { kind: 'info'; tenant: TenantId; name: string };

const tenant = fc.constantFrom(...TENANT_IDS);
// Mostly the shared name, so tenants collide on it often; the crafted ones now and then.
const name = fc.oneof({ weight: NAMES.length, arbitrary: fc.constant(NAMES[0]!) }, { weight: NAMES.length, arbitrary: fc.constantFrom(...NAMES) });
const id = fc.constantFrom(...IDS);
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('create' as const), tenant, name }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), tenant, name }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('upsert' as const),
      tenant,
      name,
      docs: fc.array(fc.record({ id, v: fc.nat(VECTORS.length - 1), n: fc.nat(1000) }), { minLength: 1, maxLength: 4 }),
      batch: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('get' as const), tenant, name, id }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), tenant, name, id }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('search' as const), tenant, name, v: fc.nat(VECTORS.length - 1), k: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('list' as const), tenant }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('info' as const), tenant, name }) },
);

t.test('no tenant ever sees another tenant\'s data; usage equals the model', async (t) => {
  const gw = await startGatewayNode();
  t.teardown(() => gw.close());

  await fc.assert(
    fc.asyncProperty(fc.array(arbOp, { minLength: 1, maxLength: 30 }), async (random) => {
      // Every tenant starts with the same collection name, so every run has something to leak.
      const ops: Op[] = [...TENANT_IDS.map((tenant): Op => ({ kind: 'create', tenant, name: NAMES[0]! })), ...random];
      // Fresh tenants for every run (deleting a tenant deletes its collections).
      const keys = {} as Record<TenantId, string>;
      for (const tid of TENANT_IDS) {
        await gw.admin('DELETE', `/admin/tenants/${tid}`);
        const r = await gw.admin('POST', '/admin/tenants', { tenant_id: tid, rpm_limit: 10_000_000, ...TENANTS[tid] });
        if (r.status !== 201) throw new Error(`create tenant ${tid}: ${r.status} ${r.text}`);
        keys[tid] = r.body.api_key;
      }
      const model = new Map<TenantId, Map<string, Map<string, Doc>>>(TENANT_IDS.map((tid) => [tid, new Map()]));
      const vectorsOf = (tid: TenantId) => [...model.get(tid)!.values()].reduce((n, c) => n + c.size, 0);
      const fail = (op: Op, what: string, got: unknown) => {
        throw new Error(`${JSON.stringify(op)}: expected ${what}, got ${JSON.stringify(got)}`);
      };
      const expectError = (op: Op, r: { status: number; body: any }, status: number, code: string) => {
        if (r.status !== status || r.body.error !== code) fail(op, `${status} ${code}`, { status: r.status, body: r.body });
      };

      for (const op of ops) {
        const key = keys[op.tenant];
        const colls = model.get(op.tenant)!;
        const path = 'name' in op ? `/v1/collections/${encodeURIComponent(op.name)}` : '';
        switch (op.kind) {
          case 'create': {
            const r = await gw.call('POST', '/v1/collections', key, { name: op.name, dimension: DIMENSION });
            if (colls.has(op.name)) expectError(op, r, 409, 'collection_already_exists');
            else if (colls.size + 1 > TENANTS[op.tenant].max_collections) expectError(op, r, 403, 'quota_exceeded');
            else if (r.status !== 201) fail(op, '201', r.body);
            else colls.set(op.name, new Map());
            break;
          }
          case 'drop': {
            const r = await gw.call('DELETE', path, key);
            if (!colls.has(op.name)) expectError(op, r, 404, 'collection_not_found');
            else if (r.status !== 200) fail(op, '200', r.body);
            else colls.delete(op.name);
            break;
          }
          case 'upsert': {
            const docs: Doc[] = op.docs.map((d) => ({
              id: d.id,
              vector: VECTORS[d.v]!,
              text: `${op.tenant}/${op.name}/${d.id}`,
              metadata: { owner: op.tenant, collection: op.name, n: d.n },
            }));
            const sent = op.batch ? docs : docs.slice(0, 1);
            const r = await gw.call('POST', `${path}/documents`, key, op.batch ? { documents: sent } : sent[0]);
            const coll = colls.get(op.name);
            if (coll === undefined) {
              expectError(op, r, 404, 'collection_not_found');
              break;
            }
            const fresh = new Set(sent.filter((d) => !coll.has(d.id)).map((d) => d.id)).size;
            if (vectorsOf(op.tenant) + fresh > TENANTS[op.tenant].max_vectors) expectError(op, r, 403, 'quota_exceeded');
            else if (r.status !== 201) fail(op, '201', r.body);
            else for (const d of sent) coll.set(d.id, d);
            break;
          }
          case 'get': {
            const r = await gw.call('GET', `${path}/documents/${op.id}`, key);
            const doc = colls.get(op.name)?.get(op.id);
            if (!colls.has(op.name)) expectError(op, r, 404, 'collection_not_found');
            else if (doc === undefined) expectError(op, r, 404, 'document_not_found');
            else if (r.status !== 200 || r.body.text !== doc.text || JSON.stringify(r.body.metadata) !== JSON.stringify(doc.metadata)) fail(op, JSON.stringify(doc), r.body);
            break;
          }
          case 'delete': {
            const r = await gw.call('DELETE', `${path}/documents/${op.id}`, key);
            const coll = colls.get(op.name);
            if (coll === undefined) expectError(op, r, 404, 'collection_not_found');
            else if (!coll.has(op.id)) expectError(op, r, 404, 'document_not_found');
            else if (r.status !== 200) fail(op, '200', r.body);
            else coll.delete(op.id);
            break;
          }
          case 'search': {
            const r = await gw.call('POST', `${path}/search`, key, { vector: VECTORS[op.v], k: op.k });
            const coll = colls.get(op.name);
            if (coll === undefined) {
              expectError(op, r, 404, 'collection_not_found');
              break;
            }
            const hits = r.body.hits as { id: string; text: string; metadata: unknown }[] | undefined;
            if (r.status !== 200 || hits === undefined || hits.length !== Math.min(op.k, coll.size)) fail(op, `${Math.min(op.k, coll.size)} hits`, r.body);
            for (const h of hits!) {
              const doc = coll.get(h.id);
              if (doc === undefined || h.text !== doc.text || JSON.stringify(h.metadata) !== JSON.stringify(doc.metadata)) fail(op, 'hits from this collection only', h);
            }
            break;
          }
          case 'list': {
            const r = await gw.call('GET', '/v1/collections', key);
            const names = (r.body.collections as { name: string; count: number }[]).map((c) => `${c.name}:${c.count}`);
            const want = [...colls.entries()].map(([n, c]) => `${n}:${c.size}`).sort();
            if (JSON.stringify(names) !== JSON.stringify(want)) fail(op, JSON.stringify(want), names);
            break;
          }
          case 'info': {
            const r = await gw.call('GET', path, key);
            const coll = colls.get(op.name);
            if (coll === undefined) expectError(op, r, 404, 'collection_not_found');
            else if (r.status !== 200 || r.body.count !== coll.size) fail(op, `count ${coll.size}`, r.body);
            break;
          }
        }
      }
      for (const tid of TENANT_IDS) {
        const u = (await gw.admin('GET', `/admin/tenants/${tid}/usage`)).body.usage;
        const colls = model.get(tid)!;
        if (u.collection_count !== colls.size || u.vector_count !== vectorsOf(tid)) {
          throw new Error(`usage of ${tid}: ${JSON.stringify(u)}, model ${colls.size} collections, ${vectorsOf(tid)} vectors`);
        }
      }
      return true;
    }),
    fcParams(25),
  );
  t.pass('isolation held');
});
