import t from 'tap';
import { advertisedHttpUrl, loadConfig } from '../../src/config.js';
import { runNodeExpectingExit } from '../support/process.js';
import { tempDir } from '../support/node.js';

t.test('defaults match the specs', (t) => {
  const c = loadConfig({});
  t.equal(c.http.port, 8080);
  t.equal(c.http.enabled, true);
  t.equal(c.http.acceptors, 100);
  t.equal(c.http.maxConnections, Number.POSITIVE_INFINITY);
  t.same(c.http.tls, { enabled: false });
  t.match(c.dataDir, /\/data$/);
  t.equal(c.docdb.streamHeartbeatMs, 30_000);
  t.equal(c.docdb.vdbShardCount, 4);
  t.equal(c.docdb.vdbReplicaFactor, 1);
  t.equal(c.docdb.importBatchSize, 100);
  t.match(c.gateway, { enabled: false, port: 8080, masterKey: undefined, systemDbPath: undefined, defaultRpm: 100, maxVectors: 100_000, maxCollections: 10, maxStorageMb: 1024 });
  t.equal(c.cluster.replicationFactor, 2);
  t.match(c.cluster, { enabled: false, grpcPort: 9080, grpcAdvertise: '127.0.0.1:9080', zone: 'default', bootstrap: true, maxVoters: 5, dialMap: {} });
  t.match(c.cluster.detector, { suspectAfterMs: 1_500, downAfterMs: 4_000 });
  t.same(loadConfig({ SERVICE_CLUSTER_DIAL_MAP: 'n2=127.0.0.1:31002, n3=h:3' }).cluster.dialMap, { n2: '127.0.0.1:31002', n3: 'h:3' });
  t.equal(c.vectordb.prefix, '/vectordb');
  t.end();
});

t.test('env values and CLI flags (flags win)', (t) => {
  const c = loadConfig(
    { SERVICE_HTTP_PORT: '9000', SERVICE_HTTP_MAX_CONNECTIONS: 'infinity', SERVICE_SEED_NODES: 'a:1, b:2', SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'c' },
    ['--http-port', '9001', '--http-max-connections=50', '--node-name', 'n1', '--auth-disabled'],
  );
  t.equal(c.http.port, 9001);
  t.equal(c.http.maxConnections, 50);
  t.same(c.cluster.seedNodes, ['a:1', 'b:2']);
  t.equal(c.nodeName, 'n1');
  t.equal(c.auth.disabled, true);
  t.end();
});

t.test('the HTTP URL a cluster node advertises is one other nodes can dial', (t) => {
  const url = (env: Record<string, string>, port = 8080) => {
    const c = loadConfig({ SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'c', ...env }, []);
    return advertisedHttpUrl(c.http, port, c.cluster.grpcAdvertise);
  };
  t.equal(url({}), 'http://127.0.0.1:8080', 'the address it listens on');
  t.equal(url({ SERVICE_HTTP_IP: '10.0.0.5' }, 41234), 'http://10.0.0.5:41234', 'with the port it got');
  t.equal(url({ SERVICE_HTTP_IP: '0.0.0.0', SERVICE_GRPC_ADVERTISE: 'db-2.internal:9080' }), 'http://db-2.internal:8080', 'a wildcard bind takes the gRPC advertise host');
  t.equal(url({ SERVICE_HTTP_IP: '::', SERVICE_GRPC_ADVERTISE: '[fd00::2]:9080' }), 'http://[fd00::2]:8080');
  t.equal(url({ SERVICE_HTTP_IP: '0.0.0.0', SERVICE_HTTP_ADVERTISE: 'lb.example:443' }), 'http://lb.example:443', 'SERVICE_HTTP_ADVERTISE wins');
  t.equal(url({ SERVICE_HTTP_IP: '::1' }), 'http://[::1]:8080');
  t.throws(() => loadConfig({ SERVICE_HTTP_ADVERTISE: 'no-port' }, []), /SERVICE_HTTP_ADVERTISE/);
  t.end();
});

