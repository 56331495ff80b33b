// Bodies are typed (JSON/CBOR) and validated without coercion; query strings are text and
// are coerced to their schema's types.
import t from 'tap';
import { startTestNode } from '../support/node.js';

t.test('a body of the wrong type is a 400, never silently converted', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/v')).status, 201);
  const cases: [string, string, unknown][] = [
    ['POST', '/db/v/_bulk_docs', { docs: 'x' }],
    ['POST', '/db/v/_bulk_docs', { docs: [], new_edits: 'false' }],
    ['POST', '/db/v/_changes', { limit: '10' }],
    ['POST', '/db/v/_changes', { include_docs: 1 }],
    ['POST', '/db/v/_changes', { doc_ids: 'a' }],
  ];
  for (const [method, path, body] of cases) {
    const r = await node.request(method, path, { body });
    t.same([r.status, r.body.error], [400, 'bad_request'], `${method} ${path} ${JSON.stringify(body)}`);
  }
  const info = await node.request('GET', '/db/v');
  t.equal(info.body.doc_count, 0, 'nothing was written');
  t.equal((await node.request('POST', '/db/v/_changes', { body: { limit: 10, include_docs: true } })).status, 200, 'the right types pass');
});

t.test('query strings are still coerced from text', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/q');
  await node.request('POST', '/db/q/_bulk_docs', { body: { docs: [{ _id: 'a' }, { _id: 'b' }] } });
  const r = await node.request('GET', '/db/q/_changes?limit=1&include_docs=true');
  t.equal(r.status, 200);
  t.equal(r.body.results.length, 1);
  t.ok(r.body.results[0].doc, 'include_docs=true read as a boolean');
  t.equal((await node.request('GET', '/db/q/_changes?limit=ten')).status, 400);
});
