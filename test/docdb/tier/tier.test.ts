// Tiered storage over real HTTP with an injected clock (days pass without sleeping).
import t from 'tap';
import { overCapacity, tierForAge, DEFAULT_TIER_CONFIG } from '../../../src/docdb/tier/policy.js';
import { TEST_ADMIN_KEY, request, startTestNode, tempDir } from '../../support/node.js';
import { spawnTestNode } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

const DAY_MS = 86_400_000;

t.test('pure policy', (t) => {
  t.equal(tierForAge(DEFAULT_TIER_CONFIG, 0), 'hot');
  t.equal(tierForAge(DEFAULT_TIER_CONFIG, 7 * DAY_MS), 'warm');
  t.equal(tierForAge(DEFAULT_TIER_CONFIG, 30 * DAY_MS), 'cold');
  const docs = [
    { id: 'a', createdMs: 3, bytes: 10 },
    { id: 'b', createdMs: 1, bytes: 10 },
    { id: 'c', createdMs: 2, bytes: 10 },
  ];
  t.same(overCapacity(docs, { bytes: 15, docs: null }), ['b', 'c'], 'oldest first until it fits');
  t.same(overCapacity(docs, { bytes: null, docs: 2 }), ['b']);
  t.same(overCapacity(docs, { bytes: null, docs: null }), []);
  t.end();
});