t.test('bad values name the setting', (t) => {
  const cases: [Record<string, string>, string[], RegExp][] = [
    [{ SERVICE_HTTP_PORT: 'abc' }, [], /SERVICE_HTTP_PORT must be an integer from 0 to 65535, got "abc"/],
    [{ SERVICE_HTTP_PORT: '70000' }, [], /SERVICE_HTTP_PORT/],
    [{ SERVICE_HTTP_ENABLED: 'maybe' }, [], /SERVICE_HTTP_ENABLED must be true or false/],
    [{ SERVICE_HTTP_MAX_CONNECTIONS: 'lots' }, [], /SERVICE_HTTP_MAX_CONNECTIONS must be an integer >= 1 or "infinity"/],
    [{ SERVICE_HTTP_VERIFY: 'always' }, [], /SERVICE_HTTP_VERIFY must be one of verify_none, verify_peer/],
    [{ SERVICE_HTTP_TLS_ENABLED: 'true' }, [], /SERVICE_HTTP_CERTFILE is required when SERVICE_HTTP_TLS_ENABLED=true/],
    [{ SERVICE_HTTP_TLS_ENABLED: 'true', SERVICE_HTTP_CERTFILE: '/no/such.pem', SERVICE_HTTP_KEYFILE: '/no/such.key' }, [], /SERVICE_HTTP_CERTFILE points to a missing file/],
    [{ SERVICE_GATEWAY_ENABLED: 'true' }, [], /SERVICE_GATEWAY_MASTER_KEY is required/],
    [{ SERVICE_ENABLE_CLUSTER: 'true' }, [], /RELEASE_COOKIE is required/],
    [{ SERVICE_SEED_NODES: 'a:1,nohost' }, [], /SERVICE_SEED_NODES must be host:port, got "nohost"/],
    [{ SERVICE_GRPC_ADVERTISE: 'x' }, [], /SERVICE_GRPC_ADVERTISE must be host:port/],
    [{ SERVICE_FD_SUSPECT_MS: '2000', SERVICE_FD_DOWN_MS: '1500' }, [], /SERVICE_FD_DOWN_MS must be greater than SERVICE_FD_SUSPECT_MS/],
    [{ SERVICE_RAFT_ELECTION_TICKS: '2', SERVICE_RAFT_HEARTBEAT_TICKS: '2' }, [], /SERVICE_RAFT_ELECTION_TICKS must be greater/],
    [{ SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'c', SERVICE_GRPC_PORT: '0' }, [], /SERVICE_GRPC_PORT must be a fixed port in cluster mode/],
    [{ SERVICE_CLUSTER_DIAL_MAP: 'n2:1' }, [], /SERVICE_CLUSTER_DIAL_MAP must be a list like/],
    [{ SERVICE_CLUSTER_MAX_VOTERS: '9' }, [], /SERVICE_CLUSTER_MAX_VOTERS must be an integer from 1 to 7/],
    [{ SERVICE_NODE_NAME: '__proto__' }, [], /SERVICE_NODE_NAME must be a non-empty name other than "__proto__"/],
    [{ SERVICE_NODE_NAME: ' ' }, [], /SERVICE_NODE_NAME must be a non-empty string/],
    [{}, ['--no-such-flag', '1'], /unknown flag --no-such-flag/],
    [{}, ['stray'], /unexpected argument "stray"/],
  ];
  for (const [env, argv, message] of cases) t.throws(() => loadConfig(env, argv), { name: 'ConfigError', message });
  t.end();
});

t.test('a bad setting stops the process at once with one line and no stack trace', async (t) => {
  for (const env of [{ SERVICE_HTTP_PORT: 'abc' }, { SERVICE_HTTP_TLS_ENABLED: 'true' }] as Record<string, string>[]) {
    const { code, output } = await runNodeExpectingExit({ ...env, SERVICE_DATA_DIR: tempDir() });
    t.equal(code, 2);
    t.match(output, /^firkin: configuration error: SERVICE_HTTP_/);
    t.equal(output.trim().split('\n').length, 1, 'one line');
    t.notMatch(output, /    at /, 'no stack trace');
  }
});

t.test('a data dir held by another node fails to start with one line', async (t) => {
  const { startTestNode } = await import('../support/node.js');
  const node = await startTestNode();
  t.teardown(() => node.close());
  const { code, output } = await runNodeExpectingExit({ SERVICE_DATA_DIR: node.dataDir, SERVICE_LOG_LEVEL: 'silent' });
  t.equal(code, 1);
  t.match(output, /firkin: cannot start: cannot open RocksDB at .*LOCK: .* \(another process holds the data directory: is a node already running on it\?\)/);
  t.equal(output.trim().split('\n').length, 1, 'one line');
});

t.test('a cluster port in use fails to start with one line naming it', async (t) => {
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  const { code, output } = await runNodeExpectingExit({
    SERVICE_DATA_DIR: tempDir(),
    SERVICE_LOG_LEVEL: 'silent',
    SERVICE_ENABLE_CLUSTER: 'true',
    RELEASE_COOKIE: 'config-test-cookie',
    SERVICE_GRPC_PORT: String(port),
  });
  t.equal(code, 1);
  t.match(output, new RegExp(`^firkin: cannot start: cannot listen for other nodes \\(gRPC\\) on [^ ]*:${port}: listen EADDRINUSE`));
  t.equal(output.trim().split('\n').length, 1, 'one line, no stack trace');
});

