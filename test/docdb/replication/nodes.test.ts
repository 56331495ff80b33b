// Node -> node replication over real HTTP between two nodes in one process: bearer auth,
// refused credentials, the allow-list, an unreachable target, continuous tasks that recover
// when the target comes back, and tasks that resume after the source node restarts without
// re-sending anything.
import t from 'tap';
import { compareHlc, parseHlc } from '../../../src/core/hlc.js';
import { type TestNode, startTestNode } from '../../support/node.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from './ports.js';

async function bulk(node: TestNode, db: string, from: number, count: number) {
  const docs = Array.from({ length: count }, (_, i) => ({ _id: `doc${String(from + i).padStart(4, '0')}`, n: from + i }));
  const r = await node.request('POST', `/db/${db}/_bulk_docs`, { body: { docs } });
  if (r.status !== 201) throw new Error(r.text);
}

const docCount = async (node: TestNode, db: string) => (await node.request('GET', `/db/${db}`)).body.doc_count as number;

t.test('node to node', async (t) => {
  const fast = { SERVICE_REPLICATION_RETRY_BASE_MS: '50', SERVICE_REPLICATION_RETRY_MAX_MS: '400' };
  const a = await startTestNode({ ...fast, SERVICE_NODE_NAME: 'a' });
  t.teardown(() => a.close());
  const targetPort = await freePort();
  const b = await startTestNode({ SERVICE_HTTP_PORT: String(targetPort), SERVICE_NODE_NAME: 'b' });
  t.teardown(() => b.close());
  await a.request('PUT', '/db/users');
  await bulk(a, 'users', 0, 50);
  // A key on B that may write only the `users` database.
  const key = (await b.request('POST', '/_keys', { body: { permissions: ['write'], databases: ['users'], label: 'replicator' } })).body.key as string;
  const target = `${b.url}/db/users`;

  t.test('one-shot with a bearer token, then incremental', async (t) => {
    const r = await a.request('POST', '/db/users/_replicate', { body: { target, create_target: true, auth: { bearer_token: key } } });
    t.equal(r.status, 200, r.text);
    t.match(r.body, { ok: true, docs_read: 50, docs_written: 50, doc_write_failures: 0 });
    t.equal(await docCount(b, 'users'), 50);
    const seqB = parseHlc((await b.request('GET', '/db/users')).body.update_seq)!;
    t.ok(compareHlc(seqB, parseHlc(r.body.last_seq)!) > 0, 'the source change clock was merged into the target clock');
    const one = (await b.request('GET', '/db/users/doc0007')).body;
    t.equal(one.n, 7);
    t.equal(one._rev, (await a.request('GET', '/db/users/doc0007')).body._rev);
    await bulk(a, 'users', 50, 25);
    const again = await a.request('POST', '/db/users/_replicate', { body: { target, auth: { bearer_token: key } } });
    t.match(again.body, { docs_written: 25, start_seq: r.body.last_seq });
    t.equal(await docCount(b, 'users'), 75);
  });

  t.test('refused credentials are a 502 that names the remote status, never the secret', async (t) => {
    const bad = await a.request('POST', '/db/users/_replicate', { body: { target, auth: { bearer_token: 'fk_wrong-token-123' } } });
    t.equal(bad.status, 502);
    t.match(bad.body, { error: 'bad_gateway', ok: false, remote_status: 401 });
    t.notOk(bad.text.includes('fk_wrong-token-123'));
    // The server only speaks Bearer keys: Basic credentials reach it and are refused as such.
    const basic = await a.request('POST', '/db/users/_replicate', { body: { target, auth: { basic_auth: { username: 'u', password: 'secret-pw' } } } });
    t.match(basic.body, { error: 'bad_gateway', remote_status: 401 });
    t.notOk(basic.text.includes('secret-pw'));
    const none = await a.request('POST', '/db/users/_replicate', { body: { target } });
    t.match(none.body, { error: 'bad_gateway', remote_status: 401 });
  });

  t.test('an unreachable target is a 502 with ok: false', async (t) => {
    const port = await freePort();
    const r = await a.request('POST', '/db/users/_replicate', { body: { target: `http://127.0.0.1:${port}/db/users` } });
    t.equal(r.status, 502);
    t.match(r.body, { error: 'bad_gateway', ok: false, message: /cannot reach/ });
  });

  t.test('hosts outside the allow-list are refused (403)', async (t) => {
    const strict = await startTestNode({ SERVICE_REPLICATION_ALLOW_LOOPBACK: 'false', SERVICE_REPLICATION_ALLOW: 'db.example.com' });
    t.teardown(() => strict.close());
    await strict.request('PUT', '/db/x');
    const r = await strict.request('POST', '/db/x/_replicate', { body: { target } });
    t.equal(r.status, 403);
    t.equal(r.body.error, 'forbidden');
    const meta = await strict.request('POST', '/db/x/_replicate', { body: { target: 'http://169.254.169.254/db/x' } });
    t.equal(meta.status, 403);
  });

  t.test('a continuous task follows writes, survives the target going away, and recovers', async (t) => {
    const created = await a.request('POST', '/db/users/_replicate', { body: { target, continuous: true, auth: { bearer_token: key } } });
    t.equal(created.status, 202, created.text);
    const id = created.body.task_id as string;
    await bulk(a, 'users', 75, 5);
    await waitFor(async () => (await docCount(b, 'users')) === 80, { what: 'continuous replication of 5 new docs' });
    const task = (await a.request('GET', `/_replications/${id}`)).body;
    t.match(task, { task_id: id, status: 'active', mode: 'continuous', source: 'users', target, last_error: null });
    t.notOk(JSON.stringify((await a.request('GET', '/_replications')).body).includes(key), 'the token is never listed');
    const metric = async (line: RegExp) => {
      const text = (await a.request('GET', '/metrics')).text;
      const m = line.exec(text);
      return m === null ? undefined : Number(m[1]);
    };
    t.equal(await metric(/^firkin_replication_tasks\{status="active"\} (\d+)$/m), 1, 'an active task on /metrics');
    // The counter moves after the batch's checkpoint, just after the documents land.
    const written = new RegExp(`^firkin_replication_docs_written\\{task="${id}"\\} (\\d+)$`, 'm');
    t.ok(await waitFor(async () => ((await metric(written)) ?? 0) >= 5 || undefined, { what: 'the written documents on /metrics' }), 'its written documents on /metrics');

    await b.node.close(); // the target goes away
    await bulk(a, 'users', 80, 10);
    const failing = await waitFor(async () => {
      const v = (await a.request('GET', `/_replications/${id}`)).body;
      return v.status === 'error' ? v : undefined;
    }, { what: 'the task to report the failure' });
    t.match(failing, { last_error: /bad_gateway/, retry_at: /^\d{4}-/ });
    t.ok(failing.consecutive_failures >= 1);
    // A retry attempt is `active` for a moment: sample until the scrape shows the failure.
    await waitFor(async () => (await metric(/^firkin_replication_tasks\{status="error"\} (\d+)$/m)) === 1, { what: 'the failing task on /metrics' });
    t.ok((await metric(new RegExp(`^firkin_replication_consecutive_failures\\{task="${id}"\\} (\\d+)$`, 'm')))! >= 1, 'failures in a row on /metrics');
    // The task keeps retrying, so /health is sampled until it shows the failure.
    const health = await waitFor(async () => {
      const h = (await a.request('GET', '/health')).body;
      return h.replication.status === 'degraded' ? h : undefined;
    }, { what: '/health to report the failing task' });
    t.equal(health.status, 'degraded');
    t.match(health.replication.problems, [/failing/]);

    await b.restart(); // same data dir, same port
    await waitFor(async () => (await docCount(b, 'users')) === 90, { what: 'recovery after the target came back', timeoutMs: 20_000 });
    const recovered = await waitFor(async () => {
      const v = (await a.request('GET', `/_replications/${id}`)).body;
      return v.status === 'active' && v.consecutive_failures === 0 && v.docs_written >= 15 ? v : undefined;
    });
    t.equal(recovered.docs_written, 15, 'each document written exactly once (5 + 10)');
    t.equal((await a.request('GET', '/health')).body.replication.status, 'ok');

    // The source restarts: the task comes back by itself and resumes from its checkpoint.
    await a.restart();
    const after = (await a.request('GET', `/_replications/${id}`)).body;
    t.equal(after.docs_written, 15, 'counters survive the restart');
    const seqBefore = (await b.request('GET', '/db/users')).body.update_seq;
    await bulk(a, 'users', 90, 3);
    await waitFor(async () => (await docCount(b, 'users')) === 93, { what: 'replication after the source restarted' });
    // Counters move after the batch's checkpoint, just after the documents land.
    const final = await waitFor(async () => {
      const v = (await a.request('GET', `/_replications/${id}`)).body;
      return v.docs_written >= 18 ? v : undefined;
    });
    t.equal(final.docs_written, 18, 'only the 3 new documents were sent');
    const changes = (await b.request('GET', `/db/users/_changes?since=${encodeURIComponent(seqBefore)}`)).body;
    t.equal(changes.results.length, 3, 'the target saw exactly 3 writes after the restart');

    // Pull through a one-shot policy: a remote source, whose conflicts travel too.
    const base = (await b.request('GET', '/db/users/doc0001')).body;
    const h = (c: string) => c.repeat(64);
    const branches = ['b', 'c'].map((c) => ({ _id: 'doc0001', _rev: `2-${h(c)}`, n: c, _revisions: { start: 2, ids: [h(c), base._rev.slice(2)] } }));
    t.equal((await b.request('POST', '/db/users/_bulk_docs', { body: { docs: branches, new_edits: false } })).status, 201);
    await a.request('PUT', '/db/pulled');
    const policy = { name: 'pull', pattern: 'fanout', source: target, targets: ['pulled'], mode: 'one_shot', auth: { bearer_token: key }, enabled: true };
    t.equal((await a.request('POST', '/_policies', { body: policy })).status, 201);
    await waitFor(async () => (await a.request('GET', '/_policies/pull/_status')).body.tasks[0]?.status === 'completed', { what: 'the pull to complete' });
    t.equal(await docCount(a, 'pulled'), 93);
    const pulled = (await a.request('GET', '/db/pulled/doc0001?conflicts=true')).body;
    const remote = (await b.request('GET', '/db/users/doc0001?conflicts=true')).body;
    t.equal(pulled._rev, remote._rev, 'same winner');
    t.same(pulled._conflicts, remote._conflicts, 'conflicts travel from a remote source');
    t.equal(pulled._conflicts.length, 1);

    const del = await a.request('DELETE', `/_replications/${id}`);
    t.equal(del.status, 200);
    t.same((await a.request('GET', '/_replications')).body.replications.map((x: { task_id: string }) => x.task_id), ['pull:0'], 'only the policy task is left');
    t.equal((await a.request('GET', `/_replications/${id}`)).status, 404);
  });

  t.test('a pull with a read key: the source refuses its checkpoint, the target keeps it, and the next run resumes from it', async (t) => {
    const reader = (await b.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['users'], label: 'reader' } })).body.key as string;
    await a.request('PUT', '/db/readpull');
    const policy = { name: 'readpull', pattern: 'fanout', source: target, targets: ['readpull'], mode: 'one_shot', auth: { bearer_token: reader }, enabled: true };
    t.equal((await a.request('POST', '/_policies', { body: policy })).status, 201);
    const status = async () => (await a.request('GET', '/_policies/readpull/_status')).body.tasks[0] as { status: string; docs_read: number; last_error: string | null };
    await waitFor(async () => ((await status())?.status === 'completed' ? true : undefined), { what: 'the pull with a read key to complete' });
    const total = await docCount(b, 'users');
    t.equal(await docCount(a, 'readpull'), total, 'every document pulled');
    const first = await status();
    t.ok(first.docs_read >= total, `the first run read every change (${first.docs_read})`);

    await bulk(b, 'users', 200, 4);
    t.equal((await a.request('POST', '/_policies/readpull/_enable')).status, 200);
    await waitFor(async () => {
      const s = await status();
      return s?.status === 'completed' && s.docs_read > first.docs_read ? true : undefined;
    }, { what: 'the second pull to complete' });
    t.equal(await docCount(a, 'readpull'), total + 4);
    t.equal((await status()).docs_read - first.docs_read, 4, 'the second run read only the 4 new changes: it started from the checkpoint the target kept');
  });
});
