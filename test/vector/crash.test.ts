// Durability of the vector index: kill -9 after acknowledged writes never leaves search blind,
// whether the index comes back from its file plus a replay, or is rebuilt from the records.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { request, startTestNode, tempDir } from '../support/node.js';
import { spawnTestNode } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const P = '/vectordb/collections';
const DIMS = 8;

/** A deterministic unit-ish vector per integer. */
function vec(i: number): number[] {
  return Array.from({ length: DIMS }, (_, d) => Math.sin(i * 12.9898 + d * 78.233) + (d === i % DIMS ? 2 : 0));
}

function docs(from: number, to: number, word: string) {
  return Array.from({ length: to - from }, (_, j) => ({ id: `doc${from + j}`, text: `${word} number ${from + j}`, metadata: { i: from + j }, vector: vec(from + j) }));
}

interface ShardHealth {
  collection: string;
  seq: number;
  saved_seq: number;
  recovery: { source: string; replayed: number };
}

async function shardHealth(url: string): Promise<ShardHealth> {
  const r = await request(url, 'GET', '/health');
  return (r.body.vector.shards as ShardHealth[]).find((s) => s.collection === 'crash')!;
}

async function expectAllFound(t: { equal(a: unknown, b: unknown, message: string): unknown }, url: string, ids: number[], what: string) {
  for (const i of ids) {
    const r = await request(url, 'POST', `${P}/crash/search`, { body: { vector: vec(i), k: 1 } });
    t.equal(r.body.results[0]?.id, `doc${i}`, `${what}: doc${i} is its own nearest neighbour`);
  }
}

t.test('kill -9 after a saved index and more writes: load the file, replay the rest', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

  // Phase 1: writes, then wait until the background save covers them.
  let child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '100' });
  t.teardown(() => child.proc.kill('SIGKILL'));
  let r = await request(child.url, 'PUT', `${P}/crash`, { body: { dimensions: DIMS, bm25_backend: 'disk' } });
  t.equal(r.status, 201);
  r = await request(child.url, 'POST', `${P}/crash/docs`, { body: { documents: docs(0, 40, 'alpha') } });
  t.equal(r.status, 200);
  const saved = await waitFor(async () => {
    const s = await shardHealth(child.url);
    return s.saved_seq === s.seq && s.seq > 0 ? s : undefined;
  }, { timeoutMs: 20_000, what: 'the index file to cover the writes' });
  const sidecar = JSON.parse(readFileSync(path.join(dataDir, 'vector', 'shard-1.json'), 'utf8')) as { seq: number };
  t.equal(sidecar.seq, saved.seq, 'the sidecar names the sequence the file covers');
  await child.kill9();

  // Phase 2: no background saves; more writes, an update and a delete, then kill -9.
  child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' });
  r = await request(child.url, 'POST', `${P}/crash/docs`, { body: { documents: docs(40, 60, 'beta') } });
  t.equal(r.status, 200);
  r = await request(child.url, 'POST', `${P}/crash/docs`, { body: { id: 'doc5', text: 'moved', vector: vec(1005) } });
  t.equal(r.status, 201);
  r = await request(child.url, 'DELETE', `${P}/crash/docs/doc7`);
  t.equal(r.status, 200);
  await child.kill9();

  // Phase 3: start again; the file is loaded and the 23 later writes replayed.
  child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' });
  const h = await shardHealth(child.url);
  t.equal(h.recovery.source, 'file');
  t.equal(h.recovery.replayed, 22, '20 inserts, 1 update, 1 delete replayed');
  const live = [...Array.from({ length: 60 }, (_, i) => i).filter((i) => i !== 5 && i !== 7)];
  await expectAllFound(t, child.url, live, 'after replay');
  r = await request(child.url, 'POST', `${P}/crash/search`, { body: { vector: vec(1005), k: 1 } });
  t.equal(r.body.results[0]?.id, 'doc5', 'the update is at its new vector');
  r = await request(child.url, 'POST', `${P}/crash/search`, { body: { vector: vec(7), k: 60 } });
  t.notOk(r.body.results.some((x: { id: string }) => x.id === 'doc7'), 'the delete is not found');
  t.equal(r.body.results.length, 59, 'every other doc is found');
  r = await request(child.url, 'POST', `${P}/crash/search/bm25`, { body: { query: 'beta', k: 100 } });
  t.equal(r.body.results.length, 20, 'BM25 postings of the unsaved writes are there');
  await child.kill9();
});

t.test('kill -9 before any save: the index is rebuilt from the records', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' });
  t.teardown(() => child.proc.kill('SIGKILL'));
  await request(child.url, 'PUT', `${P}/crash`, { body: { dimensions: DIMS, embedder: { type: 'hash' }, bm25_backend: 'memory' } });
  for (let i = 0; i < 10; i++) {
    const r = await request(child.url, 'POST', `${P}/crash/docs`, { body: docs(i, i + 1, 'gamma')[0] });
    t.equal(r.status, 201);
  }
  await child.kill9();
  child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' });
  const h = await shardHealth(child.url);
  t.equal(h.recovery.source, 'rebuilt');
  await expectAllFound(t, child.url, Array.from({ length: 10 }, (_, i) => i), 'after rebuild');
  const r = await request(child.url, 'POST', `${P}/crash/search/bm25`, { body: { query: 'gamma' } });
  t.equal(r.body.results.length, 10, 'the memory BM25 index is rebuilt from the records');
  await child.kill9();
});

