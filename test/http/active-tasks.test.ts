// CouchDB's GET /_active_tasks over real HTTP: admin only; a continuous replication with its
// counts; a database compaction with its progress, from start to end (the engine's list).
import pino from 'pino';
import { rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import { DocEngine } from '../../src/docdb/engine.js';
import { Store } from '../../src/storage/db.js';
import { startTestNode, tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';

t.test('GET /_active_tasks lists running replications, for an admin key only', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.same((await node.request('GET', '/_active_tasks')).body, [], 'nothing running: an empty list');
  const reader = (await node.request('POST', '/_keys', { body: { permissions: ['write'] } })).body.key as string;
  t.equal((await node.request('GET', '/_active_tasks', { key: reader })).status, 403, 'a write key: 403 (CouchDB asks for a server admin)');
  t.equal((await node.request('GET', '/_active_tasks', { key: false })).status, 401, 'no key: 401');

  for (const db of ['src', 'dst']) await node.request('PUT', `/db/${db}`);
  await node.request('POST', '/db/src/_bulk_docs', { body: { docs: Array.from({ length: 30 }, (_, i) => ({ _id: `d${i}` })) } });
  const made = await node.request('POST', '/db/src/_replicate', { body: { target: 'dst', continuous: true } });
  t.equal(made.status, 202, made.text);
  const task = await waitFor(async () => {
    const tasks = (await node.request('GET', '/_active_tasks')).body as { type: string; docs_written: number }[];
    return tasks.find((x) => x.type === 'replication' && x.docs_written === 30);
  }, { what: 'the replication with its 30 documents in /_active_tasks' });
  t.match(task, { type: 'replication', node: 'test-node', replication_id: made.body.task_id, source: 'src', target: 'dst', continuous: true, docs_read: 30, doc_write_failures: 0, started_on: Number, updated_on: Number });
  t.equal((await node.request('DELETE', `/_replications/${made.body.task_id}`)).status, 200);
  t.same((await node.request('GET', '/_active_tasks')).body, [], 'a removed task is gone');
});

t.test('a compaction is listed from its start to its end, its progress growing', async (t) => {
  const dir = tempDir('firkin-active-tasks-');
  const store = await Store.open(path.join(dir, 'db'));
  const docs = await DocEngine.open({ store, hlc: new HybridClock(systemClock), log: pino({ level: 'silent' }), clock: systemClock, revsLimit: 1000, compactAfterWrites: 0 });
  t.teardown(async () => {
    await docs.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await docs.createDb('c');
  const first = await docs.bulkDocs('c', Array.from({ length: 1000 }, (_, i) => ({ _id: `d${i}`, v: 1 })), true, () => 'x');
  // A second revision of each leaves an older body: every slice writes.
  await docs.bulkDocs('c', first.map((r, i) => ({ _id: `d${i}`, _rev: (r as { rev: string }).rev, v: 2 })), true, () => 'x');
  const run = docs.compact('c');
  const seen: number[] = [];
  let ended = false;
  void run.then(() => (ended = true));
  t.match(docs.compactions(), [{ database: 'c', docsDone: 0, docsTotal: 1000 }], 'listed as it starts');
  while (!ended) {
    const [c] = docs.compactions();
    if (c !== undefined) seen.push(c.docsDone);
    await new Promise((r) => setImmediate(r));
  }
  t.ok(seen.every((n, i) => i === 0 || n >= seen[i - 1]!), 'its progress never goes back');
  t.ok(seen.some((n) => n > 0 && n < 1000), `and was seen part way (${[...new Set(seen)].join(', ')} of 1000)`);
  t.same(docs.compactions(), [], 'gone when it ends');
});
