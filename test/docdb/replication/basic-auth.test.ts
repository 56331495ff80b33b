// Node-to-node replication authenticated with basic auth (the API key as the password).
import t from 'tap';
import { startTestNode } from '../../support/node.js';

t.test('replication to another node with basic_auth', async (t) => {
  const source = await startTestNode();
  t.teardown(() => source.close());
  const target = await startTestNode();
  t.teardown(() => target.close());
  await source.request('PUT', '/db/src');
  await target.request('PUT', '/db/dst');
  await source.request('POST', '/db/src/_bulk_docs', { body: { docs: [{ _id: 'x', v: 1 }, { _id: 'y', v: 2 }] } });
  const ok = await source.request('POST', '/db/src/_replicate', {
    body: { target: `${target.url}/db/dst`, auth: { basic_auth: { username: 'replicator', password: target.adminKey } } },
  });
  t.equal(ok.status, 200);
  t.match(ok.body, { ok: true, docs_written: 2 });
  t.equal((await target.request('GET', '/db/dst/y')).body.v, 2);
  const wrong = await source.request('POST', '/db/src/_replicate', {
    body: { target: `${target.url}/db/dst`, auth: { basic_auth: { username: 'replicator', password: 'fk_wrong' } } },
  });
  t.equal(wrong.status, 502, 'a refused password is a bad gateway, not a 500');
  t.match(wrong.body, { ok: false, remote_status: 401 });
});
