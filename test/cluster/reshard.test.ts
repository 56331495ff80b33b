// Online reshard on three real processes: a replicated collection goes 2 -> 5 -> 3 shards while
// a writer (adds, updates, deletes) and a searcher run the whole time. The metadata leader,
// which coordinates the job, is killed -9 during the copy of the first reshard and during the
// switch of the second; a new leader resumes each. Afterwards every acknowledged document is
// there exactly once with its last acknowledged vector, no deleted one is back, no search ever
// returned an id twice, recall@10 against an exact oracle holds, and the old shard groups are
// gone from every node. RESHARD_DOCS sets the loaded size (the 20,000; CI: 2,500).
// Then: errors, cancel and the CLI on one node; and keyword scores, the same before and after
// a reshard (the shards rank with the collection's BM25 statistics).
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';
import { runCli } from '../../src/cli/firkin.js';
import { exactBm25 } from '../support/bm25-oracle.js';
import { isReshardEnded } from '../../src/cluster/meta-state.js';

const DIMS = 8;
const DOCS = Number(process.env.RESHARD_DOCS ?? 2_500);
let seed = 7;
const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const vector = () => Array.from({ length: DIMS }, rnd);
const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) (dot += a[i]! * b[i]!), (na += a[i]! ** 2), (nb += b[i]! ** 2);
  return dot / Math.sqrt(na * nb);
};

