// Bodies are typed (JSON/CBOR) and validated without coercion; query strings are text and
// are coerced to their schema's types.
import t from 'tap';
import { encodeCbor } from '../../src/core/codec.js';
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

t.test('Content-Type: application/json with an empty body is no body, on every route', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const json = { 'content-type': 'application/json' };
  const cbor = { 'content-type': 'application/cbor' };
  t.equal((await node.request('PUT', '/vectordb/collections/x', { body: { dimensions: 2 } })).status, 201);
  let r = await node.request('DELETE', '/vectordb/collections/x', { headers: json });
  t.equal(r.status, 200, r.text);
  t.equal((await node.request('PUT', '/db/e', { headers: json })).status, 201);
  const put = await node.request('PUT', '/db/e/d', { body: { a: 1 } });
  t.equal((await node.request('GET', '/db/e/d', { headers: json })).status, 200);
  t.equal((await node.request('DELETE', `/db/e/d?rev=${put.body.rev}`, { headers: cbor })).status, 200);
  // A route that needs a body still answers its own 400, not a parser error or a 500.
  r = await node.request('POST', '/db/e/_bulk_docs', { headers: json });
  t.same([r.status, r.body.error], [400, 'bad_request']);
  // Malformed JSON is still a 400.
  r = await node.request('POST', '/db/e/_bulk_docs', { body: '{"docs": [', raw: true, headers: json });
  t.same([r.status, r.body.error], [400, 'bad_request']);
});

t.test('a schema refusal says what to fix: the unknown property and the known ones, the allowed values', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  // `shard_count` for `num_shards`: the answer names both.
  let r = await node.request('PUT', '/vectordb/collections/c', { body: { dimensions: 4, shard_count: 2 } });
  t.equal(r.status, 400);
  t.match(r.body.message, /^body must NOT have additional properties: "shard_count" \(known: [a-z_, ]*num_shards/);
  // `dimension` (as GET shows it) for `dimensions`: the missing property and the spelling given.
  r = await node.request('PUT', '/vectordb/collections/c', { body: { dimension: 4 } });
  t.same(r.body, { error: 'bad_request', message: 'body must have required property \'dimensions\' ("dimension" is not a property of it)' });
  r = await node.request('PUT', '/vectordb/collections/c', { body: { num_shards: 2 } });
  t.same(r.body, { error: 'bad_request', message: 'body must have required property \'dimensions\'' }, 'nothing more when every property given is known');
  r = await node.request('PUT', '/vectordb/collections/c', { body: { dimensions: 4, metric: 'cos' } });
  t.same(r.body, { error: 'bad_request', message: 'body/metric must be equal to one of the allowed values: "cosine", "l2", "ip"' });
  // Query strings too, and the other keywords keep fastify's words.
  t.equal((await node.request('PUT', '/db/v')).status, 201);
  r = await node.request('GET', '/db/v/_changes?feed=sometimes');
  t.match(r.body.message, /^querystring\/feed must be equal to one of the allowed values: "normal", /);
  r = await node.request('GET', '/db/v/_changes?limit=ten');
  t.same(r.body, { error: 'bad_request', message: 'querystring/limit must be integer' });
  // A document of a batch refused on its own carries the same words, under its place.
  t.equal((await node.request('PUT', '/vectordb/collections/c', { body: { dimensions: 2 } })).status, 201);
  r = await node.request('POST', '/vectordb/collections/c/docs', { body: { documents: [{ id: 'a', vector: [1, 0] }, { id: 'b', vector: [0, 1], txt: 'x' }] } });
  t.equal(r.status, 200);
  t.match(r.body.results[1], { id: 'b', error: 'bad_request', message: /^documents\[1\] must NOT have additional properties: "txt" \(known: id, text, metadata, vector\)$/ });
});

