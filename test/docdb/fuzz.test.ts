// Fuzzes the document routes with bodies built for them (the route fuzzer in test/http mostly
// meets "not found" and schema 400s): `_find` and `_explain` with selectors of every operator,
// sorts, projections and bookmarks; `_bulk_docs` local and replicated (revisions, histories,
// inline attachments and stubs, tombstones); `_changes` with filters; `_bulk_get`,
// `_revs_diff`, `_all_docs` with keys; document PUTs with options; COPY; attachments; local
// documents; `_index`. On a database and on a VDB, standalone and on a one-node cluster, over
// documents that exist. Any of it must get a 2xx or a 4xx, never a 5xx, and the node must stay
// healthy, with its database. Failures are collected with their request and answer
// (fcSequenceParams: replay a run with its seed). It found that `DELETE /db/fz?rev=…` (a
// document's DELETE whose id came out empty) dropped the database.
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { fcSequenceParams, StatusTally } from '../support/fc.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { startClusterTestNode } from '../support/one-node-cluster.js';

const requestTimeoutMs = 5_000;

const IDS = ['a', 'b', 'c', '_design/d', 'constructor', 'é', 'x'.repeat(600)];
const arbId = fc.oneof(fc.constantFrom(...IDS), fc.string({ maxLength: 6 }));
// An id in a path is never empty: `DELETE /db/fz/` is the database's DELETE, and without a rev
// it drops the database (with one it is a 400: documents.test.ts).
const arbPathId = fc.oneof(fc.constantFrom(...IDS), fc.string({ minLength: 1, maxLength: 6 }));
const arbRev = fc.oneof(
  fc.constantFrom('1-abc', '2-0123456789abcdef0123456789abcdef', '0-x', '1-', '-1', 'abc', '99999999999-a', '1-' + 'f'.repeat(200)),
  fc.tuple(fc.integer({ min: 1, max: 5 }), fc.stringMatching(/^[0-9a-f]{1,40}$/)).map(([g, h]) => `${g}-${h}`),
);
const arbPath = fc.oneof(fc.constantFrom('n', 'tags', 'profile.city', 'a.b.c', '_id', '_rev', 'tags.0', '', '.', 'n.'), fc.array(fc.oneof(fc.constantFrom('n', 'tags', 'profile', 'city'), fc.integer({ min: -1, max: 3 })), { maxLength: 3 }));
const arbScalar = fc.oneof(fc.integer({ min: -3, max: 5 }), fc.constantFrom('x', 'y', '', 'é', null, true, false, 1.5, 1e308, -0), fc.string({ maxLength: 4 }));
const arbOperand = fc.oneof(arbScalar, fc.array(arbScalar, { maxLength: 3 }), fc.constantFrom('^x', '(a|b)*', '(?=x)', '[', '\\1'), fc.jsonValue({ maxDepth: 1 }));
const OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$prefix', '$contains', '$all', '$size', '$mod', '$type', '$elemMatch', '$allMatch', '$keyMapMatch', '$beginsWith', '$not', '$foo'];
const arbSelector: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  selector: fc.oneof(
    { depthSize: 'small' },
    fc.dictionary(fc.constantFrom('n', 'tags', 'profile.city', '_id', '_rev', 'missing', 'constructor'), fc.oneof(arbScalar, fc.dictionary(fc.constantFrom(...OPERATORS), arbOperand, { maxKeys: 2 })), { maxKeys: 3 }),
    fc.record({ $and: fc.array(tie('selector'), { maxLength: 3 }) }),
    fc.record({ $or: fc.array(tie('selector'), { maxLength: 3 }) }),
    fc.record({ $nor: fc.array(tie('selector'), { maxLength: 2 }) }),
    fc.record({ $not: tie('selector') }),
    fc.record({ tags: fc.record({ $elemMatch: tie('selector') }) }),
  ),
})).selector;
const arbCondition: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  condition: fc.oneof(
    { depthSize: 'small' },
    fc.record({ path: arbPath, op: fc.constantFrom('=', '!=', '>', '>=', '<', '<=', 'in', 'contains', 'prefix', 'regex', 'exists', 'missing', 'eq', '=/=', 'bogus'), value: arbOperand }, { requiredKeys: ['path'] }),
    fc.record({ and: fc.array(tie('condition'), { maxLength: 3 }) }),
    fc.record({ or: fc.array(tie('condition'), { maxLength: 3 }) }),
    fc.record({ not: tie('condition') }),
  ),
})).condition;
const arbSort = fc.array(fc.oneof(fc.constantFrom('n', '_id', '_rev', 'tags'), fc.dictionary(fc.constantFrom('n', '_id', 'profile.city'), fc.constantFrom('asc', 'desc', 'up'), { minKeys: 1, maxKeys: 1 }), fc.record({ path: arbPath, dir: fc.constantFrom('asc', 'desc') })), { maxLength: 3 });
const arbFind = fc.record(
  {
    selector: arbSelector,
    where: fc.array(arbCondition, { maxLength: 3 }),
    limit: fc.oneof(fc.integer({ min: -1, max: 12 }), fc.constant(100_001)),
    skip: fc.integer({ min: -1, max: 5 }),
    offset: fc.integer({ min: 0, max: 5 }),
    sort: arbSort,
    order_by: arbSort,
    fields: fc.array(fc.oneof(fc.constantFrom('n', '_id', '_rev', 'profile.city', 'tags', '_conflicts'), arbPath), { maxLength: 3 }),
    bookmark: fc.oneof(fc.constantFrom('nil', '', 'garbage', 'g1AAAA'), fc.base64String({ maxLength: 24 })),
    include_docs: fc.boolean(),
    conflicts: fc.boolean(),
    execution_stats: fc.boolean(),
    allow_fallback: fc.boolean(),
    use_index: fc.oneof(fc.string({ maxLength: 5 }), fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 })),
    r: fc.integer({ min: 0, max: 3 }),
    stale: fc.constantFrom('ok', false, 'x'),
  },
  { requiredKeys: [] },
);
// Mostly valid forms too, so requests reach the planner, the write path and the feeds rather
// than stopping at a check: every operator with an operand of its kind.
const arbValidOperator: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ op: fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$contains'), v: arbScalar }).map(({ op, v }) => ({ [op]: v })),
  fc.record({ op: fc.constantFrom('$in', '$nin', '$all'), v: fc.array(arbScalar, { maxLength: 3 }) }).map(({ op, v }) => ({ [op]: v })),
  fc.boolean().map((v) => ({ $exists: v })),
  fc.constantFrom('x', '^y', 'a|b', '.*').map((v) => ({ $regex: v })),
  fc.constantFrom('x', '', 'é').map((v) => ({ $prefix: v })),
  fc.integer({ min: 0, max: 3 }).map((v) => ({ $size: v })),
  fc.constantFrom([2, 0], [3, 1], [-2, 1]).map((v) => ({ $mod: v })),
  fc.constantFrom('null', 'boolean', 'number', 'string', 'array', 'object').map((v) => ({ $type: v })),
);
const arbValidSelector: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  selector: fc.oneof(
    { depthSize: 'small' },
    fc.dictionary(fc.constantFrom('n', 'tags', 'profile.city', '_id', 'missing'), fc.oneof(arbScalar, arbValidOperator), { maxKeys: 2 }),
    fc.record({ $or: fc.array(tie('selector'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ $and: fc.array(tie('selector'), { minLength: 1, maxLength: 2 }) }),
    fc.record({ tags: fc.record({ $elemMatch: fc.oneof(arbValidOperator, fc.constant({ $gt: 0 })) }) }),
  ),
})).selector;
const arbValidFind = fc.record(
  {
    selector: arbValidSelector,
    limit: fc.integer({ min: 0, max: 12 }),
    skip: fc.integer({ min: 0, max: 5 }),
    sort: fc.constantFrom([], ['_id'], [{ _id: 'desc' }], [{ n: 'asc' }], [{ n: 'desc' }, '_id'], ['profile.city']),
    fields: fc.constantFrom(['n'], ['_id', 'n'], ['_id', '_rev', 'profile.city'], ['_conflicts', '_id']),
    include_docs: fc.boolean(),
    conflicts: fc.boolean(),
    execution_stats: fc.boolean(),
  },
  { requiredKeys: ['selector'] },
);
const arbValidDoc = fc.record(
  { _id: fc.constantFrom('a', 'b', 'c', 'constructor', 'é', 'new1'), _rev: fc.constantFrom('2-aaaa', '2-bbbb', '1-cccc', '1-dddd'), n: arbScalar, tags: fc.array(arbScalar, { maxLength: 3 }), profile: fc.record({ city: arbScalar }), _deleted: fc.constant(true), _attachments: fc.constantFrom({ x: { stub: true } }, { y: { content_type: 'text/plain', data: 'aGVsbG8=' } }) },
  { requiredKeys: ['_id'] },
);
const arbAttachment = fc.oneof(
  fc.record({ content_type: fc.constantFrom('text/plain', '', 'x'), data: fc.oneof(fc.base64String({ maxLength: 16 }), fc.constantFrom('!!', '=', 'aGVsbG8=')) }, { requiredKeys: [] }),
  fc.record({ stub: fc.constant(true), digest: fc.constantFrom('sha256-abc', 'md5-xyz', 'constructor'), revpos: fc.integer({ min: -1, max: 3 }), length: fc.integer({ min: -1, max: 10 }) }, { requiredKeys: ['stub'] }),
  fc.jsonValue({ maxDepth: 1 }),
);
const arbRevisions = fc.oneof(
  fc.record({ start: fc.integer({ min: -1, max: 6 }), ids: fc.array(fc.oneof(fc.stringMatching(/^[0-9a-f]{1,8}$/), fc.constantFrom('', 'ABC', 'x-y')), { maxLength: 5 }) }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 1 }),
);
const arbDoc = fc.record(
  {
    _id: arbId,
    _rev: arbRev,
    _deleted: fc.oneof(fc.boolean(), fc.constant('yes')),
    _revisions: arbRevisions,
    _attachments: fc.dictionary(fc.constantFrom('x', 'y.txt', '', '__proto__', 'constructor'), arbAttachment, { maxKeys: 2 }),
    _conflicts: fc.array(arbRev, { maxLength: 2 }),
    n: arbScalar,
    tags: fc.array(arbScalar, { maxLength: 3 }),
    profile: fc.record({ city: arbScalar }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);
const arbIdList = fc.array(arbId, { maxLength: 4 });

interface DocRequest {
  method: string;
  /** After the database's path: `''`, `/_find`, `/<id>`. */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: Buffer;
}

const enc = encodeURIComponent;
const revQuery = (rev: string | undefined): Record<string, string> => (rev === undefined ? {} : { rev });
const arbQuery = (keys: readonly string[], values: fc.Arbitrary<string>) => fc.dictionary(fc.constantFrom(...keys), values, { maxKeys: 4 });
const arbQueryValue = fc.oneof(fc.constantFrom('true', 'false', '0', '1', '5', '-1', 'now', 'first', 'all', '["1-abc"]', '[]', '"a"', 'x', 'longpoll', 'normal', 'continuous', 'eventsource', 'all_docs', 'main_only', '_doc_ids', '_selector', '50', '%'), fc.string({ maxLength: 5 }));

const arbRequest: fc.Arbitrary<DocRequest> = fc.oneof(
  arbValidFind.map((body) => ({ method: 'POST', path: '/_find', body })),
  arbValidFind.map((body) => ({ method: 'POST', path: '/_find', body })),
  fc.record({ docs: fc.array(arbValidDoc, { minLength: 1, maxLength: 4 }), new_edits: fc.boolean() }, { requiredKeys: ['docs'] }).map((body) => ({ method: 'POST', path: '/_bulk_docs', body })),
  fc.record({ since: fc.constantFrom('0', 'now', 'first'), limit: fc.constantFrom('1', '3', '100'), include_docs: fc.constantFrom('true', 'false'), conflicts: fc.constantFrom('true', 'false'), style: fc.constantFrom('all_docs', 'main_only'), feed: fc.constantFrom('normal', 'longpoll') }, { requiredKeys: [] }).map((query) => ({ method: 'GET', path: '/_changes', query: { ...query, timeout: '50' } })),
  fc.record({ doc_ids: fc.array(fc.constantFrom('a', 'b', 'constructor'), { maxLength: 2 }), selector: arbValidSelector, limit: fc.integer({ min: 1, max: 5 }), include_docs: fc.boolean() }, { requiredKeys: [] }).map((body) => ({ method: 'POST', path: '/_changes', body })),
  arbFind.map((body) => ({ method: 'POST', path: '/_find', body })),
  arbFind.map((body) => ({ method: 'POST', path: '/_explain', body })),
  fc.record({ docs: fc.array(arbDoc, { maxLength: 4 }), new_edits: fc.boolean() }, { requiredKeys: ['docs'] }).map((body) => ({ method: 'POST', path: '/_bulk_docs', body })),
  fc.tuple(arbQuery(['since', 'limit', 'include_docs', 'conflicts', 'style', 'feed', 'timeout', 'filter', 'doc_ids', 'descending', 'heartbeat', 'attachments'], arbQueryValue), fc.record({ doc_ids: arbIdList, selector: arbSelector, query: fc.record({ where: fc.array(arbCondition, { maxLength: 2 }) }), since: fc.constantFrom('now', 'first', 0, '0', 'x'), limit: fc.integer({ min: -1, max: 5 }), include_docs: fc.boolean() }, { requiredKeys: [] }), fc.boolean()).map(([query, body, post]) => ({ method: post ? 'POST' : 'GET', path: '/_changes', query: { ...query, ...(query.feed === undefined ? {} : { timeout: '50', heartbeat: '100' }) }, ...(post ? { body } : {}) })),
  fc.record({ docs: fc.array(fc.record({ id: arbId, rev: arbRev, atts_since: fc.array(arbRev, { maxLength: 2 }) }, { requiredKeys: [] }), { maxLength: 3 }) }).chain((body) => arbQuery(['revs', 'attachments', 'latest'], arbQueryValue).map((query) => ({ method: 'POST', path: '/_bulk_get', query, body }))),
  fc.dictionary(arbId, fc.oneof(fc.array(arbRev, { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })), { maxKeys: 3 }).map((body) => ({ method: 'POST', path: '/_revs_diff', body })),
  fc.tuple(arbQuery(['startkey', 'endkey', 'start_key', 'end_key', 'key', 'keys', 'limit', 'skip', 'descending', 'include_docs', 'inclusive_end', 'conflicts', 'attachments'], fc.oneof(arbQueryValue, arbId.map((id) => JSON.stringify(id)))), fc.option(fc.record({ keys: fc.oneof(arbIdList, fc.jsonValue({ maxDepth: 1 })) }), { nil: undefined })).map(([query, body]) => ({ method: body === undefined ? 'GET' : 'POST', path: '/_all_docs', query, ...(body === undefined ? {} : { body }) })),
  fc.tuple(arbPathId, arbDoc, arbQuery(['rev', 'new_edits', 'batch'], fc.oneof(arbQueryValue, arbRev)), fc.option(arbRev, { nil: undefined })).map(([id, body, query, ifMatch]) => ({ method: 'PUT', path: `/${enc(id)}`, query, body, ...(ifMatch === undefined ? {} : { headers: { 'if-match': `"${ifMatch}"` } }) })),
  fc.tuple(arbPathId, arbQuery(['rev', 'revs', 'conflicts', 'deleted_conflicts', 'revs_info', 'meta', 'open_revs', 'latest', 'attachments', 'atts_since', 'deleted', 'local_seq'], fc.oneof(arbQueryValue, arbRev))).map(([id, query]) => ({ method: 'GET', path: `/${enc(id)}`, query })),
  fc.tuple(arbPathId, fc.option(arbRev, { nil: undefined })).map(([id, rev]) => ({ method: 'DELETE', path: `/${enc(id)}`, query: revQuery(rev) })),
  fc.tuple(arbPathId, fc.oneof(arbId, fc.constantFrom('', '?rev=1-abc', 'b?rev=', '%zz')), fc.option(arbRev, { nil: undefined })).map(([id, dest, rev]) => ({ method: 'COPY', path: `/${enc(id)}`, query: revQuery(rev), headers: { destination: dest } })),
  fc.tuple(arbPathId, fc.constantFrom('x', 'y.txt', 'constructor', '%2F', '_x'), fc.option(arbRev, { nil: undefined }), fc.uint8Array({ maxLength: 32 })).map(([id, name, rev, bytes]) => ({ method: 'PUT', path: `/${enc(id)}/${name}`, query: revQuery(rev), headers: { 'content-type': 'text/plain' }, raw: Buffer.from(bytes) })),
  fc.tuple(arbPathId, fc.constantFrom('x', 'y.txt', 'constructor'), fc.constantFrom('GET', 'DELETE'), fc.option(arbRev, { nil: undefined })).map(([id, name, method, rev]) => ({ method, path: `/${enc(id)}/${name}`, query: revQuery(rev) })),
  fc.tuple(fc.constantFrom('a', 'cp', 'constructor', ''), fc.constantFrom('GET', 'PUT', 'DELETE'), fc.jsonValue({ maxDepth: 1 }), fc.option(arbRev, { nil: undefined })).map(([id, method, body, rev]) => ({ method, path: `/_local/${id}`, query: revQuery(rev), ...(method === 'PUT' ? { body } : {}) })),
  fc.record({ index: fc.record({ fields: fc.oneof(fc.array(fc.oneof(fc.constantFrom('n', '_id'), fc.dictionary(fc.constantFrom('n', 'x'), fc.constantFrom('asc', 'desc', 'x'), { maxKeys: 1 })), { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })), partial_filter_selector: arbSelector }, { requiredKeys: [] }), name: fc.string({ maxLength: 4 }), type: fc.constantFrom('json', 'text', 'x') }, { requiredKeys: [] }).map((body) => ({ method: 'POST', path: '/_index', body })),
);

/** `runs` requests at the database or VDB `base` of `node`: no 5xx, and healthy after. */
async function fuzz(t: Test, node: TestNode, base: string, runs: number): Promise<void> {
  // Documents with conflicts, attachments and tombstones for the requests to meet.
  const seeded = await node.request('POST', `${base}/_bulk_docs`, {
    body: {
      new_edits: false,
      docs: [
        { _id: 'a', _rev: '2-aaaa', _revisions: { start: 2, ids: ['aaaa', '1111'] }, n: 1, tags: ['x', 2], profile: { city: 'y' }, _attachments: { x: { content_type: 'text/plain', data: 'aGVsbG8=' } } },
        { _id: 'a', _rev: '2-bbbb', _revisions: { start: 2, ids: ['bbbb', '1111'] }, n: 2 },
        { _id: 'b', _rev: '1-cccc', _deleted: true },
        { _id: 'constructor', _rev: '1-dddd', n: 'x' },
        { _id: '_design/d', _rev: '1-eeee', views: {} },
      ],
    },
  });
  t.equal(seeded.status, 201, `seeded: ${seeded.text}`);
  const failures: string[] = [];
  const statuses = new StatusTally();
  await fc.assert(
    fc.asyncProperty(arbRequest, async (r) => {
      const qs = r.query === undefined || Object.keys(r.query).length === 0 ? '' : `?${Object.entries(r.query).map(([k, v]) => `${k}=${enc(v)}`).join('&')}`;
      const headers: Record<string, string> = { authorization: `Bearer ${node.adminKey}`, ...r.headers };
      let body: string | Buffer | undefined;
      if (r.raw !== undefined) body = r.raw;
      else if (r.body !== undefined) {
        body = JSON.stringify(r.body);
        headers['content-type'] = 'application/json';
      }
      const what = `${r.method} ${base}${r.path}${qs} ${r.headers === undefined ? '' : JSON.stringify(r.headers)} ${typeof body === 'string' ? body.slice(0, 400) : body === undefined ? '' : `<${body.length} bytes>`}`;
      try {
        const res = await fetch(node.url + base + r.path + qs, { method: r.method, headers, body, signal: AbortSignal.timeout(requestTimeoutMs) });
        const text = (res.headers.get('content-type') ?? '').includes('text/event-stream') ? (await res.body?.cancel(), '') : await res.text();
        statuses.add(res.status);
        if (res.status >= 500) failures.push(`${what} -> ${res.status} ${text.slice(0, 300)}`);
      } catch (err) {
        // A held feed (a long poll, a continuous one) at the deadline is not a failure; anything else is.
        if ((err as Error).name !== 'TimeoutError' || (r.path !== '/_changes' && r.query?.feed === undefined)) failures.push(`${what} -> ${String(err)}`);
      }
      return true; // collected in `failures`, said below with their answers
    }),
    fcSequenceParams(runs, (text) => t.comment(text)),
  );
  t.same(failures, [], 'no 5xx');
  t.comment(String(statuses));
  // Nothing drawn here drops the database (a DELETE of `/db/fz?rev=…` did: documents.test.ts).
  t.equal((await node.request('GET', base)).status, 200, `${base} is still there`);
  const health = await node.request('GET', '/health');
  t.equal(health.status, 200, `healthy after: ${health.text}`);
}

t.test('document routes of a database and a VDB never answer with a 5xx', async (t) => {
  const node = await startTestNode({ SERVICE_STREAM_HEARTBEAT_MS: '100' });
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/fz')).status, 201);
  t.equal((await node.request('POST', '/vdb', { body: { name: 'vz', shard_count: 3 } })).status, 201);
  await fuzz(t, node, '/db/fz', 500);
  await fuzz(t, node, '/vdb/vz', 300);
});

t.test('a cluster node: a VDB\'s document routes never answer with a 5xx', async (t) => {
  const node = await startClusterTestNode({ SERVICE_STREAM_HEARTBEAT_MS: '100', SERVICE_NODE_NAME: 'dz1' });
  t.teardown(() => node.close());
  t.equal((await node.request('POST', '/vdb', { body: { name: 'vz', shard_count: 2 } })).status, 201);
  await fuzz(t, node, '/vdb/vz', 300);
});
