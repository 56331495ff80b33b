// The gateway's cluster store when a create committed while this node lagged the leader: the
// tenant or key exists, so the create succeeds and its secret reaches the client.
import t from 'tap';
import { MetaGatewayStore } from '../../src/cluster/gateway-store.js';
import { EMPTY_META, type MetaCommand } from '../../src/cluster/meta-state.js';
import { FirkinError, committedNotApplied } from '../../src/core/errors.js';
import type { KeyRecord, Tenant } from '../../src/gateway/types.js';

const tenant = { tenant_id: 'acme', limits: {}, created_at: 1 } as unknown as Tenant;
const key = { key_id: 'k1', tenant_id: 'acme', digest: 'd', key_prefix: 'p', created_at: 1 } as KeyRecord;

function storeThatFails(err: Error) {
  const proposed: MetaCommand[] = [];
  const meta = {
    state: EMPTY_META,
    propose: async (cmd: MetaCommand) => {
      proposed.push(cmd);
      throw err;
    },
    proposeRevocation: async () => {},
    confirmFresh: async () => {},
    catchUp: async () => {},
  };
  return { store: new MetaGatewayStore(meta), proposed };
}

t.test('committed but not applied here: tenant and key creates succeed', async (t) => {
  const { store, proposed } = storeThatFails(committedNotApplied('n2', 9));
  await store.createTenant(tenant, key);
  await store.putKey(key);
  t.same(proposed.map((c) => c.type), ['tenant.create', 'tenantkey.put']);
});

t.test('a create that may not have committed still fails', async (t) => {
  const { store } = storeThatFails(new FirkinError('timeout', 'entry 9 was not applied in time (it may still commit)'));
  await t.rejects(store.createTenant(tenant, key), { code: 'timeout' });
  await t.rejects(store.putKey(key), { code: 'timeout' });
});