// cbor-x reads a map key "__proto__" back as "__proto_": a document or payload with one was
// stored changed. A body with one is refused in CBOR as in JSON.
t.test('a "__proto__" key is a 400 in a CBOR body as in a JSON one', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/p');
  const doc = JSON.parse('{"a": {"__proto__": {"x": 1}}}') as unknown;
  const cbor = await node.request('PUT', '/db/p/d', { body: encodeCbor(doc), raw: true, headers: { 'content-type': 'application/cbor' } });
  t.match(cbor, { status: 400, body: { error: 'bad_request', message: /__proto__/ } });
  const json = await node.request('PUT', '/db/p/d', { body: '{"a": {"__proto__": {"x": 1}}}', raw: true, headers: { 'content-type': 'application/json' } });
  t.equal(json.status, 400, 'as fastify refuses it in JSON');
  t.equal((await node.request('GET', '/db/p/d')).status, 404, 'nothing was written');
  const fine = await node.request('PUT', '/db/p/d', { body: encodeCbor({ a: '__proto__', b: { __proto_: 1, constructor: 2 } }), raw: true, headers: { 'content-type': 'application/cbor' } });
  t.equal(fine.status, 201, 'a value "__proto__" and near names are fine');
  t.same((await node.request('GET', '/db/p/d')).body, { _id: 'd', id: 'd', _rev: fine.body.rev, a: '__proto__', b: { __proto_: 1, constructor: 2 } });
});

t.test('a CBOR body carries only what a JSON body could, and stored values nest at most 64 deep', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const cbor = (method: string, path: string, body: unknown) => node.request(method, path, { body: encodeCbor(body), raw: true, headers: { 'content-type': 'application/cbor' } });
  t.equal((await node.request('PUT', '/vectordb/collections/c', { body: { dimensions: 2 } })).status, 201);
  t.equal((await node.request('PUT', '/db/d')).status, 201);
  t.equal((await node.request('POST', '/vectordb/collections/c/docs', { body: { id: 'ok', text: 't', vector: [1, 0], metadata: { a: [1, { b: 'c' }] } } })).status, 201);

  // A bigint in a vector's metadata was stored, and then every GET of it and every search of
  // the collection answered 500.
  for (const [name, value, said] of [
    ['bigint', 2n ** 70n, /^invalid CBOR body: body\.metadata\.x: JSON has no form of an integer this large/],
    ['bytes', Buffer.from('hi'), /body\.metadata\.x: JSON has no form of a byte string/],
    ['date', new Date(0), /body\.metadata\.x: JSON has no form of a date/],
  ] as const) {
    const refused = await cbor('POST', '/vectordb/collections/c/docs', { id: name, text: 't', vector: [1, 0], metadata: { x: value } });
    t.match(refused, { status: 400, body: { error: 'bad_request', message: said } }, name);
    t.match(await cbor('PUT', `/db/d/${name}`, { x: [value] }), { status: 400, body: { message: /body\.x\[0\]: JSON has no form of/ } }, `${name} in a document`);
  }
  const nested = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = [v];
    return v;
  };
  // JSON bodies nested 100,000 deep: a 500 from the recursive encoder before.
  const deepJson = (inner: string) => `{"id":"deep","text":"t","vector":[1,0],"metadata":{"a":${'['.repeat(100_000)}${inner}${']'.repeat(100_000)}}}`;
  t.match(await node.request('POST', '/vectordb/collections/c/docs', { body: deepJson(''), raw: true, headers: { 'content-type': 'application/json' } }), {
    status: 400,
    body: { message: /^metadata\.a(\[0\])+: nested deeper than 64 levels$/ },
  });
  t.equal((await node.request('POST', '/vectordb/collections/c/docs', { body: { id: 'sixty', text: 't', vector: [1, 0], metadata: { a: nested(62) } } })).status, 201, '63 levels of metadata are fine');
  t.match(await node.request('PUT', '/db/d/_local/deep', { body: `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, raw: true, headers: { 'content-type': 'application/json' } }), {
    status: 400,
    body: { message: /^local document\.a(\[0\])+: nested deeper than 64 levels$/ },
  });
  t.equal((await node.request('PUT', '/db/d/_local/fine', { body: { a: nested(10) } })).status, 201);

  // Nothing refused was stored, and the collection still answers.
  for (const id of ['bigint', 'bytes', 'date', 'deep']) t.equal((await node.request('GET', `/vectordb/collections/c/docs/${id}`)).status, 404, id);
  const search = await node.request('POST', '/vectordb/collections/c/search', { body: { vector: [1, 0], k: 10 } });
  t.equal(search.status, 200);
  t.same((search.body.results as { id: string }[]).map((h) => h.id).sort(), ['ok', 'sixty']);
  t.same((await node.request('GET', '/vectordb/collections/c/docs/ok')).body.metadata, { a: [1, { b: 'c' }] });
});