t.test('tiering over HTTP', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const node = await startTestNode({ SERVICE_TIER_SWEEP_MS: '20' }, { clock: { nowMs: () => now } });
  t.teardown(() => node.close());
  for (const db of ['hot', 'warm', 'cold']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);

  t.test('config: defaults, merge, validation', async (t) => {
    t.match((await node.request('GET', '/db/hot/_tier/config')).body, { enabled: true, hot_threshold: 604800, warm_threshold: 2592000, configured: false });
    t.equal((await node.request('POST', '/db/hot/_tier/migrate', { body: { doc_id: 'x', to_tier: 'warm' } })).status, 400, 'not configured');
    t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { warm_db: 'nope' } })).status, 400);
    t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { bogus: 1 } })).status, 400);
    for (const name of ['constructor', 'toString']) {
      t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { [name]: 1 } })).status, 400, `${name} is no setting either (it is Object.prototype's)`);
    }
    t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { hot_threshold: 10, warm_threshold: 5 } })).status, 400);
    t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { warm_db: 'warm', cold_db: 'cold' } })).status, 200);
    t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { enabled: false } })).status, 200);
    t.match((await node.request('GET', '/db/hot/_tier/config')).body, { enabled: false, warm_db: 'warm', cold_db: 'cold', configured: true }, '{enabled: false} alone keeps the rest');
    t.equal((await node.request('POST', '/db/hot/_tier/run_migration')).status, 400, 'disabled');
    t.equal((await node.request('POST', '/db/hot/_tier/config', { body: { enabled: true } })).status, 200);
    t.equal((await node.request('GET', '/db/nope/_tier/config')).status, 404);
  });

  t.test('manual migration moves the document with its history; reads and writes follow it', async (t) => {
    const v1 = await node.request('PUT', '/db/hot/m1', { body: { v: 1 } });
    const v2 = await node.request('PUT', '/db/hot/m1', { body: { v: 2 }, headers: { 'if-match': v1.body.rev } });
    const moved = await node.request('POST', '/db/hot/_tier/migrate', { body: { doc_id: 'm1', to_tier: 'warm' } });
    t.match(moved.body, { ok: true, doc_id: 'm1', from_tier: 'hot', to_tier: 'warm', migrated: 1, skipped: 0 });
    const read = await node.request('GET', '/db/hot/m1?revs=true');
    t.equal(read.status, 200, 'read through the hot database');
    t.equal(read.body._rev, v2.body.rev, 'same revision');
    t.equal(read.body._revisions.ids.length, 2, 'history moved');
    t.equal((await node.request('GET', '/db/warm/m1')).body.v, 2, 'stored in warm_db');
    t.match((await node.request('GET', '/db/hot/m1/_tier')).body, { doc_id: 'm1', tier: 'warm', db: 'warm' });
    const found = await node.request('POST', '/db/hot/_find', { body: { where: [{ path: ['v'], op: 'exists' }] } });
    t.same(found.body.docs, [], 'no longer in the hot database');
    const hotFeed = await node.request('GET', '/db/hot/_changes');
    t.ok(hotFeed.body.results.some((c: { id: string; deleted: boolean }) => c.id === 'm1' && c.deleted), 'the move is in the hot feed');
    const upd = await node.request('PUT', '/db/hot/m1', { body: { v: 3 }, headers: { 'if-match': v2.body.rev } });
    t.equal(upd.status, 201, 'writes follow the document');
    t.equal((await node.request('GET', '/db/warm/m1')).body.v, 3);
    t.match((await node.request('POST', '/db/hot/_tier/migrate', { body: { doc_id: 'm1', to_tier: 'warm' } })).body, { migrated: 0, skipped: 1 });
    const back = await node.request('POST', '/db/hot/_tier/migrate', { body: { doc_id: 'm1', to_tier: 'hot' } });
    t.match(back.body, { from_tier: 'warm', to_tier: 'hot', migrated: 1 });
    t.equal((await node.request('GET', '/db/hot/m1')).body.v, 3, 'back in hot, not shadowed by the old tombstone');
    t.equal((await node.request('GET', '/db/warm/m1')).status, 404);
    t.equal((await node.request('POST', '/db/hot/_tier/migrate', { body: { doc_id: 'm1', to_tier: 'lukewarm' } })).status, 400);
    t.equal((await node.request('POST', '/db/hot/_tier/migrate', { body: { doc_id: 'ghost', to_tier: 'warm' } })).status, 404);
  });

  t.test('run_migration classifies by age and moves by capacity, oldest first', async (t) => {
    for (let i = 0; i < 5; i++) {
      await node.request('PUT', `/db/hot/age${i}`, { body: { i } });
      now += 1000;
    }
    const fresh = await node.request('POST', '/db/hot/_tier/run_migration');
    t.same(fresh.body, { ok: true, action: 'migration_run', expired: { deleted: 0 }, capacity: { migrated: 0 }, age: { classified: 0 } });
    await node.request('POST', '/db/hot/_tier/config', { body: { capacity_docs: 4 } });
    const cap = await node.request('POST', '/db/hot/_tier/run_migration');
    t.equal(cap.body.capacity.migrated, 2, 'm1 and age0 are the oldest');
    t.equal((await node.request('GET', '/db/hot/age0/_tier')).body.tier, 'warm');
    t.equal((await node.request('GET', '/db/hot/age4/_tier')).body.tier, 'hot');
    const capInfo = await node.request('GET', '/db/hot/_tier/capacity');
    t.match(capInfo.body, { doc_count: 4, capacity_docs: 4, exceeded: false, tiers: { warm: { db: 'warm', doc_count: 2 } } });
    await node.request('POST', '/db/hot/_tier/config', { body: { capacity_docs: null } });
    now += 8 * DAY_MS;
    const aged = await node.request('POST', '/db/hot/_tier/run_migration');
    t.equal(aged.body.age.classified, 4, 'the four hot documents crossed hot_threshold');
    now += 30 * DAY_MS;
    const old = await node.request('POST', '/db/hot/_tier/run_migration');
    t.equal(old.body.age.classified, 6, 'everything crossed warm_threshold');
    t.match((await node.request('GET', '/db/hot/age3/_tier')).body, { tier: 'cold', db: 'cold' });
    t.equal((await node.request('GET', '/db/hot/age3')).body.i, 3);
    t.equal((await node.request('GET', '/db/cold/_all_docs')).body.rows.length, 6);
  });

  t.test('TTL: the sweeper deletes an expired document with a real tombstone', async (t) => {
    await node.request('PUT', '/db/hot/ttl1', { body: { v: 1 } });
    const set = await node.request('POST', '/db/hot/ttl1/_tier/ttl', { body: { ttl: 60 } });
    t.match(set.body, { ok: true, doc_id: 'ttl1', ttl: 60, expires_at: now + 60_000 });
    t.match((await node.request('GET', '/db/hot/ttl1/_tier/ttl')).body, { ttl: 60, expires_at: now + 60_000, remaining: 60 });
    t.equal((await node.request('POST', '/db/hot/ttl1/_tier/ttl', { body: { ttl: -1 } })).status, 400);
    t.equal((await node.request('GET', '/db/hot/ttl1')).status, 200);
    now += 61_000;
    await waitFor(async () => (await node.request('GET', '/db/hot/_changes')).body.results.some((c: { id: string; deleted: boolean }) => c.id === 'ttl1' && c.deleted), {
      what: 'the sweeper to delete ttl1',
    });
    t.equal((await node.request('GET', '/db/hot/ttl1')).status, 404);
  });
});

