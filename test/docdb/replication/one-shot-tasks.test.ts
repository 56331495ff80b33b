// One-shot `_replicate` runs appear in GET /_replications while they run (mode one_shot,
// status active) and for a while after they end (completed, or error with last_error); a
// running one can be cancelled with DELETE /_replications/:id or `cancel: true`.
import { createServer, type Socket } from 'node:net';
import t from 'tap';
import { startTestNode } from '../../support/node.js';
import { waitFor } from '../../support/wait.js';

t.test('one-shot runs are listed while running and after', async (t) => {
  const node = await startTestNode({ SERVICE_REPLICATION_TIMEOUT_MS: '20000' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/src');
  await node.request('POST', '/db/src/_bulk_docs', { body: { docs: Array.from({ length: 5 }, (_, i) => ({ _id: `d${i}` })) } });

  const done = await node.request('POST', '/db/src/_replicate', { body: { target: 'copy', create_target: true } });
  t.equal(done.status, 200);
  const listed = (await node.request('GET', '/_replications')).body.replications as Record<string, unknown>[];
  const run = listed.find((r) => r.task_id === done.body.replication_id);
  t.match(run, { mode: 'one_shot', status: 'completed', source: 'src', target: 'copy', docs_written: 5, policy: null }, 'a finished run is listed');
  const one = await node.request('GET', `/_replications/${done.body.replication_id}`);
  t.match(one.body, { status: 'completed', docs_read: 5 });

  const failed = await node.request('POST', '/db/src/_replicate', { body: { target: 'nowhere' } });
  t.equal(failed.status, 404);
  const afterFail = (await node.request('GET', '/_replications')).body.replications as Record<string, unknown>[];
  t.match(afterFail.at(-1), { mode: 'one_shot', status: 'error', target: 'nowhere', last_error: /not_found/ }, 'a failed run is listed with its error');

  const health = await node.request('GET', '/health');
  t.not(health.body.checks?.replication?.status, 'degraded', 'a failed one-shot (its caller saw the error) does not degrade /health');

  // A target that accepts connections and never answers: the run stays active until cancelled.
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const target = `http://127.0.0.1:${(silent.address() as { port: number }).port}/db/x`;
  const hanging = node.request('POST', '/db/src/_replicate', { body: { target } });
  const active = await waitFor(async () => {
    const all = (await node.request('GET', '/_replications')).body.replications as Record<string, unknown>[];
    return all.find((r) => r.target === target && r.status === 'active');
  }, { what: 'the hanging run to be listed' });
  t.equal(active.mode, 'one_shot');
  const cancel = await node.request('DELETE', `/_replications/${active.task_id as string}`);
  t.same(cancel.body, { ok: true, task_id: active.task_id, cancelled: true });
  const answer = await hanging;
  t.ok(answer.status >= 400 || JSON.parse(answer.text).ok === false, 'the cancelled run answers with an error');
  const ended = (await node.request('GET', `/_replications/${active.task_id as string}`)).body;
  t.equal(ended.status, 'error');
  t.equal((await node.request('DELETE', '/_replications/nope')).status, 404);
});
