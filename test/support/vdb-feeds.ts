// The VDB feed checks one standalone node and a cluster share: a long-poll waits for the next
// write and returns it; an event stream pushes writes and carries a resumable cursor.
import type { Test } from 'tap';
import type { Reply, RequestOptions } from './node.js';
import { streamText } from './stream.js';

type Call = (method: string, path: string, options?: RequestOptions) => Promise<Reply>;

export async function checkVdbFeeds(t: Test, vdb: string, reader: { call: Call; url: string; key: string }, writer: Call): Promise<void> {
  const now = (await reader.call('GET', `/vdb/${vdb}/_changes?since=now`)).body.last_seq as string;
  const started = Date.now();
  const waiting = reader.call('GET', `/vdb/${vdb}/_changes?feed=longpoll&timeout=20000&since=${encodeURIComponent(now)}`);
  // The long-poll is waiting (nothing new yet) when the write lands.
  await new Promise((r) => setImmediate(r));
  const w = await writer('PUT', `/vdb/${vdb}/longpolled`, { body: { n: 1 } });
  t.equal(w.status, 201, 'written while a long-poll waits');
  const got = await waiting;
  t.equal(got.status, 200);
  t.same(got.body.changes.map((c: { id: string }) => c.id), ['longpolled'], `the long-poll returned the write (after ${Date.now() - started} ms)`);
  const empty = await reader.call('GET', `/vdb/${vdb}/_changes?feed=longpoll&timeout=300&since=${encodeURIComponent(got.body.last_seq)}`);
  t.same(empty.body.changes, [], 'a long-poll with nothing new ends at its timeout, empty');

  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const res = await fetch(`${reader.url}/vdb/${vdb}/_changes?feed=eventsource&heartbeat=50&since=${encodeURIComponent(got.body.last_seq)}`, { headers: { authorization: `Bearer ${reader.key}` }, signal: ac.signal });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/event-stream/);
  const stream = streamText(res, 15_000);
  const until = (pred: (s: string) => boolean) => stream.until(pred, 'SSE text');
  await until((s) => s.includes('stream open'));
  await writer('PUT', `/vdb/${vdb}/streamed`, { body: { n: 2 } });
  await until((s) => s.includes('"id":"streamed"'));
  await until((s) => s.includes(': heartbeat'));
  const event = stream.text.split('\n\n').find((e) => e.includes('"id":"streamed"'))!;
  const cursor = /^id: (.+)$/m.exec(event)?.[1];
  t.ok(cursor !== undefined, 'the event carries the cursor');
  ac.abort();
  const after = await reader.call('GET', `/vdb/${vdb}/_changes?since=${encodeURIComponent(cursor!)}`);
  t.same(after.body.changes, [], 'resuming from the event id repeats nothing');

  // CouchDB's continuous feed, as PouchDB's live sync opens it: `heartbeat=true` (60 s) keeps it
  // open until a change comes; `limit` ends it with a `last_seq` line. A long-poll takes a
  // heartbeat too (PouchDB sends one), and a malformed one is a 400.
  // Its headers come at once, before any change or heartbeat (they waited for the first 60 s
  // heartbeat before: a client saw nothing for a minute); the deadline fails the test instead.
  const continuous = await fetch(`${reader.url}/vdb/${vdb}/_changes?feed=continuous&heartbeat=true&limit=1&since=${encodeURIComponent(cursor!)}`, { headers: { authorization: `Bearer ${reader.key}` }, signal: AbortSignal.timeout(15_000) });
  t.equal(continuous.status, 200);
  const lines = streamText(continuous, 15_000);
  await writer('PUT', `/vdb/${vdb}/continued`, { body: { n: 3 } });
  await lines.until((s) => s.includes('"last_seq"'), 'the continuous feed to end');
  const rows = lines.text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { id?: string; changes?: unknown[]; last_seq?: string });
  t.match(rows, [{ id: 'continued', changes: [{ rev: String }] }, { last_seq: String }], 'heartbeat=true: the write, then the end at limit 1');
  t.equal((await reader.call('GET', `/vdb/${vdb}/_changes?feed=longpoll&heartbeat=10000&timeout=10&since=now`)).status, 200, 'a long-poll with a heartbeat');
  const bad = await reader.call('GET', `/vdb/${vdb}/_changes?feed=continuous&heartbeat=soon`);
  t.same([bad.status, bad.body.error], [400, 'bad_request'], 'heartbeat=soon: 400');
}
