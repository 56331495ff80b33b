// _bulk_docs, _all_docs, the changes feed (poll, long-poll, SSE) and _sync_hlc over real HTTP.
import t from 'tap';
import { hlcToBase64 } from '../../src/core/hlc.js';
import { startTestNode } from '../support/node.js';
import { streamText } from '../support/stream.js';
import { waitFor } from '../support/wait.js';

t.test('bulk, all_docs, changes, sync_hlc', async (t) => {
  const node = await startTestNode({ SERVICE_STREAM_HEARTBEAT_MS: '50' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/b');

  t.test('_bulk_docs: one result per entry, in order', async (t) => {
    const first = await node.request('PUT', '/db/b/existing', { body: { v: 0 } });
    const r = await node.request('POST', '/db/b/_bulk_docs', {
      body: {
        docs: [
          { _id: 'a', v: 1 },
          { id: 'b', v: 2 },
          { v: 3 },
          { _id: 'existing', v: 'no rev' },
          { _id: 'existing', _rev: first.body.rev, v: 'updated' },
          { _id: '_bad' },
          42,
          { _id: 'x', id: 'y' },
          { _id: 'gone', _deleted: true },
        ],
      },
    });
    t.equal(r.status, 201);
    t.equal(r.body.length, 9);
    t.match(r.body[0], { ok: true, id: 'a', rev: /^1-/ });
    t.match(r.body[1], { ok: true, id: 'b' });
    t.match(r.body[2], { ok: true, id: /^[0-9a-f]{32}$/ });
    t.match(r.body[3], { ok: false, id: 'existing', error: 'conflict', message: /current revision/ });
    t.match(r.body[4], { ok: true, id: 'existing', rev: /^2-/ });
    t.match(r.body[5], { ok: false, id: '_bad', error: 'bad_request', message: /reserved/ });
    t.match(r.body[6], { ok: false, id: null, error: 'bad_request' });
    t.match(r.body[7], { ok: false, error: 'bad_request', message: /differ/ });
    t.match(r.body[8], { ok: false, id: 'gone', error: 'not_found' });
    // _deleted: true deletes by rev.
    const del = await node.request('POST', '/db/b/_bulk_docs', { body: { docs: [{ _id: 'a', _rev: r.body[0].rev, _deleted: true }] } });
    t.match(del.body[0], { ok: true, id: 'a', rev: /^2-/ });
    t.equal((await node.request('GET', '/db/b/a')).status, 404);

    for (const body of [{}, { docs: [], extra: 1 }, { docs: new Array(10_001).fill({}) }]) {
      const bad = await node.request('POST', '/db/b/_bulk_docs', { body });
      t.equal(bad.status, 400, `bulk body ${JSON.stringify(body).slice(0, 30)}`);
      t.equal(bad.body.error, 'bad_request');
    }
  });

  t.test('_all_docs', async (t) => {
    await node.request('PUT', '/db/all');
    const ids = ['k01', 'k02', 'k03', 'k04', 'k05'];
    await node.request('POST', '/db/all/_bulk_docs', { body: { docs: ids.map((_id, i) => ({ _id, i })) } });
    const del = await node.request('GET', '/db/all/k05');
    await node.request('DELETE', `/db/all/k05?rev=${del.body._rev}`);

    const all = await node.request('GET', '/db/all/_all_docs');
    t.equal(all.status, 200);
    t.equal(all.body.total_rows, 4);
    t.same(all.body.rows.map((r: { id: string }) => r.id), ['k01', 'k02', 'k03', 'k04'], 'deleted documents are not listed');
    t.match(all.body.rows[0], { id: 'k01', key: 'k01', value: { rev: /^1-/ } });

    const page = await node.request('GET', '/db/all/_all_docs?startkey="k02"&endkey="k04"&inclusive_end=false&include_docs=true');
    t.same(page.body.rows.map((r: { id: string }) => r.id), ['k02', 'k03']);
    t.match(page.body.rows[0].doc, { _id: 'k02', i: 1 });
    const desc = await node.request('GET', '/db/all/_all_docs?descending=true&limit=2&skip=1');
    t.same(desc.body.rows.map((r: { id: string }) => r.id), ['k03', 'k02']);
    t.equal(desc.body.offset, 1);
    const rawKey = await node.request('GET', '/db/all/_all_docs?startkey=k04');
    t.same(rawKey.body.rows.map((r: { id: string }) => r.id), ['k04']);

    const keys = await node.request('POST', '/db/all/_all_docs?include_docs=true', { body: { keys: ['k03', 'nope', 'k05'] } });
    t.match(keys.body.rows[0], { id: 'k03', value: { rev: /^1-/ }, doc: { i: 2 } });
    t.same(keys.body.rows[1], { key: 'nope', error: 'not_found' });
    t.match(keys.body.rows[2], { id: 'k05', value: { deleted: true }, doc: null });
    const keysGet = await node.request('GET', '/db/all/_all_docs?keys=["k01"]');
    t.equal(keysGet.body.rows.length, 1);

    for (const qs of ['limit=-1', 'limit=x', 'startkey=1', 'keys=nope', 'descending=maybe']) {
      const bad = await node.request('GET', `/db/all/_all_docs?${qs}`);
      t.equal(bad.status, 400, qs);
      t.equal(bad.body.error, 'bad_request');
    }
  });

  t.test('changes: one entry per doc, exact resume, filters, long poll', async (t) => {
    await node.request('PUT', '/db/c');
    const empty = await node.request('GET', '/db/c/_changes');
    t.same(empty.body, { results: [], last_seq: '{timestamp,0,0}' });

    const revs: Record<string, string> = {};
    for (const id of ['d1', 'd2', 'd3', 'd4']) revs[id] = (await node.request('PUT', `/db/c/${id}`, { body: { id_is: id } })).body.rev;
    // Updating d1 moves it to the end; its old entry is gone.
    revs.d1 = (await node.request('PUT', '/db/c/d1', { body: { v: 2 }, headers: { 'if-match': revs.d1! } })).body.rev;
    const del = await node.request('DELETE', `/db/c/d2?rev=${revs.d2}`);

    const all = await node.request('GET', '/db/c/_changes?include_docs=true');
    t.same(all.body.results.map((r: { id: string }) => r.id), ['d3', 'd4', 'd1', 'd2']);
    const last = all.body.results[3];
    t.match(last, { id: 'd2', rev: del.body.rev, changes: [{ rev: del.body.rev }], deleted: true, seq: /^\{timestamp,\d+,\d+\}$/ });
    t.match(all.body.results[2], { id: 'd1', rev: revs.d1, deleted: false, doc: { _id: 'd1', _rev: revs.d1, v: 2 } });
    t.equal(all.body.last_seq, last.seq);

    // Pages of one resume exactly: nothing lost, nothing repeated.
    const seen: string[] = [];
    let since = '0';
    for (;;) {
      const page = await node.request('GET', `/db/c/_changes?limit=1&since=${encodeURIComponent(since)}`);
      if (page.body.results.length === 0) break;
      seen.push(...page.body.results.map((r: { id: string }) => r.id));
      since = page.body.last_seq;
    }
    t.same(seen, ['d3', 'd4', 'd1', 'd2']);

    // Other forms of the same sequence: W:L, W-L, base64.
    const m = /^\{timestamp,(\d+),(\d+)\}$/.exec(all.body.results[1].seq)!;
    const b64 = hlcToBase64({ wallMs: Number(m[1]), logical: Number(m[2]) });
    for (const form of [`${m[1]}:${m[2]}`, `${m[1]}-${m[2]}`, b64]) {
      const r = await node.request('GET', `/db/c/_changes?since=${encodeURIComponent(form)}`);
      t.same(r.body.results.map((x: { id: string }) => x.id), ['d1', 'd2'], `since in form ${form}`);
    }
    const desc = await node.request('GET', '/db/c/_changes?descending=true&limit=2');
    t.same(desc.body.results.map((r: { id: string }) => r.id), ['d2', 'd1']);
    const now = await node.request('GET', '/db/c/_changes?since=now');
    t.same(now.body, { results: [], last_seq: last.seq });

    const filtered = await node.request('POST', '/db/c/_changes', { body: { doc_ids: ['d4', 'd2'], include_docs: true } });
    t.same(filtered.body.results.map((r: { id: string }) => r.id), ['d4', 'd2']);
    t.equal(filtered.body.results[1].doc._deleted, true);
    const filteredGet = await node.request('GET', '/db/c/_changes?doc_ids=d3,d1');
    t.same(filteredGet.body.results.map((r: { id: string }) => r.id), ['d3', 'd1']);
    // With a filter and a limit, last_seq stops at the last entry examined: resuming finds d2.
    const limited = await node.request('POST', '/db/c/_changes', { body: { doc_ids: ['d4', 'd2'], limit: 1 } });
    t.same(limited.body.results.map((r: { id: string }) => r.id), ['d4']);
    const rest = await node.request('POST', '/db/c/_changes', { body: { doc_ids: ['d4', 'd2'], since: limited.body.last_seq } });
    t.same(rest.body.results.map((r: { id: string }) => r.id), ['d2']);

    for (const qs of ['since=garbage', 'limit=-1', 'feed=eventsource', 'timeout=x', 'doc_ids=[1]']) {
      const bad = await node.request('GET', `/db/c/_changes?${qs}`);
      t.equal(bad.status, 400, qs);
      t.equal(bad.body.error, 'bad_request');
    }
    const badBody = await node.request('POST', '/db/c/_changes', { body: { bogus: { where: [] } } });
    t.equal(badBody.status, 400, 'unknown body fields are rejected');

    // Long poll: held until a write wakes it (the timeout is far away).
    const held = node.request('GET', `/db/c/_changes?feed=longpoll&timeout=30000&since=${encodeURIComponent(last.seq)}`);
    let settled = false;
    void held.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    t.notOk(settled, 'nothing new: the long poll waits');
    const w = await node.request('PUT', '/db/c/d9', { body: { late: true } });
    const woke = await held;
    t.same(woke.body.results.map((r: { id: string }) => r.id), ['d9']);
    t.equal(woke.body.results[0].rev, w.body.rev);
    const timedOut = await node.request('GET', '/db/c/_changes?feed=longpoll&timeout=30&since=now');
    t.same(timedOut.body.results, []);
  });

  t.test('SSE stream: id lines, Last-Event-ID resume, pushed on write, heartbeat', async (t) => {
    await node.request('PUT', '/db/s');
    await node.request('PUT', '/db/s/before', { body: { n: 0 } });
    const ac = new AbortController();
    t.teardown(() => ac.abort());
    const res = await fetch(`${node.url}/db/s/_changes/stream?include_docs=true&heartbeat=50`, {
      headers: { authorization: `Bearer ${node.adminKey}` },
      signal: ac.signal,
    });
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /text\/event-stream/);
    t.ok(res.headers.get('x-service-hlc'));
    const stream = streamText(res);
    const until = (pred: (s: string) => boolean) => stream.until(pred, 'SSE text');
    await until((s) => s.includes('"id":"before"'));
    const w = await node.request('PUT', '/db/s/pushed', { body: { n: 1 } });
    await until((s) => s.includes('"id":"pushed"'));
    await until((s) => s.includes(': heartbeat'));
    const events = stream.text.split('\n\n').filter((e) => e.includes('event: change'));
    t.equal(events.length, 2);
    const pushed = events[1]!;
    const id = /^id: (.+)$/m.exec(pushed)![1]!;
    const data = JSON.parse(/^data: (.+)$/m.exec(pushed)![1]!);
    t.match(data, { seq: id, id: 'pushed', rev: w.body.rev, changes: [{ rev: w.body.rev }], deleted: false, doc: { n: 1 } });
    ac.abort();

    // Resume after the first event: only the second comes back.
    const firstId = /^id: (.+)$/m.exec(events[0]!)![1]!;
    const ac2 = new AbortController();
    t.teardown(() => ac2.abort());
    const again = await fetch(`${node.url}/db/s/_changes/stream`, {
      headers: { authorization: `Bearer ${node.adminKey}`, 'last-event-id': firstId },
      signal: ac2.signal,
    });
    const r2 = again.body!.getReader();
    let text2 = '';
    await waitFor(async () => {
      const { value } = await r2.read();
      text2 += Buffer.from(value ?? new Uint8Array()).toString();
      return text2.includes('"id":"pushed"');
    }, { timeoutMs: 10_000, intervalMs: 0 });
    t.notOk(text2.includes('"id":"before"'), 'Last-Event-ID resumes after that entry');
    ac2.abort();
    // Clients that went away leave nothing waiting behind them.
    const feeds = async () => ((await node.request('GET', '/health')).body.docdb.databases as { name: string; open_feeds: number }[]).find((d) => d.name === 's')!.open_feeds;
    await waitFor(async () => (await feeds()) === 0, { timeoutMs: 10_000, what: 'the streams to be cleaned up' });
    t.pass('streams cleaned up after the clients left');

    const bad = await node.request('GET', '/db/s/_changes/stream?since=nope');
    t.equal(bad.status, 400);
    const badHb = await node.request('GET', '/db/s/_changes/stream?heartbeat=1');
    t.equal(badHb.status, 400);
  });

  t.test("feed=continuous: CouchDB's JSON lines, ended by timeout or limit, kept open by a heartbeat", async (t) => {
    await node.request('PUT', '/db/cf');
    // The node's JSON helper parses one document; a continuous feed is JSON lines.
    const feedText = async (path: string, body?: unknown) => {
      const res = await fetch(`${node.url}${path}`, { method: body === undefined ? 'GET' : 'POST', headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: res.status, headers: res.headers, text: await res.text() };
    };
    const revs: string[] = [];
    for (const id of ['c1', 'c2', 'c3']) revs.push((await node.request('PUT', `/db/cf/${id}`, { body: { id } })).body.rev);
    const lines = (text: string) => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, any>);

    // Without a heartbeat the feed ends after `timeout` ms with nothing new, with a last_seq line.
    const ended = await feedText('/db/cf/_changes?feed=continuous&timeout=100&include_docs=true');
    t.equal(ended.status, 200);
    t.match(ended.headers.get('content-type'), /application\/json/);
    const all = lines(ended.text);
    t.same(all.slice(0, 3).map((l) => [l.id, l.changes[0].rev, l.doc.id]), [['c1', revs[0], 'c1'], ['c2', revs[1], 'c2'], ['c3', revs[2], 'c3']], 'one line per change, in order');
    t.same(all[3], { last_seq: all[2]!.seq }, 'then the last seq');
    t.equal(all.length, 4);

    const limited = lines((await feedText('/db/cf/_changes?feed=continuous&limit=2')).text);
    t.same(limited.map((l) => l.id ?? l.last_seq), ['c1', 'c2', limited[1]!.seq], 'limit ends the feed after that many changes');
    const resumed = lines((await feedText(`/db/cf/_changes?feed=continuous&timeout=0&since=${encodeURIComponent(limited[1]!.seq)}`)).text);
    t.same(resumed.map((l) => l.id ?? 'end'), ['c3', 'end'], 'since resumes after the entry; timeout=0 ends once caught up');
    const filtered = lines((await feedText('/db/cf/_changes?feed=continuous&timeout=0', { doc_ids: ['c2'] })).text);
    t.same(filtered.map((l) => l.id ?? 'end'), ['c2', 'end'], 'POST with a doc_ids filter');

    // With a heartbeat: empty lines while idle, and a write is pushed at once.
    const ac = new AbortController();
    t.teardown(() => ac.abort());
    const res = await fetch(`${node.url}/db/cf/_changes?feed=continuous&since=now&heartbeat=50`, { headers: { authorization: `Bearer ${node.adminKey}` }, signal: ac.signal });
    t.equal(res.status, 200);
    const stream = streamText(res);
    const until = (pred: (s: string) => boolean, what: string) => stream.until(pred, what);
    await until((s) => s.includes('\n\n'), 'heartbeats');
    t.equal(stream.text.trim(), '', 'nothing but heartbeats before a write (since=now)');
    const w = await node.request('PUT', '/db/cf/c4', { body: { n: 4 } });
    await until((s) => s.includes('"id":"c4"'), 'the pushed change');
    t.match(lines(stream.text), [{ id: 'c4', changes: [{ rev: w.body.rev }] }]);
    ac.abort();

    t.equal((await node.request('GET', '/db/cf/_changes?feed=continuous&descending=true')).status, 400, 'descending is not a live feed');
    t.equal((await node.request('GET', '/db/cf/_changes?feed=continuous&heartbeat=soon')).status, 400);
    t.equal((await node.request('GET', '/db/cf/_changes?feed=continuous&heartbeat=5')).status, 400);
  });

  t.test('_sync_hlc merges base64 and text forms', async (t) => {
    const ahead = Date.now() + 3_600_000;
    const text = await node.request('POST', '/db/b/_sync_hlc', { body: { hlc: `{timestamp,${ahead},7}` } });
    t.equal(text.status, 200);
    t.match(text.body, { ok: true, db: 'b', hlc: `{timestamp,${ahead},8}` });
    const b64 = await node.request('POST', '/db/b/_sync_hlc', { body: { hlc: hlcToBase64({ wallMs: ahead + 5, logical: 0 }) } });
    t.equal(b64.body.hlc, `{timestamp,${ahead + 5},1}`);
    t.equal(b64.body.hlc_base64.length, 16);
    // Every later write sorts after the merged clock.
    const w = await node.request('PUT', '/db/b/after-sync', { body: {} });
    t.ok(w.status === 201);
    const ch = await node.request('GET', '/db/b/_changes?descending=true&limit=1');
    t.ok(Number(/,(\d+),/.exec(ch.body.results[0].seq)![1]) >= ahead + 5);
    for (const body of [{}, { hlc: 'nope' }, { hlc: 5 }, { hlc: '{timestamp,-1,0}' }]) {
      const bad = await node.request('POST', '/db/b/_sync_hlc', { body });
      t.equal(bad.status, 400, JSON.stringify(body));
      t.equal(bad.body.error, 'bad_request');
    }
  });

  // Last: it closes the node.
  t.test('shutdown ends open streams and long polls instead of waiting for them', async (t) => {
    const stream = await fetch(`${node.url}/db/c/_changes/stream?since=now&heartbeat=3600000`, { headers: { authorization: `Bearer ${node.adminKey}` } });
    const reader = stream.body!.getReader();
    await reader.read(); // the stream is open
    const poll = node.request('GET', '/db/c/_changes?feed=longpoll&since=now&timeout=600000');
    const feeds = async () => ((await node.request('GET', '/health')).body.docdb.databases as { name: string; open_feeds: number }[]).find((d) => d.name === 'c')!.open_feeds;
    await waitFor(async () => (await feeds()) >= 2, { timeoutMs: 10_000, what: 'the stream and the long poll to wait' });
    await node.node.close();
    const ended = await waitFor(async () => (await reader.read()).done, { timeoutMs: 10_000, what: 'the stream to end' });
    t.ok(ended, 'the SSE stream ended');
    const answered = await poll;
    t.equal(answered.status, 200);
    t.same(answered.body.results, [], 'the long poll answered empty');
  });
});

t.test('_sync_hlc rejects a clock too far ahead when a max offset is set', async (t) => {
  const node = await startTestNode({ SERVICE_HLC_MAX_OFFSET_MS: '1000' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/h');
  const r = await node.request('POST', '/db/h/_sync_hlc', { body: { hlc: `{timestamp,${Date.now() + 60_000},0}` } });
  t.equal(r.status, 409);
  t.match(r.body, { error: 'conflict', message: /clock skew rejected/ });
  const ok = await node.request('POST', '/db/h/_sync_hlc', { body: { hlc: `{timestamp,${Date.now() - 60_000},0}` } });
  t.equal(ok.status, 200);
});
