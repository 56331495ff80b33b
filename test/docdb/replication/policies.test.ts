// Replication policies over real HTTP: chain across three nodes, group, fanout (one-shot),
// the full lifecycle (create disabled, enable, disable, re-enable, restart, delete) and errors.
import t from 'tap';
import { type TestNode, startTestNode } from '../../support/node.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from './ports.js';

async function put(node: TestNode, db: string, id: string, body: Record<string, unknown>) {
  const r = await node.request('PUT', `/db/${db}/${id}`, { body });
  if (r.status !== 201) throw new Error(r.text);
  return r.body.rev as string;
}

const has = async (node: TestNode, db: string, id: string) => (await node.request('GET', `/db/${db}/${id}`)).status === 200;
const count = async (node: TestNode, db: string) => (await node.request('GET', `/db/${db}`)).body.doc_count as number;

t.test('policies', async (t) => {
  const fast = { SERVICE_REPLICATION_RETRY_BASE_MS: '50', SERVICE_REPLICATION_RETRY_MAX_MS: '400' };
  // p restarts during the test: a fixed port keeps the chain's node URLs valid.
  const p = await startTestNode({ ...fast, SERVICE_HTTP_PORT: String(await freePort()) });
  t.teardown(() => p.close());
  const q = await startTestNode(fast);
  t.teardown(() => q.close());
  const r = await startTestNode(fast);
  t.teardown(() => r.close());
  const auth = { bearer_token: p.adminKey };

  t.test('errors', async (t) => {
    const bad = async (body: unknown, what: string) => {
      const res = await p.request('POST', '/_policies', { body });
      t.equal(res.status, 400, `${what}: ${res.text}`);
      t.equal(res.body.error, 'bad_request');
    };
    await bad({ name: 'x', pattern: 'ring', members: ['a', 'b'] }, 'unknown pattern');
    await bad({ name: 'x', pattern: 'chain', nodes: ['http://127.0.0.1:1'], database: 'd' }, 'chain with one node');
    await bad({ name: 'x', pattern: 'group', members: ['a'] }, 'group with one member');
    await bad({ name: 'x', pattern: 'fanout', source: 'a' }, 'fanout without targets');
    await bad([], 'not an object');
    const blocked = await startTestNode({ SERVICE_REPLICATION_ALLOW_LOOPBACK: 'false' });
    t.teardown(() => blocked.close());
    const forbidden = await blocked.request('POST', '/_policies', { body: { name: 'x', pattern: 'fanout', source: 'a', targets: ['http://127.0.0.1:9/db/b'] } });
    t.equal(forbidden.status, 403);
    for (const [method, path] of [['GET', '/_policies/nope'], ['DELETE', '/_policies/nope'], ['POST', '/_policies/nope/_enable'], ['POST', '/_policies/nope/_disable'], ['GET', '/_policies/nope/_status']] as const) {
      t.equal((await p.request(method, path)).status, 404, `${method} ${path}`);
    }
    const writer = (await p.request('POST', '/_keys', { body: { permissions: ['write'] } })).body.key as string;
    t.equal((await p.request('GET', '/_policies', { key: writer })).status, 403, 'admin only');
    t.equal((await p.request('GET', '/_policies', { key: false })).status, 401);
  });

  t.test('chain over three nodes, continuous, with bearer auth', async (t) => {
    for (const n of [p, q, r]) await n.request('PUT', '/db/chained');
    const created = await p.request('POST', '/_policies', { body: { name: 'c1', pattern: 'chain', nodes: [p.url, q.url, r.url], database: 'chained', auth } });
    t.equal(created.status, 201);
    t.match(created.body, { ok: true, name: 'c1', enabled: false });
    t.equal((await p.request('POST', '/_policies', { body: { name: 'c1', pattern: 'group', members: ['a', 'b'] } })).status, 409, 'duplicate name');
    const detail = (await p.request('GET', '/_policies/c1')).body;
    t.match(detail, { name: 'c1', pattern: 'chain', mode: 'continuous', enabled: false, database: 'chained', has_auth: true });
    t.notOk(JSON.stringify(detail).includes(p.adminKey), 'auth is not echoed');
    t.match((await p.request('GET', '/_policies')).body.policies, [{ name: 'c1' }]);
    t.match((await p.request('GET', '/_policies/c1/_status')).body, { name: 'c1', pattern: 'chain', enabled: false, task_count: 0, tasks: [] });

    await put(p, 'chained', 'one', { v: 1 });
    const enabled = await p.request('POST', '/_policies/c1/_enable');
    t.match(enabled.body, { ok: true, enabled: true, task_count: 2 });
    await waitFor(() => has(r, 'chained', 'one'), { what: 'a document to reach the tail of the chain' });
    const status = (await p.request('GET', '/_policies/c1/_status')).body;
    t.match(status, { name: 'c1', enabled: true, task_count: 2 });
    t.same(status.tasks.map((x: { source: string; target: string }) => [x.source, x.target]), [
      [`${p.url}/db/chained`, `${q.url}/db/chained`],
      [`${q.url}/db/chained`, `${r.url}/db/chained`],
    ]);
    for (const task of status.tasks) t.match(task, { status: 'active', last_error: null, docs_written: Number });

    const off = await p.request('POST', '/_policies/c1/_disable');
    t.match(off.body, { ok: true, enabled: false });
    const stopped = (await p.request('GET', '/_policies/c1/_status')).body;
    t.same(stopped.tasks.map((x: { status: string }) => x.status), ['stopped', 'stopped']);
    await put(p, 'chained', 'two', { v: 2 });
    // Nothing flows while disabled: check after a full one-shot round on another pair proves time passed.
    await p.request('POST', '/db/chained/_replicate', { body: { target: 'scratch', create_target: true } });
    t.notOk(await has(q, 'chained', 'two'), 'a disabled policy does not replicate');

    await p.request('POST', '/_policies/c1/_enable');
    await waitFor(() => has(r, 'chained', 'two'), { what: 're-enabled chain' });

    await p.restart();
    t.match((await p.request('GET', '/_policies/c1/_status')).body, { enabled: true, task_count: 2 });
    await put(p, 'chained', 'three', { v: 3 });
    await waitFor(() => has(r, 'chained', 'three'), { what: 'the chain after a restart' });

    const del = await p.request('DELETE', '/_policies/c1');
    t.match(del.body, { ok: true });
    t.equal((await p.request('GET', '/_policies/c1')).status, 404);
    t.same((await p.request('GET', '/_replications')).body.replications.filter((x: { policy: string }) => x.policy === 'c1'), [], 'its tasks are gone');
  });

  t.test('group: every member to every other member', async (t) => {
    for (const db of ['g1', 'g2', 'g3']) await p.request('PUT', `/db/${db}`);
    await p.request('POST', '/_policies', { body: { name: 'g', pattern: 'group', members: ['g1', 'g2', 'g3'], enabled: true } });
    t.equal((await p.request('GET', '/_policies/g/_status')).body.task_count, 6);
    await put(p, 'g1', 'a', { from: 1 });
    await put(p, 'g2', 'b', { from: 2 });
    await put(p, 'g3', 'c', { from: 3 });
    for (const db of ['g1', 'g2', 'g3']) await waitFor(async () => (await count(p, db)) === 3, { what: `${db} to hold all three` });
    await p.restart();
    await put(p, 'g3', 'd', { from: 3 });
    for (const db of ['g1', 'g2']) await waitFor(async () => (await count(p, db)) === 4, { what: `${db} after restart` });
    // PUT replaces the definition; an enabled policy keeps running with the new one.
    await p.request('PUT', '/db/g4');
    t.equal((await p.request('PUT', '/_policies/g', { body: { name: 'other', pattern: 'group', members: ['g1', 'g4'] } })).status, 400, 'name differs from the path');
    const replaced = await p.request('PUT', '/_policies/g', { body: { pattern: 'group', members: ['g1', 'g4'] } });
    t.match(replaced.body, { ok: true, name: 'g', enabled: true });
    const status = (await p.request('GET', '/_policies/g/_status')).body;
    t.equal(status.task_count, 2);
    t.same(status.tasks.map((x: { source: string; target: string }) => `${x.source}>${x.target}`), ['g1>g4', 'g4>g1']);
    await waitFor(async () => (await count(p, 'g4')) === 4, { what: 'the new member to catch up' });
    await p.request('DELETE', '/_policies/g');
  });

  t.test('fanout, one-shot, with a filter: tasks complete', async (t) => {
    await p.request('PUT', '/db/fan');
    await p.request('PUT', '/db/fa');
    await q.request('PUT', '/db/fb');
    for (let i = 0; i < 10; i++) await put(p, 'fan', `f${i}`, { type: i % 2 === 0 ? 'even' : 'odd', i });
    const created = await p.request('POST', '/_policies', {
      body: { name: 'fo', pattern: 'fanout', source: 'fan', targets: ['fa', `${q.url}/db/fb`], mode: 'one_shot', auth, filter: { paths: ['type/even'] } },
    });
    t.equal(created.status, 201);
    await p.request('POST', '/_policies/fo/_enable');
    const done = await waitFor(async () => {
      const s = (await p.request('GET', '/_policies/fo/_status')).body;
      return s.tasks.every((x: { status: string }) => x.status === 'completed') ? s : undefined;
    }, { what: 'one-shot tasks to complete' });
    t.same(done.tasks.map((x: { docs_written: number }) => x.docs_written), [5, 5]);
    t.equal(await count(p, 'fa'), 5);
    t.equal(await count(q, 'fb'), 5);
    await p.restart();
    const after = (await p.request('GET', '/_policies/fo/_status')).body;
    t.same(after.tasks.map((x: { status: string }) => x.status), ['completed', 'completed'], 'completed one-shot tasks do not rerun at boot');
  });
});
