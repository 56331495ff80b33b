// Route fuzzer: every registered route, random params, query strings and bodies (JSON of any
// shape, broken JSON, CBOR, garbage). Bad input must get a 4xx — never a 500, never a crash —
// and the node must stay healthy. New routes are fuzzed automatically (node.routes).
import { encode } from 'cbor-x';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ensureConsoleBuilt } from '../support/console.js';
import { fcSequenceParams, StatusTally } from '../support/fc.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { startClusterTestNode } from '../support/one-node-cluster.js';

const requestTimeoutMs = 3_000;

const arbSegment = fc.oneof(
  // Names an object's prototype has: a lookup by name in a plain object finds them.
  fc.constantFrom('fuzzdb', 'a', 'x_1', 'doc1', '_design', '_all_docs', '..', '0', '-1', 'A', 'db%2Fname', '%00', 'very'.repeat(40), 'constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 8 }).map(encodeURIComponent),
);

const QUERY_KEYS = [
  'rev', 'revs', 'conflicts', 'deleted', 'since', 'limit', 'skip', 'offset', 'feed', 'timeout', 'include_docs',
  'descending', 'startkey', 'endkey', 'keys', 'heartbeat', 'paths', 'include_vector', 'k', 'ef', 'new_edits',
];
const arbQueryValue = fc.oneof(
  fc.constantFrom('true', 'false', '0', '1', '-1', '10', '100', 'now', 'first', '1e400', 'NaN', 'longpoll', 'normal', '[]', '{}', '"x"', ''),
  fc.string({ maxLength: 12 }),
);
const arbQuery = fc
  .array(fc.tuple(fc.constantFrom(...QUERY_KEYS), arbQueryValue), { maxLength: 4 })
  // keep long polls short so the fuzzer is not just waiting
  .map((pairs) => pairs.map(([k, v]) => (k === 'timeout' ? [k, '50'] : [k, v]) as [string, string]));

const arbJson = fc.jsonValue({ maxDepth: 4 });
const BODY_KEYS = ['_id', '_rev', 'id', 'docs', 'where', 'selector', 'limit', 'target', 'vector', 'text', 'k', 'query', 'dimensions', 'permissions', 'name', 'metadata', 'documents', 'new_edits', '_deleted', 'hlc'] as const;
// Past every nesting bound (a recursive encoder overflowed on 100,000 levels of a vector's
// metadata), and CBOR values JSON has no form of (a bigint in metadata was stored, then 500s).
const arbDeep = fc.integer({ min: 60, max: 3_000 }).map((depth) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
});
const arbNotJson = fc.constantFrom<unknown>(2n ** 70n, Buffer.from('ab'), new Date(0), new Map([[1, 2]]), undefined, NaN, -Infinity);
const arbBody = fc.oneof(
  fc.record({ kind: fc.constant('none' as const) }),
  fc.record({ kind: fc.constant('json' as const), value: arbJson }),
  fc.record({
    kind: fc.constant('json' as const),
    value: fc.dictionary(fc.constantFrom(...BODY_KEYS), arbJson, { maxKeys: 5 }),
  }),
  fc.record({ kind: fc.constant('json' as const), value: fc.dictionary(fc.constantFrom(...BODY_KEYS), fc.oneof(arbJson, arbDeep), { maxKeys: 3 }) }),
  fc.record({ kind: fc.constant('cbor' as const), value: fc.dictionary(fc.constantFrom(...BODY_KEYS), fc.oneof(arbJson, arbNotJson, fc.dictionary(fc.constantFrom('a', 'x'), arbNotJson, { maxKeys: 2 })), { maxKeys: 3 }) }),
  fc.record({ kind: fc.constant('broken' as const), value: fc.string({ maxLength: 40 }) }),
  fc.record({ kind: fc.constant('cbor' as const), value: arbJson }),
  fc.record({ kind: fc.constant('bytes' as const), value: fc.uint8Array({ maxLength: 64 }) }),
);

/** A body for a failure's line: bigints and maps named, long ones cut. */
function describeBody(body: unknown): string {
  const text = JSON.stringify(body, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Map ? `Map(${v.size})` : v === undefined ? 'undefined' : v));
  return text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

