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
  const forced = await cli(['cluster', 'remove', 'n3', '--force', ...key], json(200, { node: 'n3', status: 'removed' }));
  t.same([forced.calls[0]!.url, forced.out], ['http://h:1/base/_cluster/nodes/n3?force=true', 'n3: removed\n'], '--force asks the node to remove it anyway');
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

t.test('vdb split: progress lines on stderr while the request waits, the result on stdout', async (t) => {
  const job = (copied: number, step = 'copying') => ({ id: 'vdb-split-1', kind: 'vdb-rebalance', target: 'v1', step, createdAtMs: 0, updatedAtMs: 0, vdb: { op: 'split', source: 0, target: 2, moving: [0, 9], from: null, copied, expected: 100 } });
  // The job list as the polls find it; the split answers at the poll after the last of these.
  const polls = [{ jobs: [] }, { jobs: [job(40)] }, { jobs: [job(40), { ...job(0), id: 'other', target: 'v2' }] }, { jobs: [job(100, 'catching_up')] }];
  let answer!: (r: Response) => void;
  const answered = new Promise<Response>((resolve) => (answer = resolve));
  const r = await cli(['vdb', 'split', 'v1', '0', '--key', 'k1'], async (url, init) => {
    if (init.method === 'POST') return answered;
    const body = polls.shift() ?? { jobs: [] };
    if (polls.length === 0 && body.jobs.length === 0) answer(new Response(JSON.stringify({ ok: true, shard_id: 0, new_shard_id: 2, docs_moved: 100, message: 'shard 0 split: shard 2 took the upper half of its range', job: 'vdb-split-1' }), { status: 200 }));
    return json(200, body)();
  });
  t.same([r.code, r.out], [0, 'v1: shard 0 split: shard 2 took the upper half of its range (100 documents moved)\n']);
  t.equal(r.calls[0]!.url, 'http://127.0.0.1:8080/vdb/v1/_shards/0/_split');
  t.same([r.calls[0]!.init.method, r.calls[0]!.init.body], ['POST', '{}']);
  t.ok(r.calls.slice(1).every((c) => c.url === 'http://127.0.0.1:8080/_cluster/jobs' && c.init.method === 'GET'), 'then it reads the job list');
  t.equal(
    r.err,
    ['v1 split 0 -> 2: copying     [########------------]  40% 40/100 documents', 'v1 split 0 -> 2: catching_up [####################] 100% 100/100 documents', ''].join('\n'),
    'a line when the job moves, none for a poll that saw no change or another VDB',
  );
});

t.test('vdb merge on a standalone node: no job list to follow; a refusal is the node\'s error', async (t) => {
  const merged = await cli(['vdb', 'merge', 'v1', '1', '--into', '0', '--key', 'k1'], async (_url, init) =>
    init.method === 'POST' ? json(200, { ok: true, shard_id: 1, target_shard: 0, docs_moved: 7, message: 'shard 1 merged into shard 0' })() : json(400, { error: 'not_clustered', message: 'standalone' })(),
  );
  t.same([merged.code, merged.out, merged.err, merged.calls[0]!.init.body], [0, 'v1: shard 1 merged into shard 0 (7 documents moved)\n', '', '{"target_shard":0}']);
  const refused = await cli(['vdb', 'merge', 'v1', '1', '--into', '3', '--key', 'k1'], json(409, { error: 'conflict', message: 'shards 1 [5, 9] and 3 [20, 29] are not adjacent in hash space' }));
  t.same([refused.code, refused.out, refused.err], [1, '', 'firkin: conflict: shards 1 [5, 9] and 3 [20, 29] are not adjacent in hash space\n']);
  // A long merge answers 200 with keep-alives first; one that fails after that ends the body with the error.
  const late = await cli(['vdb', 'merge', 'v1', '1', '--into', '0', '--key', 'k1'], async (_url, init) =>
    init.method === 'POST' ? text(200, '\n\n\n{"ok":false,"error":"unavailable","message":"storage is closed"}\n')() : json(400, { error: 'not_clustered', message: 'standalone' })(),
  );
  t.same([late.code, late.out, late.err], [1, '', 'firkin: unavailable: storage is closed\n'], 'the late failure is the node\'s error, not a malformed answer');
  const streamed = await cli(['vdb', 'merge', 'v1', '1', '--into', '0', '--key', 'k1'], async (_url, init) =>
    init.method === 'POST' ? text(200, '\n\n{"ok":true,"shard_id":1,"target_shard":0,"docs_moved":7,"message":"shard 1 merged into shard 0"}\n')() : json(400, { error: 'not_clustered', message: 'standalone' })(),
  );
  t.same([streamed.code, streamed.out], [0, 'v1: shard 1 merged into shard 0 (7 documents moved)\n'], 'and a late success is the answer');
});

