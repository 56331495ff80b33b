// A VDB's `_import`, `_split` and `_merge` run inside their request. One that outlives
// SERVICE_REPLICATION_KEEPALIVE_MS answers with a 200 stream of whitespace keep-alives ended
// by its result (an import that fails late ends it with its `status: "failed"` answer; a split or merge with {ok: false, error, message}), as a one-shot `_replicate`
// does, so the server's idle timeout never cuts a long one and loses its answer.
import t from 'tap';
import { startTestNode } from '../../support/node.js';
import { waitFor } from '../../support/wait.js';

t.test('long imports, splits and merges stream keep-alives', async (t) => {
  const node = await startTestNode({ SERVICE_REPLICATION_KEEPALIVE_MS: '20' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/src');
  for (let i = 0; i < 4; i++) {
    const docs = Array.from({ length: 500 }, (_, j) => ({ _id: `d${i * 500 + j}`, v: j }));
    t.equal((await node.request('POST', '/db/src/_bulk_docs', { body: { docs } })).status, 201);
  }
  t.equal((await node.request('POST', '/vdb', { body: { name: 'kv', shard_count: 2 } })).status, 201);

  const imported = await node.request('POST', '/vdb/kv/_import', { body: { source_db: 'src', batch_size: 10 } });
  t.equal(imported.status, 200);
  t.match(imported.text, /^\n+\{/, 'keep-alive newlines first (200 batches take longer than 20 ms)');
  t.match(JSON.parse(imported.text), { docs_read: 2000, docs_written: 2000, status: 'completed' });

  const split = await node.request('POST', '/vdb/kv/_shards/0/_split', { body: { batch_size: 10 } });
  t.equal(split.status, 200);
  t.match(split.text, /^\n+\{/);
  const splitAnswer = JSON.parse(split.text) as { ok: boolean; new_shard_id: number; docs_moved: number };
  t.match(splitAnswer, { ok: true, shard_id: 0, new_shard_id: 2 });
  t.ok(splitAnswer.docs_moved > 0);

  const merged = await node.request('POST', '/vdb/kv/_shards/2/_merge', { body: { target_shard: 0, batch_size: 10 } });
  t.equal(merged.status, 200);
  t.match(merged.text, /^\n+\{/);
  t.match(JSON.parse(merged.text), { ok: true, shard_id: 2, target_shard: 0, docs_moved: splitAnswer.docs_moved });
  t.equal((await node.request('GET', '/vdb/kv')).body.total_docs, 2000, 'nothing lost on the way');

  // What fails at once still answers with its status.
  t.equal((await node.request('POST', '/vdb/kv/_import', { body: { source_db: 'nope' } })).status, 404);
  t.equal((await node.request('POST', '/vdb/kv/_shards/0/_merge', { body: { target_shard: 7 } })).status, 404);

  // An import that fails after its answer began ends the stream with the error.
  const late = node.request('POST', '/vdb/kv/_import', { body: { source_db: 'src', batch_size: 1, on_conflict: 'overwrite' } });
  const started = Date.now();
  await waitFor(
    async () => Date.now() - started > 100 && ((await node.request('GET', '/_active_tasks')).body as { type: string; docs_written: number }[]).some((task) => task.type === 'vdb_import' && task.docs_written > 20),
    { what: 'the import to run past its first keep-alive' },
  );
  t.equal((await node.request('DELETE', '/vdb/kv')).status, 200);
  const failed = await late;
  t.equal(failed.status, 200, 'the status was sent before the failure');
  t.match(failed.text, /^\n+\{/, 'keep-alives before the end');
  const body = JSON.parse(failed.text) as Record<string, unknown>;
  t.match(body, { status: 'failed' }, 'the end of the stream says it failed');
});