/** Every route of `node`, once and then `runs` random requests: no 5xx, and healthy after. */
async function fuzz(t: Test, node: TestNode, runs: number): Promise<void> {
  // Things for the random paths to find (the segments draw these names), so requests reach past
  // "not found" into documents, revisions, shards and indexes.
  for (const [method, path, body] of [
    ['PUT', '/db/fuzzdb', undefined],
    ['PUT', '/db/fuzzdb/doc1', { a: 1, text: 'very fuzz' }],
    ['PUT', '/vectordb/collections/a', { dimensions: 3, bm25_backend: 'memory', num_shards: 2, replication_factor: 1 }],
    ['POST', '/vectordb/collections/a/docs', { id: 'doc1', text: 'very fuzz', metadata: { a: 1 }, vector: [1, 0, 0] }],
    ['POST', '/vdb', { name: 'x_1', shard_count: 2 }],
    ['PUT', '/vdb/x_1/doc1', { a: 1 }],
    // Named as Object.prototype's members, which a lookup in a plain object finds.
    ['PUT', '/db/constructor', undefined],
    ['PUT', '/db/constructor/toString', { a: 1 }],
    ['PUT', '/vectordb/collections/constructor', { dimensions: 3, bm25_backend: 'disk', num_shards: 1, replication_factor: 1 }],
    ['POST', '/vectordb/collections/constructor/docs', { id: 'toString', text: 'very fuzz', metadata: { constructor: 1 }, vector: [1, 0, 0] }],
    ['POST', '/vdb', { name: 'constructor', shard_count: 1 }],
    ['PUT', '/vdb/constructor/toString', { constructor: 1 }],
  ] as const) {
    const made = await node.request(method, path, body === undefined ? {} : { body });
    t.ok(made.status < 300, `${method} ${path}: ${made.status} ${made.text}`);
  }
  const statuses = new StatusTally();
  const routes = node.node.routes.filter((r) => !r.url.includes('*'));
  t.ok(routes.length > 0);
  const failures: string[] = [];
  // Most requests as the admin; some with keys scoped to a database (read, or read and write),
  // some with none (''): the authorization paths see every route too.
  const scopedKey = async (permissions: string[]) => (await node.request('POST', '/_keys', { body: { permissions, databases: ['fuzzdb', 'constructor'] } })).body.key as string;
  const keys = [node.adminKey, node.adminKey, node.adminKey, await scopedKey(['read']), await scopedKey(['read', 'write']), ''];
  /** The answer to a 5xx, for the failure's line. */
  let answer = '';
  /** One request; its status, or undefined when it was still held at the deadline (a long poll, a stream). */
  const send = async (method: string, path: string, headers: Record<string, string>, body: string | Buffer | undefined, key = node.adminKey): Promise<number | undefined> => {
    try {
      const res = await fetch(node.url + path, { method, headers: { ...(key === '' ? {} : { authorization: `Bearer ${key}` }), ...headers }, body, signal: AbortSignal.timeout(requestTimeoutMs) });
      if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) await res.body?.cancel();
      else answer = (await res.text()).slice(0, 300);
      return res.status;
    } catch (err) {
      if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError') return undefined;
      throw err;
    }
  };
  // First every route once, in order: a node compiles a route's schemas on its first request
  // (http/server.ts), so a schema ajv refuses would show here as that route's 5xx, whatever
  // routes the random runs below happen to draw.
  for (const route of routes) {
    const hasBody = route.method !== 'GET' && route.method !== 'HEAD';
    const path = `${route.url.replace(/:[A-Za-z_]+/g, 'fuzz1')}?limit=x`;
    const status = await send(route.method, path, hasBody ? { 'content-type': 'application/json' } : {}, hasBody ? '{"fuzz":[1]}' : undefined);
    if (status !== undefined && status >= 500) failures.push(`${route.method} ${path} -> ${status} ${answer}`);
  }
  t.same(failures, [], 'every route, once: no 5xx');
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...routes),
      fc.array(arbSegment, { minLength: 8, maxLength: 8 }),
      arbQuery,
      arbBody,
      fc.nat(keys.length - 1),
      async (route, segments, query, body, keyIndex) => {
        let i = 0;
        const path = route.url.replace(/:[A-Za-z_]+/g, () => segments[i++ % segments.length]!);
        const qs = query.length === 0 ? '' : `?${query.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
        const headers: Record<string, string> = {};
        let payload: string | Buffer | undefined;
        if (route.method !== 'GET' && route.method !== 'HEAD' && body.kind !== 'none') {
          if (body.kind === 'json') {
            payload = JSON.stringify(body.value);
            headers['content-type'] = 'application/json';
          } else if (body.kind === 'broken') {
            payload = body.value;
            headers['content-type'] = 'application/json';
          } else if (body.kind === 'cbor') {
            payload = encode(body.value);
            headers['content-type'] = 'application/cbor';
          } else {
            payload = Buffer.from(body.value);
            headers['content-type'] = 'application/octet-stream';
          }
        }
        const status = await send(route.method, path + qs, headers, payload, keys[keyIndex]);
        if (status === undefined) return true; // a held long-poll/stream
        statuses.add(status);
        if (status >= 500) failures.push(`${route.method} ${path}${qs} key=${keyIndex} body=${describeBody(body)} -> ${status} ${answer}`);
        return true; // collected in `failures`, said below with their answers
      },
    ),
    fcSequenceParams(runs, (text) => t.comment(text)),
  );
  t.same(failures, [], 'no 5xx');
  t.comment(String(statuses));
  const health = await node.request('GET', '/health');
  t.equal(health.status, 200, `node healthy after fuzzing: ${health.text}`);
}

t.test('no route answers bad input with a 5xx or dies', async (t) => {
  // Without a build, /_console/ is a deliberate 503 ("not built"): whether the console tests
  // ran before this file must not decide the outcome.
  ensureConsoleBuilt();
  const node = await startTestNode({ SERVICE_STREAM_HEARTBEAT_MS: '100' });
  t.teardown(() => node.close());
  await fuzz(t, node, 1000);
});

// A cluster node takes other paths behind the same routes (the metadata group, shard groups
// and their leaders, the cluster's admin routes): a one-node cluster, in this process.
t.test('a cluster node: no route answers bad input with a 5xx or dies', async (t) => {
  ensureConsoleBuilt();
  // The default replication factor of 2, which one node cannot place: a collection made without
  // one is a 400 there, a path worth drawing too (the seeded one asks for 1).
  const node = await startClusterTestNode({ SERVICE_STREAM_HEARTBEAT_MS: '100', SERVICE_NODE_NAME: 'fuzz1', SERVICE_REPLICATION_FACTOR: '2' });
  t.teardown(() => node.close());
  await fuzz(t, node, 400);
});
