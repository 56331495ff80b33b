// The node as a process: first-start admin key, graceful shutdown, restart on the same data.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { request, tempDir } from './support/node.js';
import { spawnTestNode } from './support/process.js';

t.test('first start writes the admin key (0600) and logs where it is; SIGTERM exits cleanly', async (t) => {
  const dataDir = tempDir();
  const node = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_ADMIN_KEY: '' });
  const keyFile = path.join(dataDir, 'admin.key');
  const key = readFileSync(keyFile, 'utf8').trim();
  t.match(key, /^fk_[A-Za-z0-9_-]{43}$/);
  t.equal(statSync(keyFile).mode & 0o777, 0o600);
  t.match(node.output(), new RegExp(`listening on ${node.url} with data in ${dataDir}; admin key in ${keyFile}`));
  t.equal((await request(node.url, 'GET', '/_keys', { key })).status, 200);
  t.equal(await node.stop(), 0, 'SIGTERM: exit code 0');
  t.match(node.output(), /"msg":"stopped"/);

  const again = await spawnTestNode({ SERVICE_DATA_DIR: dataDir, SERVICE_ADMIN_KEY: '' });
  t.teardown(() => again.stop());
  t.notMatch(again.output(), /generated admin API key/, 'the key is not generated or shown again');
  t.equal((await request(again.url, 'GET', '/_keys', { key })).status, 200, 'the same key still works');
});