t.test('online reshard 2 -> 5 -> 3 under writes and searches, coordinator killed during copy and switch', async (t) => {
  const cluster = await TestCluster.start(3, { SERVICE_RESHARD_DOCS_PER_SEC: String(Math.max(500, Math.floor(DOCS / 4))), FIRKIN_TEST_RESHARD_SWITCH_DELAY_MS: '2500' });
  t.teardown(() => cluster.close());
  await cluster.waitVoters(3);
  const nodes = ['n1', 'n2', 'n3'];
  const via = (i: number) => cluster.running()[i % cluster.running().length]!;

  const created = await cluster.request('n1', 'PUT', '/vectordb/collections/rs', { body: { dimensions: DIMS, num_shards: 2, replication_factor: 3 } });
  t.equal(created.status, 201, JSON.stringify(created.body));
  // The oracle: the last acknowledged vector of every live id; ids whose last write failed are uncertain.
  const live = new Map<string, number[]>();
  const uncertain = new Set<string>();
  for (let from = 0; from < DOCS; from += 500) {
    const documents = Array.from({ length: Math.min(500, DOCS - from) }, (_, j) => ({ id: `d${from + j}`, text: `doc ${from + j}`, metadata: { n: from + j }, vector: vector() }));
    const r = await cluster.request(via(from / 500), 'POST', '/vectordb/collections/rs/docs', { body: { documents } });
    t.equal(r.status, 200);
    for (const d of documents) live.set(d.id, d.vector);
  }
  const queries = Array.from({ length: 20 }, vector);
  const recall = async () => {
    let hit = 0;
    for (const q of queries) {
      const exact = [...live].filter(([id]) => !uncertain.has(id)).map(([id, v]) => ({ id, s: cosine(q, v) })).sort((a, b) => b.s - a.s).slice(0, 10).map((x) => x.id);
      const r = await cluster.request(via(hit), 'POST', '/vectordb/collections/rs/search', { body: { vector: q, k: 10 } });
      const got = new Set((r.body.results as { id: string }[]).map((x) => x.id));
      hit += exact.filter((id) => got.has(id)).length;
    }
    return hit / (queries.length * 10);
  };
  const recallBefore = await recall();

  // Writer and searcher for the whole test.
  let running = true;
  let writes = 0;
  let maxWriteMs = 0;
  const searchProblems: string[] = [];
  let searches = 0;
  /** Partial answers: a shard named with no leader reachable in time (a killed node's groups electing). */
  let partial = 0;
  const writer = (async () => {
    for (let i = 0; running; i++) {
      const node = via(i);
      const pick = `d${Math.floor(Math.abs(rnd()) * DOCS)}`;
      const op = i % 3;
      const t0 = Date.now();
      let ok = false;
      let id: string;
      if (op === 0 || !live.has(pick)) {
        id = `w${i}`;
        const v = vector();
        const r = await cluster.request(node, 'POST', '/vectordb/collections/rs/docs', { body: { id, text: 'new', metadata: {}, vector: v } }).catch(() => undefined);
        ok = r?.status === 201 || r?.status === 200;
        if (ok) live.set(id, v);
      } else if (op === 1) {
        id = pick;
        const v = vector();
        const r = await cluster.request(node, 'POST', '/vectordb/collections/rs/docs', { body: { id, text: 'updated', metadata: {}, vector: v } }).catch(() => undefined);
        ok = r?.status === 201 || r?.status === 200;
        if (ok) live.set(id, v);
      } else {
        id = pick;
        const r = await cluster.request(node, 'DELETE', `/vectordb/collections/rs/docs/${id}`).catch(() => undefined);
        ok = r?.status === 200;
        if (ok) live.delete(id);
      }
      if (ok) {
        writes++;
        uncertain.delete(id);
        maxWriteMs = Math.max(maxWriteMs, Date.now() - t0);
      } else uncertain.add(id);
    }
  })();
  const searcher = (async () => {
    for (let i = 0; running; i++) {
      const r = await cluster.request(via(i + 1), 'POST', '/vectordb/collections/rs/search', { body: { vector: queries[i % queries.length], k: 10 } }).catch(() => undefined);
      if (r === undefined || r.status !== 200) continue; // a node being killed
      searches++;
      const ids = (r.body.results as { id: string }[]).map((x) => x.id);
      if (new Set(ids).size !== ids.length) searchProblems.push(`a search returned an id twice: ${ids.join(',')}`);
      if (r.body.partial === true) {
        // Allowed, and said: a shard whose leader died elects a new one, which on a loaded
        // machine can outlast the read deadline. Anything but unavailability is a bug.
        partial++;
        const failed = r.body.failed_shards as { error: string }[];
        if (!failed.every((f) => f.error === 'no_quorum' || f.error === 'timeout')) searchProblems.push(`a search was partial for another reason: ${JSON.stringify(failed)}`);
        continue;
      }
      if (ids.length !== 10) searchProblems.push(`a search returned ${ids.length} hits`);
    }
  })();

  const job = async (node: string) => (await cluster.request(node, 'GET', '/vectordb/collections/rs/reshard')).body;
  const killLeaderWhen = async (what: string, pred: (j: Record<string, any>) => boolean) => {
    await waitFor(async () => {
      const j = await job(via(0)).catch(() => undefined);
      return j !== undefined && pred(j) ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 25, what });
    const leader = await cluster.leader();
    await cluster.kill9(leader);
    t.pass(`killed the coordinating metadata leader ${leader} ${what}`);
    await cluster.waitMembers().catch(() => undefined);
    await cluster.startNode(leader);
  };
  /** RESHARD_DEBUG=1: the job and each node's reshard log lines when a wait fails. */
  const dump = async (err: unknown): Promise<never> => {
    if (process.env.RESHARD_DEBUG) {
      console.error(JSON.stringify(await job(via(0)).catch((e: Error) => e.message)));
      for (const n of cluster.running()) console.error(n, cluster.node(n).child!.output().split('\n').filter((l) => /reshard|vshard|fence/.test(l)).slice(-30).join('\n'));
    }
    throw err;
  };
  const waitDone = async (what: string) =>
    waitFor(async () => {
      const j = await job(via(0)).catch(() => undefined);
      if (j?.state === 'failed' || j?.state === 'cancelled') throw new Error(`the reshard ended ${j.state}: ${j.last_error}`);
      return j?.state === 'done' ? j : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100, what }).catch(dump);

  // 2 -> 5, the coordinator killed while copying.
  const started = await cluster.request('n2', 'POST', '/vectordb/collections/rs/reshard', { body: { num_shards: 5 } });
  t.equal(started.status, 200, JSON.stringify(started.body));
  t.same(started.body, { status: 'resharding', info: { old_shards: 2, new_shards: 5, documents_migrated: 0 } });
  const twice = await cluster.request('n3', 'POST', '/vectordb/collections/rs/reshard', { body: { num_shards: 4 } });
  t.equal(twice.status, 409, 'one reshard per collection at a time');
  t.equal(twice.body.error, 'reshard_in_progress');
  await killLeaderWhen('during the copy', (j) => j.state === 'copying' && (j.sources as { from: number | null }[]).some((s) => s.from !== null));
  const first = await waitDone('the 2 -> 5 reshard to finish');
  t.match(first, { state: 'done', old_shards: 2, new_shards: 5 });
  t.ok(first.documents_migrated >= DOCS * 0.9, `documents migrated: ${first.documents_migrated}`);

  // 5 -> 3, the coordinator killed while switching.
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/rs/reshard', { body: { num_shards: 3 } })).status, 200);
  await killLeaderWhen('during the switch', (j) => j.state === 'switching');
  const second = await waitDone('the 5 -> 3 reshard to finish');
  t.match(second, { state: 'done', old_shards: 5, new_shards: 3 });

  running = false;
  await Promise.all([writer, searcher]);
  t.comment(`${writes} writes and ${searches} searches ran during the reshards (${partial} partial: a shard without a leader in time); the longest acknowledged write took ${maxWriteMs} ms`);
  t.same(searchProblems.slice(0, 5), [], 'no search saw a document twice or came back short, and none was partial for any reason but a shard without a leader');
  t.ok(searches - partial > 0, 'whole answers throughout');

  // Every node agrees on the new map, and holds only the new groups.
  await waitFor(async () => {
    for (const n of nodes) {
      const replicas = (await cluster.request(n, 'GET', '/_cluster/shards')).body.replicas as { group: string }[];
      if (replicas.length !== 3) return undefined;
    }
    return true;
  }, { timeoutMs: 30_000, what: 'every node to hold exactly the three new shard replicas' });
  t.pass('the old shard groups are gone from every node');
  const described = await cluster.request('n3', 'GET', '/vectordb/collections/rs');
  t.equal(described.body.num_shards, 3, 'the collection has 3 shards');

  // Every acknowledged document exactly once with its last acknowledged vector; no deleted one back.
  let checked = 0;
  const wrong: string[] = [];
  for (const [id, v] of live) {
    if (uncertain.has(id)) continue;
    const r = await cluster.request(via(checked), 'GET', `/vectordb/collections/rs/docs/${id}?include_vector=true`);
    // Same direction (cosine collections may store the vector normalised).
    if (r.status !== 200 || cosine(r.body.vector as number[], v) < 0.99999) wrong.push(`${id}: ${r.status}`);
    checked++;
  }
  t.same(wrong.slice(0, 5), [], `all ${checked} acknowledged documents are there with their last vector`);
  const deleted = [...Array(DOCS).keys()].map((i) => `d${i}`).filter((id) => !live.has(id) && !uncertain.has(id));
  for (const id of deleted.slice(0, 200)) {
    const r = await cluster.request('n1', 'GET', `/vectordb/collections/rs/docs/${id}`);
    if (r.status !== 404) wrong.push(`deleted ${id} is back`);
  }
  t.same(wrong.slice(0, 5), [], `no deleted document is back (${Math.min(200, deleted.length)} checked)`);
  const expected = [...live.keys()].filter((id) => !uncertain.has(id)).length;
  t.ok(Math.abs(described.body.count - expected) <= uncertain.size, `count ${described.body.count} matches the oracle (${expected} certain, ${uncertain.size} uncertain)`);
  const recallAfter = await recall();
  t.ok(recallAfter >= recallBefore - 0.03, `recall@10 ${recallAfter.toFixed(3)} after, ${recallBefore.toFixed(3)} before`);
});