t.test('kill -9 in the middle of a migration run: every document in exactly one tier', async (t) => {
  const dataDir = tempDir();
  let child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir });
  const call = (method: string, path: string, body?: unknown) => request(child.url, method, path, { body, key: TEST_ADMIN_KEY });
  await call('PUT', '/db/h');
  await call('PUT', '/db/w');
  const n = 600;
  for (let i = 0; i < n; i += 300) await call('POST', '/db/h/_bulk_docs', { docs: Array.from({ length: 300 }, (_, j) => ({ _id: `k${i + j}`, i: i + j })) });
  await call('POST', '/db/h/_tier/config', { warm_db: 'w', capacity_docs: 0 });
  const running = call('POST', '/db/h/_tier/run_migration').catch(() => undefined);
  await waitFor(() => child.output().includes('capacity migration progress'), { timeoutMs: 60_000, what: 'the migration to be under way' });
  await child.kill9();
  await running;
  child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir });
  t.teardown(() => child.stop());
  const hot = (await call('POST', '/db/h/_find', { where: [], include_docs: false, limit: 0 })).body.meta.total;
  const warm = (await call('POST', '/db/w/_find', { where: [], include_docs: false, limit: 0 })).body.meta.total;
  t.equal(hot + warm, n, `every document in exactly one tier (${hot} hot + ${warm} warm)`);
  t.ok(warm > 0 && hot > 0, 'the kill landed mid-run');
  let readable = 0;
  for (let i = 0; i < n; i += 37) if ((await call('GET', `/db/h/k${i}`)).status === 200) readable++;
  t.equal(readable, Math.ceil(n / 37), 'every document readable through the hot database');
});

t.test('a long run_migration answers as a keep-alive stream, as a long _replicate does', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const node = await startTestNode({ SERVICE_REPLICATION_KEEPALIVE_MS: '20' }, { clock: { nowMs: () => now } });
  t.teardown(() => node.close());
  for (const db of ['big', 'bigwarm', 'bigcold']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  t.equal((await node.request('POST', '/db/big/_tier/config', { body: { warm_db: 'bigwarm', cold_db: 'bigcold' } })).status, 200);
  const docs = Array.from({ length: 200 }, (_, j) => ({ _id: `d${j}`, j }));
  t.equal((await node.request('POST', '/db/big/_bulk_docs', { body: { docs } })).status, 201);
  now += 8 * DAY_MS;
  const run = await node.request('POST', '/db/big/_tier/run_migration');
  t.equal(run.status, 200);
  t.match(run.text, /^\n+\{/, 'keep-alive newlines first (moving 200 documents, each in its own writes, takes longer than 20 ms)');
  t.match(JSON.parse(run.text), { ok: true, action: 'migration_run', age: { classified: 200 } });
  t.equal((await node.request('GET', '/db/bigwarm')).body.doc_count, 200, 'every document moved');
  t.equal((await node.request('POST', '/db/nope/_tier/run_migration')).status, 404, 'what fails at once keeps its status');
});

t.test("a database's admin may not make another database its tier", async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const db of ['mine', 'theirs', 'minewarm']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  const key = (await node.request('POST', '/_keys', { body: { permissions: ['admin'], databases: ['mine', 'minewarm'] } })).body.key as string;
  const intoTheirs = await node.request('POST', '/db/mine/_tier/config', { key, body: { warm_db: 'theirs' } });
  t.equal(intoTheirs.status, 403, 'the node would write into (and purge in) a database the key may not touch');
  t.match(intoTheirs.body.message, /admin permission on database "theirs" \(warm_db\)/);
  t.equal((await node.request('POST', '/db/mine/_tier/config', { key, body: { cold_db: 'theirs' } })).status, 403);
  t.equal((await node.request('GET', '/db/mine/_tier/config')).body.configured, false, 'nothing was set');
  t.equal((await node.request('POST', '/db/mine/_tier/config', { key, body: { warm_db: 'minewarm' } })).status, 200, 'its own databases it may');
  t.equal((await node.request('POST', '/db/mine/_tier/config', { body: { warm_db: 'minewarm', cold_db: 'theirs' } })).status, 200, 'the node admin may name any');
});
