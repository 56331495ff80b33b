// runCli in process with a scripted fetch: how each kind of failure becomes one line and an
// exit status (the child-process tests in cli.test.ts cover the real sockets).
import t from 'tap';
import { type CliIo, runCli } from '../../src/cli/firkin.js';

async function cli(argv: string[], fetchImpl: (url: string, init: RequestInit) => Promise<Response>) {
  let out = '';
  let err = '';
  const calls: { url: string; init: RequestInit }[] = [];
  const io: CliIo = {
    out: (s) => (out += s),
    err: (s) => (err += s),
    fetch: (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return fetchImpl(url, init);
    }) as typeof fetch,
  };
  const code = await runCli(argv, {}, io);
  return { code, out, err, calls };
}

const json = (status: number, body: unknown) => async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const text = (status: number, body: string) => async () => new Response(body, { status });

t.test('failures: one line, exit 1', async (t) => {
  const cases: [string, (url: string, init: RequestInit) => Promise<Response>, string][] = [
    [
      'timeout',
      async () => {
        throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      },
      'firkin: timeout: no answer to GET http://127.0.0.1:8080/vectordb/cluster/status within 30 s\n',
    ],
    [
      'refused',
      async () => {
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
      },
      'firkin: unreachable: cannot reach http://127.0.0.1:8080: ECONNREFUSED\n',
    ],
    ['2xx not JSON', text(200, 'ok'), 'firkin: bad_response: GET http://127.0.0.1:8080/vectordb/cluster/status answered 200 with non-JSON "ok"\n'],
    ['2xx wrong shape', json(200, { state: 'member' }), 'firkin: bad_response: cluster status: is_leader must be true or false, got nothing\n'],
    ['error without a code', json(500, { oops: true }), 'firkin: http_500: GET http://127.0.0.1:8080/vectordb/cluster/status answered 500 with {"oops":true}\n'],
    ['error with a code', json(503, { error: 'unavailable', message: 'no metadata leader\nknown' }), 'firkin: unavailable: no metadata leader known\n'],
  ];
  for (const [what, fetchImpl, line] of cases) {
    const r = await cli(['cluster', 'status'], fetchImpl);
    t.same([r.code, r.out, r.err], [1, '', line], what);
  }
});

t.test('--json prints the answer as received, even a shape the tables would refuse', async (t) => {
  const r = await cli(['cluster', 'status', '--json'], json(200, { state: 'member', extra: [1] }));
  t.same([r.code, r.out, r.err], [0, '{"state":"member","extra":[1]}\n', '']);
});

t.test('requests: method, path, headers, body', async (t) => {
  const key = ['--key', 'k1', '--url', 'http://h:1/base/'];
  const join = await cli(['cluster', 'join', '--seed', 'a:2', ...key], json(202, { status: 'joining', node: 'n4' }));
  t.same([join.code, join.out], [0, 'n4: joining (seed a:2)\n']);
  t.equal(join.calls[0]!.url, 'http://h:1/base/_cluster/join');
  t.same([join.calls[0]!.init.method, join.calls[0]!.init.headers, join.calls[0]!.init.body], [
    'POST',
    { accept: 'application/json', authorization: 'Bearer k1', 'content-type': 'application/json' },
    '{"seed":"a:2"}',
  ]);
  const remove = await cli(['cluster', 'remove', 'n 3/x', ...key], json(200, { node: 'n 3/x', status: 'removed' }));
  t.same([remove.calls[0]!.url, remove.calls[0]!.init.method, remove.out], ['http://h:1/base/_cluster/nodes/n%203%2Fx', 'DELETE', 'n 3/x: removed\n']);
  const leave = await cli(['cluster', 'leave'], json(200, { status: 'leaving', node: 'n2' }));
  t.same([leave.calls[0]!.url, leave.calls[0]!.init.method, leave.calls[0]!.init.headers, leave.out], [
    'http://127.0.0.1:8080/vectordb/cluster/leave',
    'POST',
    { accept: 'application/json' },
    'n2: leaving\n',
  ]);
  // With a key, nodes asks for the detailed view first; a node without one gets the names.
  const answers = [json(400, { error: 'not_clustered', message: 'standalone' }), json(200, { nodes: ['solo'] })];
  const nodes = await cli(['cluster', 'nodes', '--key', 'k1'], () => answers.shift()!());
  t.same([nodes.calls.map((c) => c.url), nodes.out], [['http://127.0.0.1:8080/_cluster/nodes', 'http://127.0.0.1:8080/vectordb/cluster/nodes'], 'solo\n']);
  const denied = await cli(['cluster', 'nodes', '--key', 'bad'], json(401, { error: 'unauthorized', message: 'unknown or revoked API key' }));
  t.same([denied.code, denied.calls.length, denied.err], [1, 1, 'firkin: unauthorized: unknown or revoked API key\n'], 'a refused key is an error, not a fallback');
});