t.test('reshard errors, cancel, and the CLI', async (t) => {
  // A slow copy, so a reshard can be cancelled while it copies; logs compacted every 8 entries,
  // so writes during a reshard would compact its old groups past where its replay stands.
  const cluster = await TestCluster.start(1, { SERVICE_RESHARD_DOCS_PER_SEC: '40', SERVICE_RAFT_SNAPSHOT_ENTRIES: '8', SERVICE_RAFT_RETAIN_ENTRIES: '1' });
  t.teardown(() => cluster.close());
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/e', { body: { dimensions: 4, num_shards: 2, replication_factor: 1 } })).status, 201);
  const same = await cluster.request('n1', 'POST', '/vectordb/collections/e/reshard', { body: { num_shards: 2 } });
  t.equal(same.status, 400);
  t.equal(same.body.error, 'same_shard_count');
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/e/reshard', { body: { num_shards: 0 } })).status, 400, 'bad num_shards');
  t.equal((await cluster.request('n1', 'GET', '/vectordb/collections/e/reshard')).status, 404, 'no job yet');
  t.equal((await cluster.request('n1', 'DELETE', '/vectordb/collections/e/reshard')).status, 404, 'nothing to cancel');
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/nope/reshard', { body: { num_shards: 3 } })).status, 404);

  const documents = Array.from({ length: 60 }, (_, i) => ({ id: `e${i}`, text: 'e', metadata: {}, vector: [i, 1, 0, 1] }));
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/e/docs', { body: { documents } })).status, 200);

  // Cancel before the switch: the old shards stay authoritative, the new groups go.
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/e/reshard', { body: { num_shards: 4 } })).status, 200);
  const cancelled = await cluster.request('n1', 'DELETE', '/vectordb/collections/e/reshard');
  t.match(cancelled.body, { state: 'cancelled', old_shards: 2, new_shards: 4 }, 'cancelled while copying');
  t.equal((await cluster.request('n1', 'DELETE', '/vectordb/collections/e/reshard')).status, 404, 'nothing left to cancel');
  await waitFor(async () => (((await cluster.request('n1', 'GET', '/_cluster/shards')).body.replicas as unknown[]).length === 2 ? true : undefined), { what: 'the pending groups to go' });
  t.match((await cluster.request('n1', 'GET', '/vectordb/collections/e')).body, { num_shards: 2, count: 60 }, 'still two shards with every document');

  // The CLI: firkin collection reshard e 3 --wait follows the job to its end, while a writer
  // adds documents: the old groups' logs may not be compacted past the replay (the job failed
  // with "compacted past index" before they were held for it).
  let writing = true;
  let acked = 0;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const r = await cluster.request('n1', 'POST', '/vectordb/collections/e/docs', { body: { documents: [{ id: `w${i}`, text: 'w', metadata: {}, vector: [i, 2, 0, 1] }] } });
      if (r.status !== 200) throw new Error(`write w${i}: ${r.status} ${JSON.stringify(r.body)}`);
      acked++;
    }
  })();
  let out = '';
  let err = '';
  const code = await runCli(['collection', 'reshard', 'e', '3', '--wait', '--url', cluster.url('n1')], {}, { out: (x) => (out += x), err: (x) => (err += x), fetch });
  writing = false;
  await writer;
  t.equal(code, 0, `the CLI waited for the job (${err.trim().split('\n').at(-1) ?? ''})`);
  t.match(out, /^reshard e 2 -> 3: done +\[#{20}\] 100% (\d+\/\d+ documents|\d+ documents \(\d+ when it began\))\n$/, 'and printed its end');
  t.ok(acked > 8, `writes went on during the reshard (${acked})`);
  const described = await cluster.request('n1', 'GET', '/vectordb/collections/e');
  t.match(described.body, { num_shards: 3, count: 60 + acked }, 'three shards, every document');
  const again = await cluster.request('n1', 'GET', '/vectordb/collections/e/reshard');
  t.match(again.body, { state: 'done', old_shards: 2, new_shards: 3, last_error: null });

  // Old shards that hold no document: their snapshot transfer is its tail alone, which must say
  // where the state stands (found by the chaos runner's reshards: the job stayed in `copying`
  // with "snapshot transfer without its start index").
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/sparse', { body: { dimensions: 4, num_shards: 4, replication_factor: 1 } })).status, 201);
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/sparse/docs', { body: { documents: [{ id: 'only', text: 'x', metadata: {}, vector: [1, 0, 0, 1] }] } })).status, 200);
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/sparse/reshard', { body: { num_shards: 2 } })).status, 200);
  const ended = await waitFor(async () => {
    const j = (await cluster.request('n1', 'GET', '/vectordb/collections/sparse/reshard')).body;
    return isReshardEnded(j.state) ? j : undefined;
  }, { timeoutMs: 30_000, what: 'the reshard of a collection with empty shards to end' }).catch(async (err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify((await cluster.request('n1', 'GET', '/vectordb/collections/sparse/reshard')).body)}`);
  });
  t.match(ended, { state: 'done', old_shards: 4, new_shards: 2, last_error: null }, 'three of four old shards empty: done');
  t.match((await cluster.request('n1', 'GET', '/vectordb/collections/sparse')).body, { num_shards: 2, count: 1 });
});

t.test('a switch that runs out of time is rolled back: writes go on through it, the next attempt switches', async (t) => {
  // The node's first switch attempt stalls past its timeout (after fencing and draining): the
  // coordinator rolls it back, lifts the fences, waits its backoff and switches on attempt 2.
  const cluster = await TestCluster.start(1, { SERVICE_RESHARD_SWITCH_TIMEOUT_MS: '1500', FIRKIN_TEST_RESHARD_SWITCH_STALLS: '1' });
  t.teardown(() => cluster.close());
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/rb', { body: { dimensions: 4, num_shards: 2, replication_factor: 1 } })).status, 201);
  const initial = Array.from({ length: 50 }, (_, i) => ({ id: `b${i}`, text: 'b', metadata: { n: -1 }, vector: [i, 1, 0, 1] }));
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/rb/docs', { body: { documents: initial } })).status, 200);
  // The oracle: each document's last acknowledged `n`. Updates of the first 20 and new ids.
  const last = new Map(initial.map((d) => [d.id, -1]));
  const failures: string[] = [];
  let writing = true;
  let maxWriteMs = 0;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const id = i % 2 === 0 ? `b${(i / 2) % 20}` : `w${i}`;
      const started = Date.now();
      const r = await cluster.request('n1', 'POST', '/vectordb/collections/rb/docs', { body: { documents: [{ id, text: 'w', metadata: { n: i }, vector: [i, 2, 0, 1] }] } });
      maxWriteMs = Math.max(maxWriteMs, Date.now() - started);
      if (r.status === 200) last.set(id, i);
      else failures.push(`${id}: ${r.status} ${JSON.stringify(r.body)}`);
    }
  })();
  const job = async () => (await cluster.request('n1', 'GET', '/vectordb/collections/rb/reshard')).body;
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/rb/reshard', { body: { num_shards: 3 } })).status, 200);
  const rolled = await waitFor(async () => {
    const j = await job();
    return j.switch_rollbacks >= 1 ? j : undefined;
  }, { timeoutMs: 60_000, what: 'the first switch to be rolled back' }).catch(async (err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(await job())}\n${cluster.node('n1').child!.output().split('\n').filter((l) => /reshard|vshard|fence/.test(l)).slice(-20).join('\n')}`);
  });
  t.match(rolled.last_error, /switch attempt 1 did not finish within 1500 ms/, 'the job says why');
  const between = await cluster.request('n1', 'POST', '/vectordb/collections/rb/docs', { body: { documents: [{ id: 'between', text: 'x', metadata: { n: 0 }, vector: [0, 3, 0, 1] }] } });
  t.equal(between.status, 200, 'a write between the attempts is acknowledged');
  last.set('between', 0);
  const ended = await waitFor(async () => {
    const j = await job();
    return isReshardEnded(j.state) ? j : undefined;
  }, { timeoutMs: 60_000, what: 'the reshard to end' });
  writing = false;
  await writer;
  t.match(ended, { state: 'done', old_shards: 2, new_shards: 3, switch_rollbacks: 1 }, 'switched on the second attempt');
  t.same(failures.slice(0, 3), [], 'no write failed: those the fence refused ran again once it was lifted, or on the new map');
  t.comment(`${last.size - 50} documents added, the longest write took ${maxWriteMs} ms`);
  const wrong: string[] = [];
  for (const [id, n] of last) {
    const r = await cluster.request('n1', 'GET', `/vectordb/collections/rb/docs/${id}`);
    if (r.status !== 200 || r.body.metadata?.n !== n) wrong.push(`${id}: ${r.status} ${JSON.stringify(r.body.metadata)} (want n ${n})`);
  }
  t.same(wrong.slice(0, 5), [], `every acknowledged write is there, last one wins (${last.size} documents)`);
  t.match((await cluster.request('n1', 'GET', '/vectordb/collections/rb')).body, { num_shards: 3, count: last.size });
});

