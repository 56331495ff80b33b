// Route fuzzer: every registered route, random params, query strings and bodies (JSON of any
// shape, broken JSON, CBOR, garbage). Bad input must get a 4xx — never a 500, never a crash —
// and the node must stay healthy. New routes are fuzzed automatically (node.routes).
import { encode } from 'cbor-x';
import fc from 'fast-check';
import t from 'tap';
import { ensureConsoleBuilt } from '../support/console.js';
import { fcParams } from '../support/fc.js';
import { startTestNode } from '../support/node.js';

const requestTimeoutMs = 3_000;

const arbSegment = fc.oneof(
  fc.constantFrom('fuzzdb', 'a', 'x_1', 'doc1', '_design', '_all_docs', '..', '0', '-1', 'A', 'db%2Fname', '%00', 'very'.repeat(40)),
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
const arbBody = fc.oneof(
  fc.record({ kind: fc.constant('none' as const) }),
  fc.record({ kind: fc.constant('json' as const), value: arbJson }),
  fc.record({
    kind: fc.constant('json' as const),
    value: fc.dictionary(
      fc.constantFrom('_id', '_rev', 'id', 'docs', 'where', 'selector', 'limit', 'target', 'vector', 'text', 'k', 'query', 'dimensions', 'permissions', 'name', 'metadata', 'documents', 'new_edits', '_deleted', 'hlc'),
      arbJson,
      { maxKeys: 5 },
    ),
  }),
  fc.record({ kind: fc.constant('broken' as const), value: fc.string({ maxLength: 40 }) }),
  fc.record({ kind: fc.constant('cbor' as const), value: arbJson }),
  fc.record({ kind: fc.constant('bytes' as const), value: fc.uint8Array({ maxLength: 64 }) }),
);

t.test('no route answers bad input with a 5xx or dies', async (t) => {
  // Without a build, /_console/ is a deliberate 503 ("not built"): whether the console tests
  // ran before this file must not decide the outcome.
  ensureConsoleBuilt();
  const node = await startTestNode({ SERVICE_STREAM_HEARTBEAT_MS: '100' });
  t.teardown(() => node.close());
  const routes = node.node.routes.filter((r) => !r.url.includes('*'));
  t.ok(routes.length > 0);
  const failures: string[] = [];
  /** One request as the admin; its status, or undefined when it was still held at the deadline (a long poll, a stream). */
  const send = async (method: string, path: string, headers: Record<string, string>, body: string | Buffer | undefined): Promise<number | undefined> => {
    try {
      const res = await fetch(node.url + path, { method, headers: { authorization: `Bearer ${node.adminKey}`, ...headers }, body, signal: AbortSignal.timeout(requestTimeoutMs) });
      if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) await res.body?.cancel();
      else await res.arrayBuffer();
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
    if (status !== undefined && status >= 500) failures.push(`${route.method} ${path} -> ${status}`);
  }
  t.same(failures, [], 'every route, once: no 5xx');
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...routes),
      fc.array(arbSegment, { minLength: 8, maxLength: 8 }),
      arbQuery,
      arbBody,
      async (route, segments, query, body) => {
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
        const status = await send(route.method, path + qs, headers, payload);
        if (status === undefined) return true; // a held long-poll/stream
        if (status >= 500) failures.push(`${route.method} ${path}${qs} body=${JSON.stringify(body)} -> ${status}`);
        return status < 500;
      },
    ),
    fcParams(1000),
  );
  t.same(failures, [], 'no 5xx');
  const health = await node.request('GET', '/health');
  t.equal(health.status, 200, 'node healthy after fuzzing');
});
