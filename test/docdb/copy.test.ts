// CouchDB's COPY over real HTTP: a document's revision, with its attachments, written as a new
// document named by the Destination header (or as the next revision of one, with ?rev=), in a
// database and in a VDB (whose source and destination may sit on different shards).
import t, { type Test } from 'tap';
import { type TestNode, startTestNode } from '../support/node.js';

const bytes = Buffer.from('firkin copy \u0000\u00ff bytes');

/** A document with one attachment and a second revision; its revisions, first then second. */
async function seed(node: TestNode, base: string): Promise<[string, string]> {
  const first = await node.request('PUT', `${base}/src`, { body: { v: 1, nested: { a: [1, 2] }, _attachments: { 'a.bin': { content_type: 'application/octet-stream', data: bytes.toString('base64') } } } });
  if (first.status !== 201) throw new Error(`seed: ${first.status} ${first.text}`);
  const second = await node.request('PUT', `${base}/src`, { body: { v: 2, nested: { a: [1, 2] }, _rev: first.body.rev, _attachments: { 'a.bin': { stub: true } } } });
  if (second.status !== 201) throw new Error(`seed: ${second.status} ${second.text}`);
  return [first.body.rev, second.body.rev];
}

const copy = (node: TestNode, path: string, destination?: string, key?: string) =>
  node.request('COPY', path, { headers: destination === undefined ? {} : { destination }, ...(key === undefined ? {} : { key }) });

async function checkCopies(t: Test, node: TestNode, base: string) {
  const [firstRev] = await seed(node, base);
  const made = await copy(node, `${base}/src`, 'dst');
  t.equal(made.status, 201, made.text);
  t.match(made.body, { ok: true, id: 'dst', rev: /^1-/ }, 'a new document at its first revision');
  t.equal(made.headers.get('etag'), `"${made.body.rev}"`);
  const dst = await node.request('GET', `${base}/dst?attachments=true`);
  t.same([dst.body.v, dst.body.nested], [2, { a: [1, 2] }], 'the winner\'s body');
  t.equal(Buffer.from(dst.body._attachments['a.bin'].data, 'base64').toString('latin1'), bytes.toString('latin1'), 'its attachment, byte for byte');
  t.equal(dst.body._attachments['a.bin'].content_type, 'application/octet-stream');
  t.equal((await node.request('GET', `${base}/src`)).body.v, 2, 'the source is untouched');

  t.equal((await copy(node, `${base}/src`, 'dst')).status, 409, 'onto an existing document without its rev: conflict');
  const replaced = await copy(node, `${base}/src?rev=${firstRev}`, `dst?rev=${made.body.rev}`);
  t.equal(replaced.status, 201, replaced.text);
  t.match(replaced.body, { id: 'dst', rev: /^2-/ }, 'Destination: id?rev= writes the next revision');
  t.equal((await node.request('GET', `${base}/dst`)).body.v, 1, '?rev= on the source copies that revision');

  const spaced = await copy(node, `${base}/src`, 'new%20doc');
  t.equal(spaced.body.id, 'new doc', 'a percent-encoded Destination is decoded');

  for (const [what, path, destination, status] of [
    ['no Destination header', `${base}/src`, undefined, 400],
    ['a reserved destination id', `${base}/src`, '_reserved', 400],
    ['a destination rev that is no revision', `${base}/src`, 'x?rev=abc', 400],
    ['a source rev that is no revision', `${base}/src?rev=nope`, 'x', 400],
    ['a missing source', `${base}/nothing`, 'x', 404],
  ] as const) {
    const r = await copy(node, path, destination);
    t.equal(r.status, status, `${what}: ${status} (${r.text})`);
    t.type(r.body.error, 'string');
  }
  const gone = await node.request('GET', `${base}/dst`);
  t.equal((await node.request('DELETE', `${base}/dst?rev=${gone.body._rev}`)).status, 200);
  t.equal((await copy(node, `${base}/dst`, 'y')).status, 404, 'a deleted document is not copied');
  const reader = (await node.request('POST', '/_keys', { body: { permissions: ['read'] } })).body.key as string;
  t.equal((await copy(node, `${base}/src`, 'z', reader)).status, 403, 'COPY is a write: a read key is refused');
}

t.test('COPY in a database', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/copies')).status, 201);
  await checkCopies(t, node, '/db/copies');
  t.equal((await copy(node, '/db/nowhere/src', 'x')).status, 404, 'a missing database');
  const patch = await node.request('PATCH', '/db/copies/src');
  t.equal(patch.status, 405);
  t.match(patch.headers.get('allow'), /\bCOPY\b/, 'a 405 on a document path names COPY among what it takes');
  t.ok(node.node.routes.some((r) => r.method === 'COPY' && r.url === '/db/:db/:docid'), 'the route list (which the fuzzer walks) has it');
});

t.test('COPY in a VDB, across shards', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('POST', '/vdb', { body: { name: 'vcopies', shard_count: 4 } })).status, 201);
  await checkCopies(t, node, '/vdb/vcopies');
  // src and dst route to different shards (phash2): the copy crossed shard databases.
  const shardOf = async (id: string) => {
    for (let s = 0; s < 4; s++) if ((await node.request('GET', `/db/vcopies_s${s}/${encodeURIComponent(id)}`)).status === 200) return s;
    return -1;
  };
  const [src, spaced] = [await shardOf('src'), await shardOf('new doc')];
  t.ok(src >= 0 && spaced >= 0, `the copies live in shards ${src} and ${spaced}`);
});
