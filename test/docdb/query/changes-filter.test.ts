// Changes feeds filtered by content: a `where` query (poll and SSE), CouchDB's selector and
// filter parameter, and MQTT-style path subscriptions over SSE.
import t from 'tap';
import { startTestNode } from '../../support/node.js';

/** Read SSE `change` events until `count` arrived; returns their ids. */
async function readEvents(res: Response, count: number): Promise<string[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const ids: string[] = [];
  while (ids.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) !== -1) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = /^data: (.*)$/m.exec(event);
      if (data !== null && /^event: change$/m.test(event)) ids.push(JSON.parse(data[1]!).id);
    }
  }
  await reader.cancel();
  return ids;
}

t.test('changes filtered by query and by path patterns', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/feed');
  const docs = [
    { _id: 'u1', type: 'user', age: 30, tags: ['red'] },
    { _id: 'a1', type: 'admin', age: 50 },
    { _id: 'u2', type: 'user', age: 60, profile: { city: 'Oslo' } },
    { _id: 'o1', kind: 'other' },
  ];
  await node.request('POST', '/db/feed/_bulk_docs', { body: { docs } });
  const u1 = await node.request('GET', '/db/feed/u1');
  await node.request('DELETE', `/db/feed/u1?rev=${u1.body._rev}`);

  const byQuery = await node.request('POST', '/db/feed/_changes', { body: { query: { where: [{ path: ['type'], value: 'user' }] } } });
  t.same(byQuery.body.results.map((r: { id: string }) => r.id), ['u2'], 'a deleted document never matches a query');
  const older = await node.request('POST', '/db/feed/_changes', { body: { query: { where: [{ path: ['age'], op: '>=', value: 50 }] }, include_docs: true } });
  t.same(older.body.results.map((r: { id: string; doc: { age: number } }) => [r.id, r.doc.age]), [['a1', 50], ['u2', 60]]);
  const both = await node.request('POST', '/db/feed/_changes', { body: { doc_ids: ['a1', 'o1'], query: { where: [{ path: ['age'], op: 'exists' }] } } });
  t.same(both.body.results.map((r: { id: string }) => r.id), ['a1'], 'doc_ids AND query');
  t.equal((await node.request('POST', '/db/feed/_changes', { body: { query: { where: [{ path: ['a'], op: 'nope' }] } } })).status, 400);

  const byPath = await node.request('GET', '/db/feed/_changes?paths=type/%2B&paths=profile/%23');
  t.same(byPath.body.results.map((r: { id: string }) => r.id), ['a1', 'u2'], 'type/+ or profile/#');
  const deleted = await node.request('GET', '/db/feed/_changes?paths=u1');
  t.same(deleted.body.results.map((r: { id: string }) => r.id), ['u1'], 'a deletion matches by its id');
  t.equal((await node.request('GET', '/db/feed/_changes?paths=a/%23/b')).status, 400);

  // CouchDB's filter parameter: its built-in forms, and a 400 for what does not exist here.
  const bySelector = await node.request('POST', '/db/feed/_changes?filter=_selector', { body: { selector: { type: 'user' } } });
  t.same(bySelector.body.results.map((r: { id: string }) => r.id), ['u2'], 'filter=_selector with a body selector (PouchDB)');
  const selectorAndQuery = await node.request('POST', '/db/feed/_changes', { body: { selector: { age: { $gte: 50 } }, query: [{ path: ['type'], value: 'admin' }] } });
  t.same(selectorAndQuery.body.results.map((r: { id: string }) => r.id), ['a1'], 'a selector AND a query');
  const byIds = await node.request('GET', '/db/feed/_changes?filter=_doc_ids&doc_ids=%5B%22o1%22%5D');
  t.same(byIds.body.results.map((r: { id: string }) => r.id), ['o1'], 'filter=_doc_ids');
  const refused: [string, string, unknown, RegExp][] = [
    ['GET', '/db/feed/_changes?filter=app/by_type', undefined, /no design-document filters or views/],
    ['GET', '/db/feed/_changes?filter=_view&view=app/v', undefined, /not offered/],
    ['GET', '/db/feed/_changes?filter=_doc_ids', undefined, /needs "doc_ids"/],
    ['GET', '/db/feed/_changes?filter=_selector', undefined, /needs a "selector"/],
    ['POST', '/db/feed/_changes?filter=_selector', {}, /needs a "selector"/],
    ['POST', '/db/feed/_changes', { selector: { type: { $near: 1 } } }, /\$near/],
  ];
  for (const [method, path, body, message] of refused) {
    const r = await node.request(method, path, { body });
    t.equal(r.status, 400, path);
    t.match(r.body.message, message);
  }

  t.test('paging a filtered feed resumes exactly', async (t) => {
    for (let i = 0; i < 30; i++) await node.request('PUT', `/db/feed/p${i}`, { body: { type: i % 3 === 0 ? 'user' : 'bot', i } });
    const want = (await node.request('POST', '/db/feed/_changes', { body: { query: [{ path: ['type'], value: 'user' }] } })).body.results.map((r: { id: string }) => r.id);
    const got: string[] = [];
    let since = '0';
    for (let i = 0; i < 50; i++) {
      const page = await node.request('POST', '/db/feed/_changes', { body: { since, limit: 3, query: [{ path: ['type'], value: 'user' }] } });
      if (page.body.results.length === 0) break;
      got.push(...page.body.results.map((r: { id: string }) => r.id));
      since = page.body.last_seq;
    }
    t.same(got, want);
  });

  t.test('SSE: path subscription and query body, pushed on write', async (t) => {
    const sub = await fetch(`${node.url}/db/feed/_changes/stream?since=now&paths=type/user/%23`, { headers: { authorization: `Bearer ${node.adminKey}` } });
    t.equal(sub.status, 200);
    const viaBody = await fetch(`${node.url}/db/feed/_changes/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ since: 'now', query: { where: [{ path: ['age'], op: '>', value: 100 }] } }),
    });
    t.equal(viaBody.status, 200);
    const pathEvents = readEvents(sub, 1);
    const queryEvents = readEvents(viaBody, 1);
    await node.request('PUT', '/db/feed/s1', { body: { type: 'bot', age: 5 } });
    await node.request('PUT', '/db/feed/s2', { body: { type: 'user', age: 7 } });
    await node.request('PUT', '/db/feed/s3', { body: { type: 'bot', age: 101 } });
    t.same(await pathEvents, ['s2']);
    t.same(await queryEvents, ['s3']);
    const badQuery = await node.request('POST', '/db/feed/_changes/stream', { body: { query: [{ path: [], value: 1 }] } });
    t.equal(badQuery.status, 400);
  });
});
