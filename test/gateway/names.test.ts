// Tenant collection names: the documented hash, injectivity, and the grammar that isolates.
import fc from 'fast-check';
import t from 'tap';
import { internalName, isCollectionName, isTenantId, parseInternalName, tenantHash } from '../../src/gateway/names.js';
import { fcParams } from '../support/fc.js';

const arbTenant = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
  // ids full of the escape and the separator
  fc.stringMatching(/^a[._du]{0,20}$/),
);
const arbName = fc.oneof(
  fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/),
  // crafted: names that look like another tenant's internal name
  fc
    .tuple(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,31}$/), fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/))
    .map(([other, n]) => `${tenantHash(other)}_${other}_${n}`.slice(0, 64)),
);

t.test('the hash is the first 2 bytes of MD5, as 4 hex digits (the reference example)', (t) => {
  t.equal(tenantHash('acme'), '53bc');
  t.equal(internalName('acme', 'documents'), '53bc_acme_documents');
  t.end();
});

t.test('(tenant, name) -> internal name is injective and parses back', (t) => {
  fc.assert(
    fc.property(arbTenant, arbName, arbTenant, arbName, (t1, n1, t2, n2) => {
      const a = internalName(t1, n1);
      const b = internalName(t2, n2);
      const same = t1 === t2 && n1 === n2;
      const parsed = parseInternalName(a);
      return (a === b) === same && parsed?.tenantId === t1 && parsed?.name === n1;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a name of one tenant never starts with another tenant prefix', (t) => {
  fc.assert(
    fc.property(arbTenant, arbName, arbTenant, (t1, n1, t2) => {
      fc.pre(t1 !== t2);
      return !internalName(t1, n1).startsWith(internalName(t2, 'x').slice(0, -1));
    }),
    fcParams(),
  );
  t.end();
});

t.test('validation', (t) => {
  for (const bad of ['', '-a', '_a', '.a', '../x', 'a/b', 'x'.repeat(65), 'é', 'a b', 'a\tb', 'a\u0000']) t.notOk(isTenantId(bad), `tenant ${bad}`);
  for (const good of ['acme', 'a', '0', 'a-b-c', 'acme_corp', 'acme.corp', 'Acme', 'x'.repeat(64)]) t.ok(isTenantId(good), `tenant ${good}`);
  for (const bad of ['', '_a', '-a', 'A', 'a.b', 'a/b', 'x'.repeat(65), 'a b', '..']) t.notOk(isCollectionName(bad), `name ${bad}`);
  for (const good of ['docs', 'a_b', '53bc_acme_x', 'x'.repeat(64)]) t.ok(isCollectionName(good), `name ${good}`);
  t.equal(parseInternalName('plain'), undefined);
  t.equal(parseInternalName('0000_acme_x'), undefined, 'a wrong hash is not a tenant name');
  t.throws(() => internalName('a/b', 'x'));
  t.end();
});

t.test('ids with "_" and "." get an escaped segment; ids without them keep the first release\'s names', (t) => {
  t.equal(internalName('acme-1', 'docs'), `${tenantHash('acme-1')}_acme-1_docs`);
  t.equal(internalName('acme_corp', 'docs'), `${tenantHash('acme_corp')}_acme.ucorp_docs`);
  t.equal(internalName('a.u', 'x'), `${tenantHash('a.u')}_a.du_x`);
  t.same(parseInternalName(internalName('a.u', 'x_y')), { tenantId: 'a.u', name: 'x_y' });
  t.equal(parseInternalName(`${tenantHash('a.')}_a._x`), undefined, 'a dangling escape is not a tenant name');
  t.end();
});