t.test('a TLS certificate or key that is not one fails to start with one line naming the files', async (t) => {
  const { writeFileSync } = await import('node:fs');
  const path = await import('node:path');
  const dir = tempDir();
  const bad = path.join(dir, 'bad.pem');
  writeFileSync(bad, 'not a certificate\n');
  const { code, output } = await runNodeExpectingExit({
    SERVICE_DATA_DIR: path.join(dir, 'data'),
    SERVICE_LOG_LEVEL: 'silent',
    SERVICE_HTTP_TLS_ENABLED: 'true',
    SERVICE_HTTP_CERTFILE: bad,
    SERVICE_HTTP_KEYFILE: bad,
  });
  t.equal(code, 1);
  t.match(output, /^firkin: cannot start: cannot use the TLS certificate and key \(SERVICE_HTTP_CERTFILE=.*bad\.pem, SERVICE_HTTP_KEYFILE=.*bad\.pem\): .*PEM/);
  t.equal(output.trim().split('\n').length, 1, 'one line');
});

t.test("a cluster node's data directory started under another node name stops it with one line naming both", async (t) => {
  const { startClusterTestNode, oneNodeClusterEnv } = await import('../support/one-node-cluster.js');
  const dataDir = tempDir();
  const alpha = await startClusterTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_NODE_NAME: 'alpha' });
  await alpha.close();
  // Before, it dialled itself as alpha and served nothing, for ever.
  const { code, output } = await runNodeExpectingExit({ ...(await oneNodeClusterEnv('beta')), SERVICE_DATA_DIR: dataDir, SERVICE_LOG_LEVEL: 'silent' });
  t.equal(code, 1);
  t.match(output, /^firkin: cannot start: the data directory holds the cluster data of node "alpha", not of "beta": start it with SERVICE_NODE_NAME=alpha, or on an empty data directory/);
  t.equal(output.trim().split('\n').length, 1, 'one line');
  // Under its own name it starts as before.
  const again = await startClusterTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_NODE_NAME: 'alpha' });
  await again.close();
  t.pass('alpha starts again on its own data');
});

t.test("a cluster node's data directory started standalone stops it with one line", async (t) => {
  const { startClusterTestNode } = await import('../support/one-node-cluster.js');
  const dataDir = tempDir();
  const alpha = await startClusterTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_NODE_NAME: 'alpha' });
  await alpha.close();
  // Before, it started: its VDBs were gone and their shard replicas were plain databases,
  // writable outside their groups' logs.
  const { code, output } = await runNodeExpectingExit({ SERVICE_DATA_DIR: dataDir, SERVICE_LOG_LEVEL: 'silent' });
  t.equal(code, 1);
  t.match(output, /^firkin: cannot start: the data directory holds the cluster data of node "alpha": start it with SERVICE_ENABLE_CLUSTER=true/);
  t.equal(output.trim().split('\n').length, 1, 'one line');
  const again = await startClusterTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_NODE_NAME: 'alpha' });
  await again.close();
  t.pass('it starts in cluster mode as before');
});

t.test('nodes started with one seed list naming them all form a cluster: the lowest address starts it, the others join', async (t) => {
  const { freePorts } = await import('../raft/kv-cluster.js');
  const { waitForMember } = await import('../support/one-node-cluster.js');
  const { startTestNode } = await import('../support/node.js');
  const ports = await freePorts(3);
  // As a StatefulSet's pods get it: the same list on every node, each node's own address in it.
  // Before, none started a cluster (that needed a node without seeds) and each exited at its
  // join deadline.
  const seeds = ports.map((p) => `127.0.0.1:${p}`).join(',');
  const nodes = await Promise.all(
    ports.map((grpc, i) =>
      startTestNode({ SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'config-test-cookie', SERVICE_NODE_NAME: `n${i + 1}`, SERVICE_GRPC_PORT: String(grpc), SERVICE_SEED_NODES: seeds }),
    ),
  );
  for (const n of nodes) t.teardown(() => n.close());
  for (const n of nodes) await waitForMember(n.url);
  const { request, TEST_ADMIN_KEY } = await import('../support/node.js');
  const views = await Promise.all(nodes.map(async (n) => (await request(n.url, 'GET', '/vectordb/cluster/status', { key: TEST_ADMIN_KEY })).body as { nodes: string[] }));
  for (const v of views) t.same([...v.nodes].sort(), ['n1', 'n2', 'n3'], 'one cluster of the three');
  // The node of the lowest address (as the seed list sorts) started it: its record came first.
  const lowest = `n${ports.findIndex((p) => `127.0.0.1:${p}` === seeds.split(',').sort()[0]) + 1}`;
  const records = (await request(nodes[0]!.url, 'GET', '/_cluster/nodes', { key: TEST_ADMIN_KEY })).body.nodes as { name: string; joined_at: number }[];
  const first = [...records].sort((x, y) => x.joined_at - y.joined_at)[0]!.name;
  t.equal(first, lowest, `${lowest}, the lowest address, started the cluster`);
});

