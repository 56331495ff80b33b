// Two real node processes: a continuous replication whose target is killed with SIGKILL in
// the middle and restarted. The task recovers, nothing is lost, and the checkpoint keeps the
// source from re-sending: after recovery one new document costs exactly one revision read.
import { rmSync } from 'node:fs';
import t from 'tap';
import { spawnTestNode, type ChildNode } from '../../support/process.js';
import { request, tempDir, TEST_ADMIN_KEY } from '../../support/node.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from './ports.js';

const N = 600;

t.test('target killed mid-replication', async (t) => {
  const sourceDir = tempDir();
  const targetDir = tempDir();
  t.teardown(() => {
    rmSync(sourceDir, { recursive: true, force: true });
    rmSync(targetDir, { recursive: true, force: true });
  });
  const env = { SERVICE_REPLICATION_RETRY_BASE_MS: '50', SERVICE_REPLICATION_RETRY_MAX_MS: '500', SERVICE_REPLICATION_BATCH_SIZE: '50' };
  const source = await spawnTestNode({ ...env, SERVICE_DATA_DIR: sourceDir });
  t.teardown(() => source.stop());
  const targetEnv = { SERVICE_DATA_DIR: targetDir, SERVICE_HTTP_PORT: String(await freePort()) };
  let target: ChildNode = await spawnTestNode(targetEnv);
  t.teardown(() => target.stop());
  const s = (method: string, path: string, body?: unknown) => request(source.url, method, path, { body, key: TEST_ADMIN_KEY });
  const d = (method: string, path: string, body?: unknown) => request(target.url, method, path, { body, key: TEST_ADMIN_KEY });
  const targetCount = async () => (await d('GET', '/db/items')).body.doc_count as number;
  const write = async (from: number, count: number) => {
    const docs = Array.from({ length: count }, (_, i) => ({ _id: `item${String(from + i).padStart(5, '0')}`, n: from + i, pad: 'x'.repeat(200) }));
    const r = await s('POST', '/db/items/_bulk_docs', { docs });
    if (r.status !== 201) throw new Error(r.text);
  };

  await s('PUT', '/db/items');
  await write(0, 50);
  const once = await s('POST', '/db/items/_replicate', { target: `${target.url}/db/once`, create_target: true, auth: { bearer_token: TEST_ADMIN_KEY } });
  t.match(once.body, { ok: true, docs_written: 50 }, 'one-shot between two processes');
  t.equal((await d('GET', '/db/once')).body.doc_count, 50);
  const started = await s('POST', '/db/items/_replicate', { target: `${target.url}/db/items`, create_target: true, continuous: true, auth: { bearer_token: TEST_ADMIN_KEY } });
  t.equal(started.status, 202, started.text);
  const id = started.body.task_id as string;
  const task = async () => (await s('GET', `/_replications/${id}`)).body;

  for (let i = 50; i < N / 2; i += 50) await write(i, 50);
  await waitFor(async () => (await targetCount()) >= 100, { what: 'some documents on the target', timeoutMs: 30_000 });
  await target.kill9();
  for (let i = N / 2; i < N; i += 50) await write(i, 50);
  const failing = await waitFor(async () => ((await task()).status === 'error' ? task() : undefined), { what: 'the task to see the target gone', timeoutMs: 30_000 });
  t.match(failing.last_error, /bad_gateway|timeout/);

  target = await spawnTestNode(targetEnv);
  await waitFor(async () => (await targetCount()) === N, { what: `all ${N} documents on the restarted target`, timeoutMs: 60_000 });
  const done = await waitFor(async () => {
    const v = await task();
    return v.status === 'active' && v.last_seq === (await s('GET', '/db/items')).body.update_seq ? v : undefined;
  }, { what: 'the task to catch up', timeoutMs: 30_000 });
  t.ok(done.docs_written <= N, `no revision was written twice (${done.docs_written} <= ${N})`);
  // A batch interrupted by the kill may be fetched again; never more than one batch.
  t.ok(done.docs_read <= N + 50, `at most one batch re-read (${done.docs_read})`);
  const sample = (await d('GET', '/db/items/item00421')).body;
  t.equal(sample.n, 421);

  await write(N, 1);
  await waitFor(async () => (await targetCount()) === N + 1, { what: 'one more document' });
  const after = await waitFor(async () => {
    const v = await task();
    return v.docs_read === done.docs_read + 1 ? v : undefined;
  }, { what: 'exactly one more revision read' });
  t.equal(after.docs_written, done.docs_written + 1, 'the checkpoint keeps the source from re-sending');
});