t.test('keyword scores do not move with a reshard: every layout ranks as one index over the collection', async (t) => {
  const cluster = await TestCluster.start(1);
  t.teardown(() => cluster.close());
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/kw', { body: { dimensions: 4, num_shards: 2, replication_factor: 1, bm25_backend: 'disk' } })).status, 201);
  const words = ['quick', 'brown', 'fox', 'lazy', 'dog', 'jumps'];
  const texts = new Map(Array.from({ length: 40 }, (_, i) => [`k${i}`, Array.from({ length: 1 + (i % 4) }, (_, j) => words[Math.floor(words.length * ((i * 5 + j * 11) % 13) ** 2 / 169)]!).join(' ')]));
  const documents = [...texts].map(([id, text], i) => ({ id, text, metadata: {}, vector: [i, 1, 0, 1] }));
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/kw/docs', { body: { documents } })).status, 200);
  const queries = ['quick fox', 'dog', 'lazy brown jumps'];
  const ranked = async () => Promise.all(queries.map(async (query) => (await cluster.request('n1', 'POST', '/vectordb/collections/kw/search/bm25', { body: { query, k: 10 } })).body.results as { id: string; score: number }[]));
  const close = (got: { id: string; score: number }[], want: { id: string; score: number }[]) => got.length === want.length && got.every((h, i) => h.id === want[i]!.id && Math.abs(h.score - want[i]!.score) < 1e-9);
  const before = await ranked();
  queries.forEach((q, i) => t.ok(close(before[i]!, exactBm25(texts, q, 10)), `2 shards: ${JSON.stringify(q)} ranks as the exhaustive scorer over the collection`));
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/kw/reshard', { body: { num_shards: 3 } })).status, 200);
  await waitFor(async () => ((await cluster.request('n1', 'GET', '/vectordb/collections/kw/reshard')).body.state === 'done' ? true : undefined), { timeoutMs: 60_000, what: 'the reshard to end' });
  const after = await ranked();
  queries.forEach((q, i) => t.ok(close(after[i]!, before[i]!), `3 shards: ${JSON.stringify(q)} ranks and scores as before`));
});