t.test('nodes that name each other with different seed lists: none starts a cluster; one whose other seeds all said they are joining stops saying so, and how to start one', async (t) => {
  const { freePorts } = await import('../raft/kv-cluster.js');
  const [a, b, nobody] = await freePorts(3);
  // Two lists could have two lowest addresses: no node starts a cluster on a list another
  // node does not share. n1 lists itself and n2; n2 lists a third address nobody serves.
  const node = (name: string, grpc: number, seeds: string) =>
    runNodeExpectingExit({
      SERVICE_DATA_DIR: tempDir(),
      SERVICE_LOG_LEVEL: 'silent',
      SERVICE_ENABLE_CLUSTER: 'true',
      RELEASE_COOKIE: 'config-test-cookie',
      SERVICE_NODE_NAME: name,
      SERVICE_GRPC_PORT: String(grpc),
      SERVICE_SEED_NODES: seeds,
      SERVICE_JOIN_TIMEOUT_MS: '4000',
    });
  const [n1, n2] = await Promise.all([node('n1', a!, `127.0.0.1:${a},127.0.0.1:${b}`), node('n2', b!, `127.0.0.1:${a},127.0.0.1:${b},127.0.0.1:${nobody}`)]);
  t.equal(n1.code, 1, 'n1 exits 1');
  // n2 may have given up first: what it said before counts.
  t.match(n1.output, new RegExp(`^firkin: cannot join: no seed is a member of a cluster yet: 127\\.0\\.0\\.1:${b} is joining one too \\(.*\\); start one node without SERVICE_SEED_NODES: it starts the cluster, and the others join through it\\n$`), n1.output);
  t.equal(n2.code, 1, 'n2 exits 1');
  t.match(n2.output, /^firkin: cannot join any seed within 4000 ms \(/, 'n2: a seed it never heard from: it cannot tell');
  t.equal(n2.output.trim().split('\n').length, 1, 'n2: one line');
});

t.test("a seed list of this node's own address only stops it with one line; beside another seed it is skipped", async (t) => {
  const { freePorts } = await import('../raft/kv-cluster.js');
  const [grpc] = await freePorts(1);
  // Before, it asked itself to join, waited out each call and then the join deadline, and said
  // "127.0.0.1:…: did not answer meta.join within 5000 ms".
  const { code, output } = await runNodeExpectingExit({
    SERVICE_DATA_DIR: tempDir(),
    SERVICE_LOG_LEVEL: 'silent',
    SERVICE_ENABLE_CLUSTER: 'true',
    RELEASE_COOKIE: 'config-test-cookie',
    SERVICE_NODE_NAME: 'n1',
    SERVICE_GRPC_PORT: String(grpc),
    SERVICE_SEED_NODES: `127.0.0.1:${grpc}`,
  });
  t.equal(code, 1);
  t.match(output, new RegExp(`^firkin: cannot join: every seed is this node's own address \\(127\\.0\\.0\\.1:${grpc}: this node itself \\(skipped\\)\\); list another member's gRPC address in SERVICE_SEED_NODES, or none to start a new cluster`));
  t.equal(output.trim().split('\n').length, 1, 'one line');

  // The same seed list on every node (n1's own address first): n2 joins through n1.
  const { oneNodeClusterEnv, waitForMember } = await import('../support/one-node-cluster.js');
  const { startTestNode } = await import('../support/node.js');
  const first = await oneNodeClusterEnv('n1');
  const n1 = await startTestNode(first);
  t.teardown(() => n1.close());
  await waitForMember(n1.url);
  const [grpc2] = await freePorts(1);
  const n2 = await startTestNode({ ...first, SERVICE_NODE_NAME: 'n2', SERVICE_GRPC_PORT: String(grpc2), SERVICE_SEED_NODES: `127.0.0.1:${grpc2},127.0.0.1:${first.SERVICE_GRPC_PORT}` });
  t.teardown(() => n2.close());
  await waitForMember(n2.url);
  t.pass('n2 joined');
});
