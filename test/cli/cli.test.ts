// firkin as a user runs it: a child process (bin/firkin.js) against a real standalone node,
// and against a small node:http server answering the cluster contract for the routes a
// standalone node does not have (detailed nodes, join, remove).
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { startTestNode } from '../support/node.js';
import { DETAILS, DETAILS_TABLE, type FirkinRun, runFirkin } from './fixtures.js';

const KEY = 'fk_cli-test-key';

/** One line on stderr, nothing on stdout, the given exit code. */
function failed(t: Test, run: FirkinRun, code: number, line: RegExp, what: string): void {
  t.equal(run.code, code, `${what}: exit ${code}`);
  t.equal(run.stdout, '', `${what}: nothing on stdout`);
  t.match(run.stderr, line, what);
  t.equal(run.stderr.split('\n').length, 2, `${what}: one line`);
}

t.test('against a standalone node', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const url = ['--url', node.url];

  const [table, json, names, namesJson, namesWithKey, viaEnv, leave] = await Promise.all([
    runFirkin(['cluster', 'status', ...url]),
    runFirkin(['cluster', 'status', '--json', ...url]),
    runFirkin(['cluster', 'nodes', ...url]),
    runFirkin(['cluster', 'nodes', '--json', ...url]),
    runFirkin(['cluster', 'nodes', '--key', node.adminKey, ...url]),
    runFirkin(['cluster', 'status'], { FIRKIN_URL: node.url, FIRKIN_KEY: node.adminKey }),
    runFirkin(['cluster', 'leave', ...url]),
  ]);
  const status = await node.request('GET', '/vectordb/cluster/status');
  const nodes = await node.request('GET', '/vectordb/cluster/nodes');

  t.same([table.code, table.stderr], [0, '']);
  t.match(table.stdout, /^node {2,}test-node\nstate {2,}standalone\nleader {2,}-\nnodes {2,}test-node\n/);
  t.same([json.code, JSON.parse(json.stdout)], [0, status.body], '--json prints what the API answers');
  t.same([names.code, names.stdout], [0, 'test-node\n']);
  t.same([namesJson.code, JSON.parse(namesJson.stdout)], [0, nodes.body]);
  t.same([namesWithKey.code, namesWithKey.stdout], [0, 'test-node\n'], 'a standalone node has no detailed view: the names');
  t.same([viaEnv.code, viaEnv.stdout], [0, table.stdout], 'FIRKIN_URL and FIRKIN_KEY stand for the flags');
  failed(t, leave, 1, /^firkin: not_clustered: \S.*\n$/, 'leave on a standalone node');

  // tasks: GET /_active_tasks; a continuous replication is a row.
  await node.request('PUT', '/db/a');
  const made = await node.request('POST', '/db/a/_replicate', { body: { target: 'b', create_target: true, continuous: true } });
  t.equal(made.status, 202, made.text);
  const tasks = await runFirkin(['tasks', '--key', node.adminKey, ...url]);
  t.equal(tasks.code, 0, tasks.stderr);
  t.match(tasks.stdout, /^TYPE +NODE +WHAT +PROGRESS +UPDATED\nreplication +\S+ +a -> b \(continuous\) +\d+ of \d+ documents written +\S+ ago\n$/, 'the replication as a row');
  t.same(JSON.parse((await runFirkin(['tasks', '--json', '--key', node.adminKey, ...url])).stdout).map((x: { type: string }) => x.type), ['replication'], '--json: the node\'s list');
  failed(t, await runFirkin(['tasks', '--key', 'fk_not-a-key', ...url]), 1, /^firkin: unauthorized: /, 'a bad key');
});

t.test('usage errors, help and an unreachable node', async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));

  const [usage, noKey, help, unreachable, npx] = await Promise.all([
    runFirkin(['cluster', 'stats']),
    runFirkin(['cluster', 'remove', 'n3']),
    runFirkin(['cluster', 'join', '--help']),
    runFirkin(['cluster', 'status', '--url', `http://127.0.0.1:${port}`]),
    // What a user types in a clone after npm ci: npm exec runs the root package's own bin.
    runFirkin(['cluster', 'nodes', '--help'], {}, ['npm', 'exec', '--offline', '--no', '--', 'firkin']),
  ]);
  failed(t, usage, 2, /^firkin: usage: unknown cluster command "stats": one of status, nodes, health, join, leave, remove, shards, jobs\n$/, 'unknown command');
  failed(t, noKey, 2, /^firkin: usage: cluster remove needs the admin key: --key KEY or FIRKIN_KEY\n$/, 'admin command without a key');
  t.same([help.code, help.stderr], [0, '']);
  t.match(help.stdout, /^Usage: firkin cluster join --seed HOST:PORT/);
  failed(t, unreachable, 1, new RegExp(`^firkin: unreachable: cannot reach http://127.0.0.1:${port}: ECONNREFUSED\n$`), 'closed port');
  t.equal(npx.code, 0, 'npx firkin runs');
  t.match(npx.stdout, /^Usage: firkin cluster nodes/);
});

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

