// Attachments over real HTTP: revisions, stubs, content type round trip, dedupe, the
// changes feed, If-Match, 404/409/413, inline base64 in document bodies.
import { createHash } from 'node:crypto';
import t from 'tap';
import { compactAndWait } from '../support/compact.js';
import { startTestNode } from '../support/node.js';

const sha = (b: Buffer) => `sha256-${createHash('sha256').update(b).digest('hex')}`;

t.test('attachments', async (t) => {
  const node = await startTestNode({ SERVICE_ATTACHMENT_MAX_BYTES: String(1024 * 1024) });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/att');
  const put = (path: string, body: Buffer | string, headers: Record<string, string> = {}) => node.request('PUT', path, { body, raw: true, headers });

  // On a missing document: creates it.
  const png = Buffer.from(Array.from({ length: 600_000 }, (_, i) => (i * 31) % 256));
  const created = await put('/db/att/photo/_attachments/pic.png', png, { 'content-type': 'image/png' });
  t.equal(created.status, 201);
  t.match(created.body, { ok: true, id: 'photo', rev: /^1-/, name: 'pic.png', content_type: 'image/png', length: png.length, digest: sha(png) });

  const got = await fetch(`${node.url}/db/att/photo/_attachments/pic.png`, { headers: { authorization: `Bearer ${node.adminKey}` } });
  t.equal(got.status, 200);
  t.equal(got.headers.get('content-type'), 'image/png', 'Content-Type round-trips');
  t.ok(got.headers.get('x-service-hlc'));
  t.ok(Buffer.from(await got.arrayBuffer()).equals(png), 'content round-trips (several chunks)');

  const doc = await node.request('GET', '/db/att/photo');
  t.same(doc.body._attachments, { 'pic.png': { content_type: 'image/png', digest: sha(png), length: png.length, revpos: 1, stub: true } });

  // On an existing document: needs its rev.
  const noRev = await put('/db/att/photo/_attachments/notes.txt', 'hi', { 'content-type': 'text/plain' });
  t.equal(noRev.status, 409);
  t.equal(noRev.body.error, 'conflict');
  const stale = await put('/db/att/photo/_attachments/notes.txt', 'hi', { 'content-type': 'text/plain', 'if-match': `1-${'0'.repeat(64)}` });
  t.equal(stale.status, 409);
  const second = await put('/db/att/photo/_attachments/notes.txt', 'hello', { 'content-type': 'text/plain; charset=utf-8', 'if-match': created.body.rev });
  t.equal(second.status, 201);
  t.match(second.body.rev, /^2-/);
  const txt = await node.request('GET', '/db/att/photo/_attachments/notes.txt');
  t.equal(txt.text, 'hello');
  t.equal(txt.headers.get('content-type'), 'text/plain; charset=utf-8');
  const withBoth = await node.request('GET', '/db/att/photo');
  t.same(Object.keys(withBoth.body._attachments).sort(), ['notes.txt', 'pic.png']);
  t.equal(withBoth.body._attachments['pic.png'].revpos, 1, 'an unchanged attachment keeps its revpos');
  t.equal(withBoth.body._attachments['notes.txt'].revpos, 2);

  // Updating the document with its stubs keeps the attachments; the old rev's content stays readable by rev.
  const upd = await node.request('PUT', '/db/att/photo', { body: { ...withBoth.body, title: 'sunset' } });
  t.equal(upd.status, 201);
  const after = await node.request('GET', '/db/att/photo');
  t.equal(after.body.title, 'sunset');
  t.same(Object.keys(after.body._attachments).sort(), ['notes.txt', 'pic.png']);
  const badStub = await node.request('PUT', '/db/att/photo', { body: { _rev: upd.body.rev, _attachments: { 'other.bin': { stub: true } } } });
  t.equal(badStub.status, 412);
  t.equal(badStub.body.error, 'precondition_failed');

  // Each attachment change is a change of the document in the feed.
  const changes = await node.request('GET', '/db/att/_changes');
  t.same(changes.body.results.map((r: { id: string; rev: string }) => [r.id, r.rev]), [['photo', upd.body.rev]]);

  // Delete: needs the rev, 404 for an unknown name, makes a new revision.
  const delNoRev = await node.request('DELETE', '/db/att/photo/_attachments/notes.txt');
  t.equal(delNoRev.status, 409);
  const delMissing = await node.request('DELETE', `/db/att/photo/_attachments/nope.txt?rev=${upd.body.rev}`);
  t.equal(delMissing.status, 404);
  t.same(delMissing.body, { error: 'not_found', message: 'attachment "nope.txt" of "photo" not found' });
  const del = await node.request('DELETE', '/db/att/photo/_attachments/notes.txt', { headers: { 'if-match': upd.body.rev } });
  t.equal(del.status, 200);
  t.match(del.body, { ok: true, id: 'photo', rev: /^4-/ });
  t.equal((await node.request('GET', '/db/att/photo/_attachments/notes.txt')).status, 404);
  t.equal((await node.request('GET', '/db/att/photo/_attachments/pic.png')).status, 200);
  t.equal((await node.request('GET', '/db/att/nodoc/_attachments/pic.png')).status, 404);

  // Too large: 413 with the error body, nothing stored.
  const big = Buffer.alloc(1024 * 1024 + 1, 1);
  const tooBig = await put('/db/att/big/_attachments/b.bin', big);
  t.equal(tooBig.status, 413);
  t.match(tooBig.body, { error: 'too_large', message: /SERVICE_ATTACHMENT_MAX_BYTES/ });
  t.equal((await node.request('GET', '/db/att/big')).status, 404);
  const chunked = await fetch(`${node.url}/db/att/big/_attachments/b.bin`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${node.adminKey}` },
    body: new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(300_000));
        c.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  t.equal(chunked.status, 413, 'a streamed body without Content-Length is cut off too');

  // Names and ids are validated.
  t.equal((await put('/db/att/photo/_attachments/a%5Cb', 'x')).status, 400);
  t.equal((await put('/db/att/_hidden/_attachments/a', 'x')).status, 400);

  // Inline base64 in a document body, deduplicated by digest.
  const inline = await node.request('PUT', '/db/att/inline', { body: { _attachments: { 'a.txt': { content_type: 'text/plain', data: Buffer.from('same').toString('base64') }, 'b.txt': { data: Buffer.from('same').toString('base64') } } } });
  t.equal(inline.status, 201);
  const a = await node.request('GET', '/db/att/inline/_attachments/a.txt');
  const b = await node.request('GET', '/db/att/inline/_attachments/b.txt');
  t.equal(a.text, 'same');
  t.equal(b.text, 'same');
  t.equal(b.headers.get('content-type'), 'application/octet-stream');

  // Deleting the document drops its attachments from the winner.
  const photo = await node.request('GET', '/db/att/photo');
  await node.request('DELETE', `/db/att/photo?rev=${photo.body._rev}`);
  t.equal((await node.request('GET', '/db/att/photo/_attachments/pic.png')).status, 404);
  // disk_size follows once compaction dropped the older bodies: only the inline doc's content and bodies remain.
  await compactAndWait(node, 'att');
  const info = await node.request('GET', '/db/att');
  t.ok(info.body.disk_size < 1000, `disk_size ${info.body.disk_size} no longer counts the dropped attachments`);
});

// A lookup by name in a plain object finds Object.prototype's members: before, a stub named
// "valueOf" matched "an attachment of the parent", a DELETE of a missing "constructor" made a
// revision, and an attachment named "__proto__" was acknowledged and lost (the CBOR codec reads
// that key back as "__proto_").
t.test('attachment names Object.prototype has', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await node.request('PUT', '/db/p');
  const put = (path: string, body: string) => node.request('PUT', path, { body, raw: true, headers: { 'content-type': 'text/plain' } });
  let rev = (await node.request('PUT', '/db/p/d', { body: { a: 1 } })).body.rev as string;
  t.match(await put(`/db/p/d/_attachments/__proto__?rev=${rev}`, 'lost'), { status: 400, body: { error: 'bad_request', message: /__proto__/ } }, '__proto__ is refused, not lost');
  t.match(await node.request('PUT', '/db/p/d2', { body: { _attachments: { __proto_x: { content_type: 'text/plain', data: 'aGk=' } } } }), { status: 201 }, 'a name that merely starts so is fine');
  const missing = await node.request('DELETE', `/db/p/d/_attachments/constructor?rev=${rev}`);
  t.match(missing, { status: 404, body: { error: 'not_found' } }, 'a missing "constructor" is missing');
  t.equal((await node.request('GET', '/db/p/d')).body._rev, rev, 'and no revision was made');
  for (const name of ['constructor', 'toString']) {
    const made = await put(`/db/p/d/_attachments/${name}?rev=${rev}`, `body of ${name}`);
    t.equal(made.status, 201, name);
    rev = made.body.rev;
    t.equal((await node.request('GET', `/db/p/d/_attachments/${name}`)).text, `body of ${name}`);
  }
  t.same(Object.keys((await node.request('GET', '/db/p/d')).body._attachments).sort(), ['constructor', 'toString']);
  const stub = await node.request('PUT', '/db/p/s', { body: { _attachments: { valueOf: { stub: true } } } });
  t.match(stub, { status: 412, body: { error: 'precondition_failed' } }, 'a stub of an attachment the parent does not have');
  const replicated = await node.request('POST', '/db/p/_bulk_docs', {
    body: { new_edits: false, docs: [{ _id: 'r', _rev: `1-${'a'.repeat(32)}`, _attachments: { x: { stub: true, digest: 'constructor', content_type: 'text/plain' } } }] },
  });
  t.match(replicated.body, [{ error: 'precondition_failed' }], 'a replicated stub of a digest this database does not hold');
});
