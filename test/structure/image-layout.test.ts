// The node as the Docker image runs it: compiled JavaScript under dist/src/, one directory
// deeper than src/, beside package.json, proto/ and dist/console/ (the Dockerfile's runtime
// stage). Paths to the package's own files must hold there too: the image's cluster mode once
// failed to start (`ENOENT …/dist/proto/cluster.proto`) while every test ran the sources.
// The layout is made in a temp dir (esbuild transpiles src/ as tsc would lay it out, in well
// under a second; node_modules is the clone's).
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import t from 'tap';
import { tsFiles } from '../support/built-node.js';
import { ensureConsoleBuilt } from '../support/console.js';
import { TEST_ADMIN_KEY, TEST_CACHE_ENV, request, tempDir } from '../support/node.js';
import { spawnScript } from '../support/process.js';
import { waitFor } from '../support/wait.js';
import { freePorts } from '../raft/kv-cluster.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

async function imageLayout(): Promise<string> {
  const app = tempDir('firkin-image-');
  await build({ entryPoints: tsFiles(path.join(root, 'src')), outdir: path.join(app, 'dist', 'src'), outbase: path.join(root, 'src'), format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
  ensureConsoleBuilt();
  cpSync(path.join(root, 'dist', 'console'), path.join(app, 'dist', 'console'), { recursive: true });
  for (const item of ['package.json', 'proto', 'bin']) cpSync(path.join(root, item), path.join(app, item), { recursive: true });
  symlinkSync(path.join(root, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  return app;
}

t.test('the built node starts a cluster, serves its console and answers the CLI from the image layout', async (t) => {
  const app = await imageLayout();
  const [grpc] = await freePorts(1);
  const node = await spawnScript({
    entry: ['dist/src/main.js'],
    cwd: app,
    env: {
      ...TEST_CACHE_ENV,
      NODE_ENV: 'production',
      SERVICE_HTTP_PORT: '0',
      SERVICE_DATA_DIR: tempDir(),
      SERVICE_ADMIN_KEY: TEST_ADMIN_KEY,
      SERVICE_LOG_LEVEL: 'info',
      SERVICE_ENABLE_CLUSTER: 'true',
      SERVICE_GRPC_PORT: String(grpc),
      RELEASE_COOKIE: 'image-layout-cookie',
    },
    ready: /listening on (https?:\/\/[^\s]+) /,
    what: 'the built node',
  });
  t.teardown(() => node.stop());
  const member = await waitFor(async () => ((await request(node.url, 'GET', '/vectordb/cluster/status')).body.state === 'member' ? true : undefined), {
    what: 'the built node to form its cluster',
    timeoutMs: 30_000,
  });
  t.ok(member, 'a member of its own cluster: the gRPC transport loaded its proto');
  const health = await request(node.url, 'GET', '/health');
  t.match(health.body, { status: 'ok', version: JSON.parse(execFileSync(process.execPath, ['-p', 'JSON.stringify(require("./package.json").version)'], { cwd: app, encoding: 'utf8' })) });
  const consolePage = await request(node.url, 'GET', '/_console/');
  t.equal(consolePage.status, 200, 'the console from dist/console');
  t.match(consolePage.text, /<html/i);
  const cli = execFileSync(process.execPath, ['bin/firkin.js', 'cluster', 'status', '--url', node.url], { cwd: app, encoding: 'utf8' });
  t.match(cli, /state\s+member/, 'bin/firkin.js runs the built CLI');
  t.equal(await node.stop(), 0, 'a graceful stop');
});

t.test("the image's data directory belongs to the user the node runs as", async (t) => {
  // A new named volume takes the image's directory and its owner at the mount point; a
  // directory missing from the image makes the volume root's, which the node cannot write.
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const dataDir = /SERVICE_DATA_DIR=(\S+)/.exec(runtime)?.[1];
  const user = /^USER (\S+)$/m.exec(runtime)?.[1];
  t.ok(dataDir !== undefined && user !== undefined, 'the runtime stage sets a data directory and a user');
  t.match(runtime, new RegExp(`^VOLUME \\["${dataDir}"\\]$`, 'm'), 'the data directory is the volume');
  const made = runtime.split('\n').findIndex((line) => line.startsWith('RUN ') && line.includes(`mkdir -p ${dataDir}`) && line.includes(`chown ${user}:${user} ${dataDir}`));
  t.ok(made >= 0, `the image makes ${dataDir} and gives it to ${user}`);
  t.ok(made < runtime.split('\n').findIndex((line) => line.startsWith('USER ')), 'as root, before the user is switched');
});
