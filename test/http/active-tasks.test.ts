// CouchDB's GET /_active_tasks over real HTTP: admin only; a continuous replication with its
// counts; a database compaction with its progress, from start to end (the engine's list); a
// VDB import (standalone and clustered) with its progress while it runs, gone once it ends.
import pino from 'pino';
import { rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import { DocEngine } from '../../src/docdb/engine.js';
import { Store } from '../../src/storage/db.js';
import { type TestNode, startTestNode, tempDir } from '../support/node.js';
import { freePorts } from '../raft/kv-cluster.js';
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

interface ImportEntry {
  type: string;
  vdb: string;
  docs_read: number;
  docs_written: number;
  progress: number;
  started_on: number;
  updated_on: number;
}

const IMPORT_DOCS = 2000;

/** A source database of IMPORT_DOCS documents and an empty VDB `v` to import them into. */
async function importSetup(node: TestNode): Promise<void> {
  if ((await node.request('PUT', '/db/src')).status !== 201) throw new Error('could not create db src');
  const filled = await node.request('POST', '/db/src/_bulk_docs', { body: { docs: Array.from({ length: IMPORT_DOCS }, (_, i) => ({ _id: `d${String(i).padStart(5, '0')}`, n: i })) } });
  if (filled.status !== 201) throw new Error(`could not fill src: ${filled.text}`);
  const made = await node.request('POST', '/vdb', { body: { name: 'v', shard_count: 2, placement: { replica_factor: 1 } } });
  if (made.status !== 201) throw new Error(`could not create VDB v: ${made.text}`);
}

const importsListed = async (node: TestNode): Promise<ImportEntry[]> =>
  ((await node.request('GET', '/_active_tasks')).body as ImportEntry[]).filter((x) => x.type === 'vdb_import');

/**
 * `_active_tasks` polled until `done` (never a sleep: a condition): the one running import's
 * snapshots in order, and the most imports one answer listed.
 */
async function watchImport(node: TestNode, done: (listed: readonly ImportEntry[]) => boolean): Promise<{ seen: ImportEntry[]; mostListed: number }> {
  const seen: ImportEntry[] = [];
  let mostListed = 0;
  await waitFor(async () => {
    const listed = await importsListed(node);
    if (done(listed)) return true;
    mostListed = Math.max(mostListed, listed.length);
    if (listed[0] !== undefined) seen.push(listed[0]);
    return undefined;
  }, { timeoutMs: 120_000, what: 'the import to end' });
  return { seen, mostListed };
}

function checkGrowing(t: Test, seen: readonly ImportEntry[]): void {
  t.ok(seen.every((e, i) => i === 0 || (e.progress >= seen[i - 1]!.progress && e.docs_read >= seen[i - 1]!.docs_read)), 'its progress never goes back');
  const partWay = seen.filter((e) => e.docs_read > 0 && e.docs_read < IMPORT_DOCS && e.progress > 0 && e.progress < 100);
  t.ok(partWay.length > 0, `and was seen part way (${partWay.length} of ${seen.length} snapshots)`);
  t.ok(seen.every((e) => e.updated_on >= e.started_on), 'updated_on is never before started_on');
}

const clusterEnv = async () => ({ SERVICE_ENABLE_CLUSTER: 'true', SERVICE_GRPC_PORT: String((await freePorts(1))[0]), RELEASE_COOKIE: 'active-tasks-cookie' });

for (const mode of ['standalone', 'a one-node cluster'] as const) {
  t.test(`a VDB import (${mode}) is listed while it runs, its progress growing, and gone once it answers`, async (t) => {
    const node = await startTestNode(mode === 'standalone' ? {} : await clusterEnv());
    t.teardown(() => node.close());
    if (mode !== 'standalone') {
      await waitFor(async () => ((await node.request('GET', '/vectordb/cluster/status')).body.state === 'member' ? true : undefined), { what: 'the node to form its cluster' });
    }
    await importSetup(node);
    let answered = false;
    const answer = node.request('POST', '/vdb/v/_import', { body: { source_db: 'src', batch_size: 10, on_conflict: 'overwrite' } }).finally(() => (answered = true));
    const { seen, mostListed } = await watchImport(node, () => answered);
    t.match((await answer).body, { docs_read: IMPORT_DOCS, docs_written: IMPORT_DOCS, status: 'completed' });
    t.ok(seen.length > 0, `listed while it ran (${seen.length} snapshots)`);
    t.equal(mostListed, 1, 'as one entry');
    t.match(seen[0], {
      type: 'vdb_import',
      node: 'test-node',
      pid: /^vdb_import:\d+$/,
      vdb: 'v',
      source_db: 'src',
      on_conflict: 'overwrite',
      batch_size: 10,
      docs_read: Number,
      docs_written: Number,
      docs_skipped: 0,
      errors: 0,
      total_docs: IMPORT_DOCS,
      progress: Number,
      started_on: Number,
      updated_on: Number,
    });
    checkGrowing(t, seen);
    t.same(await importsListed(node), [], 'gone once it answered');
  });
}

t.test('an import whose client went away runs on, listed, until it ends; a failed one is gone too', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await importSetup(node);

  // The client goes away part way: the import is not cancelled, it runs to its end.
  const client = new AbortController();
  const request = fetch(`${node.url}/vdb/v/_import`, {
    method: 'POST',
    signal: client.signal,
    headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source_db: 'src', batch_size: 10 }),
  }).catch((err: unknown) => err);
  const before = await waitFor(async () => (await importsListed(node)).find((e) => e.docs_read > 0 && e.docs_read < IMPORT_DOCS / 2), { intervalMs: 1, what: 'the import part way' });
  client.abort();
  t.type(await request, Error, 'the client gave up on its answer');
  const after = await watchImport(node, (listed) => listed.length === 0);
  t.equal(after.mostListed, 1, 'listed as one entry');
  const seen = [before, ...after.seen];
  checkGrowing(t, seen);
  t.ok(seen.some((e) => e.docs_read > before.docs_read), 'it went on after the client left');
  const shards = (await node.request('GET', '/vdb/v')).body.shards as { doc_count: number }[];
  t.equal(shards.reduce((sum, s) => sum + s.doc_count, 0), IMPORT_DOCS, 'and imported every document');

  // A VDB deleted under a running import: the import fails, and is no longer listed.
  await node.request('PUT', '/db/src2');
  await node.request('POST', '/db/src2/_bulk_docs', { body: { docs: Array.from({ length: IMPORT_DOCS }, (_, i) => ({ _id: `e${i}` })) } });
  t.equal((await node.request('POST', '/vdb', { body: { name: 'w', shard_count: 2 } })).status, 201);
  const failing = node.request('POST', '/vdb/w/_import', { body: { source_db: 'src2', batch_size: 10 } });
  await waitFor(async () => (await importsListed(node)).find((e) => e.vdb === 'w' && e.docs_read > 0 && e.docs_read < IMPORT_DOCS / 2), { intervalMs: 1, what: 'the import into w part way' });
  t.equal((await node.request('DELETE', '/vdb/w')).status, 200);
  t.match((await failing).body, { status: 'failed' }, 'the import failed');
  t.same(await importsListed(node), [], 'and is gone');
});