t.test('cancels and the job list: method, path, what is printed', async (t) => {
  const cancel = await cli(['vdb', 'cancel', 'v 1', '--key', 'k1'], json(200, { id: 'j', vdb: 'v 1', op: 'split', state: 'cancelled', source: 0, target: 2, moving: [0, 9], documents_copied: 12, documents_expected: 40, cancel_requested: true, last_error: null }));
  t.same([cancel.calls[0]!.url, cancel.calls[0]!.init.method, cancel.out], ['http://127.0.0.1:8080/vdb/v%201/_rebalance', 'DELETE', 'split of v 1 shard 0 -> 2: cancelled (12 documents had been copied; the shards are as they were)\n']);
  const none = await cli(['vdb', 'cancel', 'v1', '--key', 'k1'], json(404, { error: 'not_found', message: 'virtual database "v1" has no split or merge running' }));
  t.same([none.code, none.err], [1, 'firkin: not_found: virtual database "v1" has no split or merge running\n']);
  const imports = await cli(['vdb', 'cancel-import', 'v 1', '--key', 'k1'], json(200, { ok: true, cancelled: 2 }));
  t.same([imports.calls[0]!.url, imports.calls[0]!.init.method, imports.out], ['http://127.0.0.1:8080/vdb/v%201/_import', 'DELETE', 'v 1: 2 imports cancelled (each answers its client "cancelled"; what it wrote stays)\n']);
  const noImport = await cli(['vdb', 'cancel-import', 'v1'], json(404, { error: 'not_found', message: 'no import into VDB "v1" is running on this node' }));
  t.same([noImport.code, noImport.err], [1, 'firkin: not_found: no import into VDB "v1" is running on this node\n']);
  const shards = await cli(['vdb', 'shards', 'v 1'], json(200, {
    shards: [
      { shard_id: 0, primary: 'n1', replicas: ['n1', 'n2', 'n3'], down: ['n3'], status: 'active', group: 'ds0', lag: { n1: 0, n2: 2, n3: 0 }, voters: ['n1', 'n2', 'n3'], learners: [] },
      { shard_id: 1, primary: null, replicas: ['n2', 'n3', 'n1'], down: [], status: 'unavailable', group: 'ds1' },
    ],
    ranges: [{ shard_id: 0, start_hash: 0, end_hash: 2147483647 }, { shard_id: 1, start_hash: 2147483648, end_hash: 4294967295 }],
  }));
  t.same([shards.calls[0]!.url, shards.calls[0]!.init.method], ['http://127.0.0.1:8080/vdb/v%201/_shards', 'GET']);
  t.equal(shards.out.split('\n')[0], 'v 1: 2 shards');
  t.match(shards.out, /0 +00000000-7fffffff +n1, n2, n3 +n1 +active +n1:0 n2:2 n3:down/);
  t.match(shards.out, /1 +80000000-ffffffff +n2, n3, n1 +- +unavailable +-/);
  t.equal(shards.out.trimEnd().split('\n').at(-1), 'not settled: shard 0 (n3 down), shard 1 (unavailable; no leader)');
  const calm = await cli(['vdb', 'shards', 'v1'], json(200, { shards: [{ shard_id: 0, primary: 'n1', replicas: ['n1', 'n2'], down: [], status: 'active', group: 'ds0', lag: { n1: 0, n2: 0 } }], ranges: [{ shard_id: 0, start_hash: 0, end_hash: 4294967295 }] }));
  t.equal(calm.out.trimEnd().split('\n').at(-1), 'settled: every shard active, with a primary and its placement, all in step');
  const splitting = await cli(['vdb', 'shards', 'v1'], json(200, { shards: [{ shard_id: 0, primary: 'n1', replicas: ['n1', 'n2'], down: [], status: 'splitting', group: 'ds0', lag: { n1: 0, n2: 0 } }], ranges: [{ shard_id: 0, start_hash: 0, end_hash: 4294967295 }] }));
  t.equal(splitting.out.trimEnd().split('\n').at(-1), 'not settled: shard 0 (splitting)');
  const standalone = await cli(['vdb', 'shards', 'v1'], json(200, { shards: [{ shard_id: 0, primary: 'solo', replicas: [], status: 'active' }], ranges: [{ shard_id: 0, start_hash: 0, end_hash: 4294967295 }] }));
  t.match(standalone.out, /0 +00000000-ffffffff +\(this node\) +solo +active +-/);
  t.equal(standalone.out.trimEnd().split('\n').length, 3, 'standalone: no settled line (nothing is placed)');
  const reshard = await cli(['collection', 'reshard', 'docs', '--cancel'], json(200, { collection: 'docs', state: 'cancelled', old_shards: 2, new_shards: 5, documents_migrated: 10, documents_expected: 100, last_error: null }));
  t.same([reshard.calls[0]!.url, reshard.calls[0]!.init.method, reshard.out], ['http://127.0.0.1:8080/vectordb/collections/docs/reshard', 'DELETE', 'reshard docs 2 -> 5: cancelled   [##------------------]  10% 10/100 documents\n']);
  const jobs = await cli(['cluster', 'jobs', '--key', 'k1', '--json'], json(200, { jobs: [] }));
  t.same([jobs.calls[0]!.url, jobs.calls[0]!.init.method, jobs.out], ['http://127.0.0.1:8080/_cluster/jobs', 'GET', '{"jobs":[]}\n']);
  const empty = await cli(['cluster', 'jobs', '--key', 'k1'], json(200, { jobs: [] }));
  t.equal(empty.out, 'no jobs\n');
});

