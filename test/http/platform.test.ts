// The platform over real HTTP: HLC header, codecs, errors, auth, protocols, limits.
import { decode, encode } from 'cbor-x';
import net from 'node:net';
import http2 from 'node:http2';
import t from 'tap';
import { parseHlc } from '../../src/core/hlc.js';
import { request, startTestNode } from '../support/node.js';

t.test('platform routes', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());

  t.test('every response carries x-service-hlc: success, 4xx, 404', async (t) => {
    const seen = [];
    for (const [method, path, status] of [
      ['GET', '/health', 200],
      ['GET', '/no/such/path', 404],
      ['DELETE', '/health', 405],
      ['GET', '/_keys', 200],
    ] as const) {
      const res = await node.request(method, path);
      t.equal(res.status, status, `${method} ${path}`);
      const hlc = res.headers.get('x-service-hlc');
      t.ok(hlc && parseHlc(hlc), `${method} ${path} has a parseable HLC`);
      seen.push(parseHlc(hlc!)!);
    }
    for (let i = 1; i < seen.length; i++) t.ok(seen[i]!.wallMs * 2 ** 32 + seen[i]!.logical > seen[i - 1]!.wallMs * 2 ** 32 + seen[i - 1]!.logical, 'clock advances');
    const failing = await node.request('POST', '/_keys', { body: '{bad json', raw: true, headers: { 'content-type': 'application/json' } });
    t.equal(failing.status, 400);
    t.ok(failing.headers.get('x-service-hlc'));
  });

  t.test('a client clock ahead of ours is merged', async (t) => {
    const ahead = Date.now() + 60_000;
    const remote = Buffer.alloc(12);
    remote.writeBigUInt64BE(BigInt(ahead), 0);
    const res = await node.request('GET', '/health', { headers: { 'x-service-hlc': remote.toString('base64') } });
    t.ok(parseHlc(res.headers.get('x-service-hlc')!)!.wallMs >= ahead);
  });

  t.test('error bodies', async (t) => {
    const notFound = await node.request('GET', '/nope');
    t.same(notFound.body, { error: 'not_found', message: 'no route for GET /nope' });
    const wrongMethod = await node.request('PUT', '/metrics');
    t.equal(wrongMethod.status, 405);
    t.equal(wrongMethod.body.error, 'method_not_allowed');
    t.match(wrongMethod.headers.get('allow'), /GET/);
    t.equal(wrongMethod.body.message, `PUT is not allowed on /metrics (allowed: ${wrongMethod.headers.get('allow')})`, 'the body names the methods the Allow header lists');
    const badJson = await node.request('POST', '/_keys', { body: '{"permissions": [', raw: true, headers: { 'content-type': 'application/json' } });
    t.equal(badJson.status, 400);
    t.equal(badJson.body.error, 'bad_request');
    t.type(badJson.body.message, 'string');
    const badShape = await node.request('POST', '/_keys', { body: { permissions: ['root'] } });
    t.equal(badShape.status, 400);
    t.equal(badShape.body.error, 'bad_request');
    const badType = await node.request('POST', '/_keys', { body: 'x', raw: true, headers: { 'content-type': 'application/x-weird' } });
    t.equal(badType.status, 415);
    t.equal(badType.body.error, 'unsupported_media_type');
  });

  t.test('CBOR request and response round trip', async (t) => {
    const res = await fetch(`${node.url}/_keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/cbor', accept: 'application/cbor' },
      body: encode({ permissions: ['read'], databases: ['alpha'], label: 'cbor' }),
    });
    t.equal(res.status, 201);
    t.equal(res.headers.get('content-type'), 'application/cbor');
    const body = decode(Buffer.from(await res.arrayBuffer())) as Record<string, unknown>;
    t.equal(body.label, 'cbor');
    t.same(body.databases, ['alpha']);
    t.match(body.key, /^fk_[A-Za-z0-9_-]{43}$/);
    const err = await fetch(`${node.url}/nope`, { headers: { accept: 'application/cbor' } });
    t.equal(err.status, 404);
    t.same(decode(Buffer.from(await err.arrayBuffer())), { error: 'not_found', message: 'no route for GET /nope' });
    const badCbor = await fetch(`${node.url}/_keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${node.adminKey}`, 'content-type': 'application/cbor' },
      body: Buffer.from([0xff, 0xff, 0x1c]),
    });
    t.equal(badCbor.status, 400);
  });

  t.test('HTTP/2 with prior knowledge on the same port', async (t) => {
    const session = http2.connect(node.url);
    t.teardown(() => session.close());
    const get = (path: string) =>
      new Promise<{ status: number; hlc: string; body: string }>((resolve, reject) => {
        const req = session.request({ ':path': path, authorization: `Bearer ${node.adminKey}` });
        let status = 0;
        let hlc = '';
        let body = '';
        req.on('response', (h) => {
          status = Number(h[':status']);
          hlc = String(h['x-service-hlc']);
        });
        req.setEncoding('utf8');
        req.on('data', (d: string) => (body += d));
        req.on('end', () => resolve({ status, hlc, body }));
        req.on('error', reject);
        req.end();
      });
    const results = await Promise.all([get('/health'), get('/_keys'), get('/nope'), ...Array.from({ length: 20 }, () => get('/health'))]);
    t.equal(results[0]!.status, 200);
    t.equal(JSON.parse(results[0]!.body).status, 'ok');
    t.equal(results[1]!.status, 200);
    t.equal(results[2]!.status, 404);
    t.ok(results.every((r) => parseHlc(r.hlc)), 'HLC on every HTTP/2 response');
  });

  t.test('auth: 401 without or with an unknown key, 403 when too weak, 200 when allowed', async (t) => {
    t.equal((await node.request('GET', '/_keys', { key: false })).status, 401);
    const unknown = await node.request('GET', '/_keys', { key: 'fk_nope' });
    t.equal(unknown.status, 401);
    t.same(Object.keys(unknown.body).sort(), ['error', 'message']);
    const created = await node.request('POST', '/_keys', { body: { permissions: ['read', 'write'] } });
    t.equal(created.status, 201);
    const weak = created.body.key as string;
    const forbidden = await node.request('GET', '/_keys', { key: weak });
    t.equal(forbidden.status, 403);
    t.equal(forbidden.body.error, 'forbidden');
    t.equal((await node.request('GET', '/health', { key: false })).status, 200, '/health stays open');
    const basic = (user: string, pass: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });
    t.equal((await node.request('GET', '/_keys', { key: false, headers: basic('anyone', node.adminKey) })).status, 200, 'basic auth with the key as password');
    t.equal((await node.request('GET', '/_keys', { key: false, headers: basic('anyone', 'fk_wrong') })).status, 401);
    t.equal((await node.request('GET', '/_keys', { key: false, headers: basic(node.adminKey, '') })).status, 401, 'the key goes in the password');
    const list = await node.request('GET', '/_keys');
    t.ok(list.body.keys.some((k: { id: string }) => k.id === created.body.id));
    t.notOk(JSON.stringify(list.body).includes(weak), 'listing never shows a key');
    t.equal((await node.request('DELETE', `/_keys/${created.body.id}`)).status, 200);
    t.equal((await node.request('GET', '/_keys', { key: weak })).status, 401, 'revoked key is refused');
    t.equal((await node.request('DELETE', `/_keys/${created.body.id}`)).status, 404);
    t.equal((await node.request('DELETE', '/_keys/not-an-id')).status, 400);
  });

  t.test('dropping a database needs admin on it, not write', async (t) => {
    t.equal((await node.request('PUT', '/db/precious')).status, 201);
    t.equal((await node.request('PUT', '/db/precious/a', { body: { v: 1 } })).status, 201);
    const keyWith = async (permissions: string[], databases: string[]) =>
      (await node.request('POST', '/_keys', { body: { permissions, databases } })).body.key as string;
    const writer = await keyWith(['write'], ['precious']);
    const dropped = await node.request('DELETE', '/db/precious', { key: writer });
    t.equal(dropped.status, 403);
    t.match(dropped.body.message, /lacks the admin permission on database "precious"/);
    t.equal((await node.request('GET', '/db/precious/a', { key: writer })).status, 200, 'the database is still there');
    t.equal((await node.request('PUT', '/db/precious/b', { key: writer, body: { v: 2 } })).status, 201, 'the writer still writes');
    const elsewhereAdmin = await keyWith(['admin'], ['other']);
    t.equal((await node.request('DELETE', '/db/precious', { key: elsewhereAdmin })).status, 403, "another database's admin may not");
    const ownAdmin = await keyWith(['admin'], ['precious']);
    t.equal((await node.request('DELETE', '/db/precious', { key: ownAdmin })).status, 200);
    t.equal((await node.request('GET', '/db/precious')).status, 404);
  });

  t.test("a database's admin is not the node's: no keys, no tasks, no policies", async (t) => {
    t.equal((await node.request('PUT', '/db/mine')).status, 201);
    const scoped = (await node.request('POST', '/_keys', { body: { permissions: ['admin'], databases: ['mine'] } })).body.key as string;
    const minted = await node.request('POST', '/_keys', { key: scoped, body: { permissions: ['admin'], databases: 'all' } });
    t.equal(minted.status, 403, 'it cannot mint itself a key for every database');
    t.match(minted.body.message, /lacks the admin permission/);
    for (const path of ['/_keys', '/_active_tasks', '/_policies']) t.equal((await node.request('GET', path, { key: scoped })).status, 403, path);
    t.equal((await node.request('POST', '/db/mine/_compact', { key: scoped })).status, 202, 'its own database it still administers');
  });

  t.test('health and metrics', async (t) => {
    const health = await node.request('GET', '/health');
    t.match(health.body, { status: 'ok', node: 'test-node', storage: { status: 'ok', state: 'open' }, cluster: { state: 'standalone' } });
    t.type(health.body.uptime_s, 'number');
    t.type(health.body.storage.dir, 'string', 'the admin sees where the data lives');
    const open = await node.request('GET', '/health', { key: false });
    t.equal(open.status, 200);
    t.match(open.body.storage, { status: 'ok', state: 'open' });
    t.notOk('dir' in open.body.storage, 'a probe without a key does not');
    const reader = (await node.request('POST', '/_keys', { body: { permissions: ['read'] } })).body.key as string;
    t.notOk('dir' in (await node.request('GET', '/health', { key: reader })).body.storage, 'nor does a reader');
    const metrics = await node.request('GET', '/metrics');
    t.match(metrics.text, /firkin_http_requests_total\{method="GET",route="\/health",status="200"\} \d+/);
    t.match(metrics.text, /firkin_http_request_duration_seconds_bucket/);
    t.match(metrics.text, /^firkin_rocksdb_sst_files \d+$/m);
    t.match(metrics.text, /^firkin_rocksdb_sst_files_bytes \d+$/m);
    t.match(metrics.text, /^firkin_rocksdb_wal_bytes [1-9]\d*$/m, 'the WAL holds the writes so far');
    t.match(metrics.text, /^firkin_open_files_limit (-1|[1-9]\d*)$/m);
    t.match(health.body.storage, { table_files: Number, table_bytes: Number, wal_bytes: Number });
    t.match(metrics.text, /process_cpu_user_seconds_total/);
  });
});

t.test('body over the limit is 413', async (t) => {
  const node = await startTestNode({ SERVICE_HTTP_BODY_LIMIT_BYTES: '1024' });
  t.teardown(() => node.close());
  const res = await node.request('POST', '/_keys', { body: { permissions: ['read'], label: 'x'.repeat(4000) } });
  t.equal(res.status, 413);
  t.equal(res.body.error, 'too_large');
});

t.test('keys and the admin key survive a restart; auth can be disabled', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const created = await node.request('POST', '/_keys', { body: { permissions: ['admin'] } });
  await node.restart();
  t.equal((await node.request('GET', '/_keys', { key: created.body.key })).status, 200);
  const open = await startTestNode({ SERVICE_AUTH_DISABLED: 'true' });
  t.teardown(() => open.close());
  t.equal((await request(open.url, 'GET', '/_keys')).status, 200);
});

t.test('SERVICE_HTTP_MAX_CONNECTIONS is enforced', async (t) => {
  const node = await startTestNode({ SERVICE_HTTP_MAX_CONNECTIONS: '1' });
  t.teardown(() => node.close());
  const { port } = new URL(node.url);
  const first = net.connect(Number(port), '127.0.0.1');
  t.teardown(() => first.destroy());
  await new Promise((r) => first.once('connect', r));
  first.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  await new Promise((r) => first.once('data', r)); // the first connection is being served
  const second = net.connect(Number(port), '127.0.0.1');
  const closedWithoutData = await new Promise<boolean>((resolve) => {
    let data = false;
    second.on('data', () => (data = true));
    second.on('close', () => resolve(!data));
    second.on('connect', () => second.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'));
    second.on('error', () => undefined);
  });
  t.ok(closedWithoutData, 'the connection over the limit is closed unanswered');
});

t.test('SERVICE_HTTP_ENABLED=false starts no listener', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  const { startNode } = await import('../../src/node.js');
  const { tempDir } = await import('../support/node.js');
  const node = await startNode(loadConfig({ SERVICE_DATA_DIR: tempDir(), SERVICE_HTTP_ENABLED: 'false', SERVICE_LOG_LEVEL: 'silent', SERVICE_ADMIN_KEY: 'fk_x' }));
  t.teardown(() => node.close());
  t.equal(node.url, undefined);
});

t.test("a node that cannot join says in /health what its seeds answered", async (t) => {
  const { freePorts } = await import('../raft/kv-cluster.js');
  const { waitFor } = await import('../support/wait.js');
  // Nothing listens on the seed's port: every join attempt is refused.
  const [grpc, seed] = await freePorts(2);
  const node = await startTestNode({
    SERVICE_ENABLE_CLUSTER: 'true',
    RELEASE_COOKIE: 'health-join-cookie',
    SERVICE_GRPC_PORT: String(grpc),
    SERVICE_SEED_NODES: `127.0.0.1:${seed}`,
    SERVICE_JOIN_TIMEOUT_MS: '600000',
  });
  t.teardown(() => node.close());
  const problems = await waitFor(
    async () => {
      const health = await request(node.url, 'GET', '/health');
      const found = (health.body.problems as string[]).find((p) => p.startsWith('cluster: not a member yet'));
      return found !== undefined && found.includes('127.0.0.1') ? health : undefined;
    },
    { what: "the seed's refusal in /health" },
  );
  t.equal(problems.body.status, 'degraded');
  const said = new RegExp(`^cluster: not a member yet \\(joining\\); the seeds' last answers: 127\\.0\\.0\\.1:${seed}: .*ECONNREFUSED`);
  t.ok((problems.body.problems as string[]).some((p) => said.test(p)), 'the refusal, with the seed it came from');
});

t.test('a node the others cannot dial at its advertised address is named on both sides', async (t) => {
  const { freePorts } = await import('../raft/kv-cluster.js');
  const { waitFor } = await import('../support/wait.js');
  const { oneNodeClusterEnv, waitForMember } = await import('../support/one-node-cluster.js');
  const first = await oneNodeClusterEnv('n1');
  const n1 = await startTestNode(first);
  t.teardown(() => n1.close());
  await waitForMember(n1.url);
  // n2 listens on one port and advertises another, where nothing listens (a typo, a wrong
  // mapping): it dials n1 itself, so n1 hears it and calls it up, but n1's log never reaches it.
  const [grpc, nowhere] = await freePorts(2);
  const n2 = await startTestNode({
    SERVICE_ENABLE_CLUSTER: 'true',
    RELEASE_COOKIE: first.RELEASE_COOKIE!,
    SERVICE_NODE_NAME: 'n2',
    SERVICE_GRPC_PORT: String(grpc),
    SERVICE_GRPC_ADVERTISE: `127.0.0.1:${nowhere}`,
    SERVICE_SEED_NODES: `127.0.0.1:${first.SERVICE_GRPC_PORT}`,
  });
  t.teardown(() => n2.close());
  const problem = (url: string, pattern: RegExp) =>
    waitFor(
      async () => ((await request(url, 'GET', '/health')).body.problems as string[]).find((p) => pattern.test(p)),
      { what: `${pattern} in ${url}'s /health`, timeoutMs: 60_000 },
    );
  const onLeader = await problem(n1.url, /^cluster: node n2 reaches this node, but this node has not reached n2/);
  t.match(onLeader, new RegExp(`at 127\\.0\\.0\\.1:${nowhere} \\(the gRPC address it advertises\\) for \\d+ s: connect ECONNREFUSED .*; check n2's SERVICE_GRPC_ADVERTISE$`));
  const onJoiner = await problem(n2.url, /took this node's join/);
  t.match(onJoiner, new RegExp(`^cluster: 127\\.0\\.0\\.1:${first.SERVICE_GRPC_PORT} \\(n1\\) took this node's join \\d+ s ago, but no leader has reached it since: the other nodes dial it at 127\\.0\\.0\\.1:${nowhere} \\(SERVICE_GRPC_ADVERTISE\\); check they can$`));
  t.equal((await request(n1.url, 'GET', '/health')).body.status, 'degraded');
});