t.test('DELETE /vdb/:vdb/_import cancels the imports into it running on this node: they answer cancelled, what they wrote stays', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await importSetup(node);
  t.match(await node.request('DELETE', '/vdb/v/_import'), { status: 404, body: { error: 'not_found' } }, 'none running: 404');

  const answer = node.request('POST', '/vdb/v/_import', { body: { source_db: 'src', batch_size: 10 } });
  await waitFor(async () => (await importsListed(node)).find((e) => e.docs_written > 0 && e.docs_read < IMPORT_DOCS / 2), { intervalMs: 1, what: 'the import part way' });
  t.match(await node.request('DELETE', '/vdb/v/_import'), { status: 200, body: { ok: true, cancelled: 1 } });
  const result = (await answer).body as { status: string; docs_read: number; docs_written: number; errors: number };
  t.equal(result.status, 'cancelled', 'the import answers cancelled');
  t.ok(result.docs_read < IMPORT_DOCS, `it stopped part way (${result.docs_read} of ${IMPORT_DOCS} read)`);
  t.ok(result.docs_written > 0 && result.docs_written <= result.docs_read, `${result.docs_written} written`);
  t.equal(result.errors, 0);
  const shards = (await node.request('GET', '/vdb/v')).body.shards as { doc_count: number }[];
  t.equal(shards.reduce((sum, s) => sum + s.doc_count, 0), result.docs_written, 'the VDB holds what it wrote, nothing more');
  t.same(await importsListed(node), [], 'no longer listed');
  t.match(await node.request('DELETE', '/vdb/v/_import'), { status: 404 }, 'nothing left to cancel');

  // A key that may not write the VDB may not cancel its imports.
  const reader = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['v'] } })).body.key as string;
  const refused = await node.request('DELETE', '/vdb/v/_import', { key: reader });
  t.equal(refused.status, 403, `a read-only key: 403 (${refused.status} ${refused.text})`);
});
