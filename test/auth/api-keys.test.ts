// Cluster keys whose create committed while this node lagged behind the metadata leader: the
// key exists, so the secret must still reach the client (it is told only once).
import { rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import { ApiKeys, type ApiKeyRecord } from '../../src/auth/api-keys.js';
import { FirkinError, committedNotApplied } from '../../src/core/errors.js';
import { Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';

async function keysWith(put: (record: ApiKeyRecord) => Promise<void>, t: Test) {
  const dir = tempDir();
  const store = await Store.open(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const keys = await ApiKeys.load(store);
  keys.attachCluster({ put, revoke: async () => {}, confirmFresh: async () => {} });
  return keys;
}

t.test('a key committed but not applied here is still created, its secret told', async (t) => {
  const proposed: ApiKeyRecord[] = [];
  const keys = await keysWith(async (record) => {
    proposed.push(record);
    throw committedNotApplied('n2', 42);
  }, t);
  const made = await keys.create({ permissions: ['read'], databases: 'all', nowMs: 1 });
  t.equal(proposed.length, 1, 'proposed once');
  t.same(made.record, proposed[0], 'the record proposed is the one answered');
  t.ok(made.key.startsWith(made.record.keyPrefix), 'with its secret');
});

t.test('a create that may not have committed still fails', async (t) => {
  for (const err of [new FirkinError('timeout', 'entry 7 was not applied in time (it may still commit)'), new FirkinError('no_quorum', 'no leader')]) {
    const keys = await keysWith(async () => {
      throw err;
    }, t);
    await t.rejects(keys.create({ permissions: ['read'], databases: 'all', nowMs: 1 }), { code: err.code, message: err.message }, err.code);
  }
});

t.test('the 504 says the write committed and must not be repeated', async (t) => {
  const err = committedNotApplied('n2', 42);
  t.match(err, { code: 'timeout', details: { committed: true, index: 42 } });
  t.match(err.message, /committed at index 42, but n2 has not applied it yet .*do not repeat it/);
});