t.test('a node leaves while a reshard runs: its replicas of the new groups move too, and the leave ends before the job', async (t) => {
  // Every switch attempt stalls past its bound here, so the job runs on (rolled back, backing
  // off) while one of the nodes holding its new groups leaves. The new groups' replicas are
  // repaired like a routed shard's (`shard.replace.pending`); before, the leave waited for the
  // job to end (chaos seed 110: a leave held 115 s by a reshard).
  const cluster = await TestCluster.start(3, { SERVICE_RESHARD_SWITCH_TIMEOUT_MS: '1500', FIRKIN_TEST_RESHARD_SWITCH_STALLS: '20' });
  t.teardown(() => cluster.close());
  t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/lv', { body: { dimensions: 4, num_shards: 1, replication_factor: 2 } })).status, 201);
  const documents = Array.from({ length: 40 }, (_, i) => ({ id: `l${i}`, text: 'l', metadata: { i }, vector: [i, 1, 0, 1] }));
  t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/lv/docs', { body: { documents } })).status, 200);
  const hosted = async (n: string): Promise<string[]> => ((await cluster.request(n, 'GET', '/_cluster/shards')).body.replicas as { group: string }[]).map((r) => r.group);
  const oldGroups = new Set((await Promise.all(['n1', 'n2', 'n3'].map(hosted))).flat());
  const metaLeader = await cluster.leader();
  t.equal((await cluster.request(metaLeader, 'POST', '/vectordb/collections/lv/reshard', { body: { num_shards: 2 } })).status, 200);
  const job = async () => (await cluster.request(metaLeader, 'GET', '/vectordb/collections/lv/reshard')).body;
  await waitFor(async () => (await job()).switch_rollbacks >= 1, { timeoutMs: 60_000, what: 'the first switch to be rolled back' });
  const newGroupsOn = async (n: string) => (await hosted(n)).filter((g) => !oldGroups.has(g));
  const leaver = (await Promise.all(['n1', 'n2', 'n3'].filter((n) => n !== metaLeader).map(async (n) => ((await newGroupsOn(n)).length > 0 ? n : undefined)))).find((n) => n !== undefined);
  t.ok(leaver !== undefined, `a node other than the metadata leader (${metaLeader}) holds a new group's replica`);
  const moving = await newGroupsOn(leaver!);
  const staying0 = () => ['n1', 'n2', 'n3'].filter((n) => n !== leaver);
  t.equal((await cluster.request(leaver!, 'POST', '/vectordb/cluster/leave')).status, 200, `${leaver} (new groups ${moving.join(', ')}) asks to leave`);
  await waitFor(async () => (await cluster.status(leaver!).catch(() => ({ state: 'gone' }))).state === 'left', { timeoutMs: 45_000, what: `${leaver} to finish leaving` }).catch(async (err: Error) => {
    throw new Error(`${err.message}: job ${JSON.stringify(await job())}\n${cluster.node(metaLeader).child!.output().split('\n').filter((l) => /moving the replica|leav|reshard/.test(l)).slice(-15).join('\n')}`);
  });
  const during = await job();
  t.notOk(isReshardEnded(during.state), `the leave ended while the reshard still ran (${during.state}, ${during.switch_rollbacks} rollbacks)`);
  const placed = during.new_groups as { group: string; replicas: string[] }[];
  t.same(placed.map((g) => g.group).sort(), [...new Set([...(await Promise.all(staying0().map(newGroupsOn))).flat()])].sort(), 'the job names its new groups');
  t.ok(placed.every((g) => g.replicas.length === 2 && !g.replicas.includes(leaver!)), `no new group is placed on ${leaver} any more (${JSON.stringify(placed)})`);
  const staying = staying0();
  for (const g of moving) {
    const on = (await Promise.all(staying.map(async (n) => ((await hosted(n)).includes(g) ? n : undefined)))).filter((n) => n !== undefined);
    t.equal(on.length, 2, `${g} has its two replicas on the staying nodes (${on.join(', ')})`);
  }
  // Cancelled (between attempts) rather than waiting out twenty: the old shard serves throughout.
  await waitFor(async () => [200, 202].includes((await cluster.request(metaLeader, 'DELETE', '/vectordb/collections/lv/reshard')).status), { timeoutMs: 60_000, what: 'a cancel between two attempts' });
  t.match(await waitFor(async () => {
    const j = await job();
    return isReshardEnded(j.state) ? j : undefined;
  }, { timeoutMs: 60_000, what: 'the reshard to end' }), { state: 'cancelled' });
  t.match((await cluster.request(metaLeader, 'GET', '/vectordb/collections/lv')).body, { num_shards: 1, count: 40 });
});