/** A node that answers the cluster contract from a table of canned replies. */
async function contractServer(t: Test, replies: Record<string, { status: number; body: unknown; raw?: boolean }>) {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
      const reply = replies[`${req.method} ${req.url}`] ?? { status: 404, body: { error: 'not_found', message: `no route ${req.method} ${req.url}` } };
      res.writeHead(reply.status, { 'content-type': reply.raw ? 'text/plain' : 'application/json' });
      res.end(reply.raw ? String(reply.body) : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

t.test('the cluster-only routes: detailed nodes, remove, join', async (t) => {
  const node = await contractServer(t, {
    'GET /_cluster/nodes': { status: 200, body: DETAILS },
    'GET /vectordb/cluster/nodes': { status: 200, body: { nodes: ['n1', 'n2', 'n3'] } },
    'DELETE /_cluster/nodes/n3': { status: 200, body: { node: 'n3', status: 'removed' } },
    'DELETE /_cluster/nodes/n2': { status: 409, body: { error: 'conflict', message: 'node n2 is up: only a down node can be removed' } },
    'DELETE /_cluster/nodes/a%2Fb': { status: 404, body: { error: 'not_found', message: 'no node named "a/b"' } },
    'POST /_cluster/join': { status: 200, body: { status: 'joining', node: 'n4' } },
    'GET /vectordb/cluster/status': { status: 502, body: '<html>bad gateway</html>', raw: true },
  });
  const admin = ['--url', node.url, '--key', KEY];
  const [details, detailsJson, plain, removed, conflict, notFound, join, joinJson, html] = await Promise.all([
    runFirkin(['cluster', 'nodes', ...admin]),
    runFirkin(['cluster', 'nodes', '--json', ...admin]),
    runFirkin(['cluster', 'nodes', '--url', node.url]),
    runFirkin(['cluster', 'remove', 'n3', ...admin]),
    runFirkin(['cluster', 'remove', 'n2', ...admin]),
    runFirkin(['cluster', 'remove', 'a/b', ...admin]),
    runFirkin(['cluster', 'join', '--seed', '127.0.0.1:9081', ...admin]),
    runFirkin(['cluster', 'join', '--seed=127.0.0.1:9081', '--json', ...admin]),
    runFirkin(['cluster', 'status', '--url', node.url]),
  ]);

  t.same([details.code, details.stderr], [0, '']);
  t.equal(details.stdout, DETAILS_TABLE);
  t.same(JSON.parse(detailsJson.stdout), DETAILS, '--json is the admin view as answered');
  t.equal(plain.stdout, 'n1\nn2\nn3\n', 'no key: the plain names');
  t.same([removed.code, removed.stdout], [0, 'n3: removed\n']);
  failed(t, conflict, 1, /^firkin: conflict: node n2 is up: only a down node can be removed\n$/, 'removing a live node');
  failed(t, notFound, 1, /^firkin: not_found: no node named "a\/b"\n$/, 'removing an unknown node');
  t.same([join.code, join.stdout], [0, 'n4: joining (seed 127.0.0.1:9081)\n']);
  t.same(JSON.parse(joinJson.stdout), { status: 'joining', node: 'n4' });
  failed(t, html, 1, /^firkin: http_502: GET http:\/\/127\.0\.0\.1:\d+\/vectordb\/cluster\/status answered 502 with non-JSON "<html>bad gateway<\/html>"\n$/, 'non-JSON answer');

  const joins = node.seen.filter((s) => s.method === 'POST');
  t.same(
    joins.map((s) => [s.url, s.authorization, s.contentType, JSON.parse(s.body)]),
    [0, 1].map(() => ['/_cluster/join', `Bearer ${KEY}`, 'application/json', { seed: '127.0.0.1:9081' }]),
  );
  t.ok(
    node.seen.filter((s) => s.url.startsWith('/_cluster')).every((s) => s.authorization === `Bearer ${KEY}`),
    'admin routes carry the key',
  );
  t.ok(node.seen.filter((s) => s.url === '/vectordb/cluster/nodes').every((s) => s.authorization === undefined), 'no key, no header');
});

t.test('an already-member join is one line', async (t) => {
  const node = await contractServer(t, {
    'POST /_cluster/join': { status: 409, body: { error: 'already_member', message: 'n2 is already a member of this cluster' } },
  });
  const run = await runFirkin(['cluster', 'join', '--seed', '127.0.0.1:9081', '--url', node.url, '--key', KEY]);
  failed(t, run, 1, /^firkin: already_member: n2 is already a member of this cluster\n$/, 'join twice');
});