t.test('cluster health: every member asked (503 carries a report, a refusal is unreachable); exit 3 unless all are ok', async (t) => {
  const nodes = {
    leader: 'n1', term: 2, commit: 9, applied: 9,
    nodes: [
      { name: 'n1', http: 'http://a:1', grpc: 'a:2', zone: 'z', status: 'up', role: 'voter', joined_at: 0, last_heartbeat_ms_ago: null },
      { name: 'n2', http: 'http://b:1', grpc: 'b:2', zone: 'z', status: 'up', role: 'voter', joined_at: 0, last_heartbeat_ms_ago: 5 },
      { name: 'n3', http: 'http://c:1', grpc: 'c:2', zone: 'z', status: 'down', role: 'voter', joined_at: 0, last_heartbeat_ms_ago: 9000 },
      { name: 'n4', http: 'http://d:1', grpc: 'd:2', zone: 'z', status: 'left', role: 'none', joined_at: 0, last_heartbeat_ms_ago: null },
    ],
  };
  const r = await cli(['cluster', 'health', '--key', 'k1'], async (url) => {
    if (url.endsWith('/_cluster/nodes')) return json(200, nodes)();
    if (url === 'http://a:1/health') return json(200, { status: 'ok', node: 'n1', problems: [] })();
    if (url === 'http://b:1/health') return json(503, { status: 'failing', node: 'n2', problems: ['cluster: no metadata leader known'] })();
    throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
  });
  t.equal(r.code, 3);
  t.same(r.calls.map((c) => c.url).sort(), ['http://127.0.0.1:8080/_cluster/nodes', 'http://a:1/health', 'http://b:1/health', 'http://c:1/health'], 'a node that left is not asked');
  t.match(r.out, /^NODE +HEALTH +MEMBER +PROBLEMS\nn1 +ok +up +0\nn2 +failing +up +1\nn3 +unreachable +down +1\n\nn2: cluster: no metadata leader known\nn3: cannot reach http:\/\/c:1: ECONNREFUSED\n\n3 nodes: 1 ok, 2 not\n$/);
  t.equal(r.err, '');

  const solo = await cli(['cluster', 'health'], json(200, { status: 'ok', node: 'solo', problems: [] }));
  t.same([solo.code, solo.calls.map((c) => c.url), solo.out.split('\n').at(-2)], [0, ['http://127.0.0.1:8080/health'], '1 node: 1 ok'], 'without a key: the node at --url');
  const asJson = await cli(['cluster', 'health', '--json'], json(200, { status: 'ok', node: 'solo', problems: [], uptime_s: 4 }));
  t.same(JSON.parse(asJson.out), { nodes: [{ name: 'solo', member: null, health: { status: 'ok', node: 'solo', problems: [], uptime_s: 4 } }] });
});