t.test('a graceful stop saves the index; a corrupt file is rebuilt', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' };
  let node = await startTestNode(env);
  await node.request('PUT', `${P}/crash`, { body: { dimensions: DIMS } });
  await node.request('POST', `${P}/crash/docs`, { body: { documents: docs(0, 30, 'delta') } });
  await node.close();
  node = await startTestNode(env);
  t.same((await shardHealth(node.url)).recovery, { source: 'file', replayed: 0 }, 'saved on close, nothing to replay');
  await node.close();
  writeFileSync(path.join(dataDir, 'vector', 'shard-1.usearch'), 'not an index');
  node = await startTestNode(env);
  t.teardown(() => node.close());
  t.equal((await shardHealth(node.url)).recovery.source, 'rebuilt');
  await expectAllFound(t, node.url, Array.from({ length: 30 }, (_, i) => i), 'after a corrupt file');
});

t.test('kill -9 while large requests are written in parts: every acknowledged write is there, the keyword index agrees with the records', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { SERVICE_DATA_DIR: dataDir, SERVICE_VECTORDB_INDEX_SAVE_MS: '86400000' };
  let child = await spawnTestNode(env);
  t.teardown(() => child.proc.kill('SIGKILL'));
  // No graph: requests of more than 500 documents are written in parts, pipelined.
  let r = await request(child.url, 'PUT', `${P}/parts`, { body: { dimensions: DIMS, bm25_backend: 'disk', index: { m: 0 } } });
  t.equal(r.status, 201);
  const REQUEST_DOCS = 1_200;
  // A writes new documents (`a<i>` in their text); B rewrites those A had acknowledged (`b<i>`).
  const ackedA: number[] = [];
  const ackedB = new Set<number>();
  let stop = false;
  const body = (from: number, word: string) => ({
    documents: Array.from({ length: REQUEST_DOCS }, (_, j) => ({ id: `doc${from + j}`, text: `${word}${from + j} common w${(from + j) % 7}`, vector: vec(from + j) })),
  });
  const writerA = (async () => {
    for (let from = 0; !stop; from += REQUEST_DOCS) {
      const res = await request(child.url, 'POST', `${P}/parts/docs`, { body: body(from, 'a') }).catch(() => undefined);
      if (res?.status !== 200) return;
      for (let i = from; i < from + REQUEST_DOCS; i++) ackedA.push(i);
    }
  })();
  const writerB = (async () => {
    for (let from = 0; !stop; ) {
      if (ackedA.length < from + REQUEST_DOCS) {
        await new Promise((resolve) => setTimeout(resolve, 5)); // A's next acknowledgement
        continue;
      }
      const res = await request(child.url, 'POST', `${P}/parts/docs`, { body: body(from, 'b') }).catch(() => undefined);
      if (res?.status !== 200) return;
      for (let i = from; i < from + REQUEST_DOCS; i++) ackedB.add(i);
      from += REQUEST_DOCS;
    }
  })();
  // Killed while both write: after some of each is acknowledged, at whatever point their next
  // requests have reached.
  await waitFor(() => ackedB.size >= 2 * REQUEST_DOCS || undefined, { timeoutMs: 60_000, what: 'writes acknowledged' });
  await child.kill9();
  stop = true;
  await Promise.all([writerA, writerB]);

  child = await spawnTestNode(env);
  const stored = new Map<string, string>();
  for (let offset: string | null = null; ; ) {
    r = await request(child.url, 'POST', `${P}/parts/docs/scroll`, { body: { limit: 1000, ...(offset === null ? {} : { offset }) } });
    for (const d of r.body.documents as { id: string; text: string }[]) stored.set(d.id, d.text);
    offset = r.body.next_offset as string | null;
    if (offset === null) break;
  }
  let lost = 0;
  let stale = 0;
  for (const i of ackedA) {
    const text = stored.get(`doc${i}`);
    if (text === undefined) lost++;
    else if (ackedB.has(i) && !text.startsWith(`b${i} `)) stale++;
  }
  t.equal(lost, 0, `every acknowledged document is there (${ackedA.length} written, ${ackedB.size} rewritten)`);
  t.equal(stale, 0, 'every acknowledged rewrite is there');
  const info = await request(child.url, 'GET', `${P}/parts`);
  t.equal(info.body.count, stored.size, 'the count is the records');
  // The keyword index holds exactly the records' texts: each document by its current word and
  // never by a word it no longer has; a word common to a seventh of them finds that seventh.
  const sample = [...stored].filter((_, n) => n % 97 === 0);
  let wrong = 0;
  for (const [id, text] of sample) {
    const i = Number(id.slice(3));
    const current = text.split(' ')[0]!;
    const old = current.startsWith('b') ? `a${i}` : `b${i}`;
    const search = async (query: string) => ((await request(child.url, 'POST', `${P}/parts/search/bm25`, { body: { query, k: 5 } })).body.results as { id: string }[]).map((h) => h.id);
    if ((await search(current)).join() !== id || (await search(old)).length !== 0) wrong++;
  }
  t.equal(wrong, 0, `each of ${sample.length} sampled documents is found by its current word, none by the word it had before`);
  const w3 = [...stored.values()].filter((text) => text.endsWith(' w3')).length;
  const common = await request(child.url, 'POST', `${P}/parts/search/bm25`, { body: { query: 'w3', k: 1000 } });
  t.equal(common.body.results.length, Math.min(1000, w3), `'w3' finds the ${w3} records that have it (up to k)`);
  await child.kill9();
});
