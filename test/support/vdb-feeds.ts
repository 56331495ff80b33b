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
}