t.test('FIRKIN_NODES: a cluster-wide command asks the next node when one refuses the connection, and stays there; a node\'s own command and a timeout do not move', async (t) => {
  const refused = () => {
    throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
  };
  const env = { FIRKIN_URL: 'http://a:1', FIRKIN_NODES: 'http://a:1,http://b:1,http://c:1', FIRKIN_KEY: 'k1' };
  const run = async (argv: string[], answer: (url: string) => Promise<Response>) => {
    let out = '';
    let err = '';
    const urls: string[] = [];
    const io: CliIo = {
      out: (s) => (out += s),
      err: (s) => (err += s),
      fetch: (async (url: string) => {
        urls.push(url);
        return answer(url);
      }) as typeof fetch,
    };
    return { code: await runCli(argv, env, io), out, err, urls };
  };
  const status = { state: 'member', is_leader: false, leader: 'n3', nodes: ['n1', 'n2', 'n3'], healthy_nodes: ['n2', 'n3'] };

  const moved = await run(['cluster', 'status', '--json'], async (url) => (url.startsWith('http://a:1') ? refused() : json(200, status)()));
  t.same([moved.code, moved.out, moved.urls], [0, `${JSON.stringify(status)}\n`, ['http://a:1/vectordb/cluster/status', 'http://b:1/vectordb/cluster/status']]);
  t.equal(moved.err, 'firkin: unreachable: cannot reach http://a:1: ECONNREFUSED; asking http://b:1 instead (FIRKIN_NODES)\n', 'one line says where it went');

  // A reshard that is followed: every poll goes to the node that answered.
  let polls = 0;
  const job = (state: string) => ({ collection: 'c', state, old_shards: 1, new_shards: 2, documents_migrated: 2, documents_expected: 2, last_error: null });
  const followed = await run(['collection', 'reshard', 'c', '2', '--wait'], async (url) => {
    if (url.startsWith('http://a:1')) return refused();
    if (polls++ === 0) return json(202, { status: 'resharding', info: { old_shards: 1, new_shards: 2 } })();
    return json(200, job('done'))();
  });
  t.equal(followed.code, 0, followed.err);
  t.same(followed.urls, ['http://a:1/vectordb/collections/c/reshard', 'http://b:1/vectordb/collections/c/reshard', 'http://b:1/vectordb/collections/c/reshard']);

  const none = await run(['cluster', 'nodes', '--json'], refused);
  t.same([none.code, none.out, none.urls.length], [1, '', 3], 'every node tried once');
  t.match(none.err, /asking http:\/\/b:1 instead[^\n]*\n[^\n]*asking http:\/\/c:1 instead[^\n]*\nfirkin: unreachable: cannot reach http:\/\/c:1: ECONNREFUSED\n$/);

  for (const argv of [['cluster', 'leave'], ['tasks'], ['cluster', 'join', '--seed', 'x:1']]) {
    const own = await run(argv, refused);
    t.same([own.code, own.urls.length, own.err], [1, 1, 'firkin: unreachable: cannot reach http://a:1: ECONNREFUSED\n'], `${argv.join(' ')}: about this node, never another`);
  }
  const slow = await run(['cluster', 'status'], async () => {
    throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
  });
  t.same([slow.code, slow.urls.length], [1, 1], 'a timeout may have been acted on: not retried elsewhere');
  const reset = await run(['cluster', 'remove', 'n4'], async () => {
    throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
  });
  t.same([reset.code, reset.urls.length], [1, 1], 'nor a connection reset');
});
