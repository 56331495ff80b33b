// What a key's grants allow: permissions ranked, databases scoped, and the node's own admin
// acts (no database named) only for a key over every database.
import fc from 'fast-check';
import t from 'tap';
import { type ApiKeyRecord, type Permission, PERMISSIONS, allows } from '../../src/auth/api-keys.js';

const RANK: Record<Permission, number> = { read: 1, write: 2, admin: 3 };
const dbName = fc.constantFrom('a', 'b', 'c', 'd');
const record = fc.record({
  permissions: fc.uniqueArray(fc.constantFrom(...PERMISSIONS), { minLength: 1 }),
  databases: fc.oneof(fc.constant('all' as const), fc.uniqueArray(dbName, { maxLength: 3 })),
});
const keyOf = (r: { permissions: Permission[]; databases: 'all' | string[] }): ApiKeyRecord => ({ id: 'k', digest: '', keyPrefix: '', label: undefined, createdAt: 0, ...r });

t.test('allows: the rule, stated once more by cases', async () => {
  fc.assert(
    fc.property(record, fc.constantFrom(...PERMISSIONS), fc.option(dbName, { nil: undefined }), (r, needed, db) => {
      const strongEnough = r.permissions.some((p) => RANK[p] >= RANK[needed]);
      const inScope = r.databases === 'all' || (db === undefined ? needed !== 'admin' : r.databases.includes(db));
      return allows(keyOf(r), needed, db) === (strongEnough && inScope);
    }),
  );
});

t.test('a key scoped to some databases never passes a node-wide admin check', async () => {
  fc.assert(
    fc.property(fc.uniqueArray(dbName, { maxLength: 4 }), (dbs) => !allows(keyOf({ permissions: ['admin'], databases: dbs }), 'admin', undefined)),
  );
});

t.test('a weaker need is allowed wherever a stronger one is', async () => {
  fc.assert(
    fc.property(record, fc.option(dbName, { nil: undefined }), (r, db) => {
      const key = keyOf(r);
      return (!allows(key, 'admin', db) || allows(key, 'write', db)) && (!allows(key, 'write', db) || allows(key, 'read', db));
    }),
  );
});

t.test('a key over every database allows at least what the same key scoped allows', async () => {
  fc.assert(
    fc.property(record, fc.constantFrom(...PERMISSIONS), fc.option(dbName, { nil: undefined }), (r, needed, db) => {
      return !allows(keyOf(r), needed, db) || allows(keyOf({ ...r, databases: 'all' }), needed, db);
    }),
  );
});
