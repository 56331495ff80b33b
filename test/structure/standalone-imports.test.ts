// A standalone node never starts the cluster's gRPC transport, so it must not load gRPC either
// (~0.15 s of a start): cluster/member.ts imports the transport when a cluster starts.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));

t.test('importing the node loads no gRPC module', async (t) => {
  const script = `
    await import('./src/node.ts');
    const { createRequire } = await import('node:module');
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('@grpc/'));
    process.stdout.write(JSON.stringify(loaded));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  t.same(JSON.parse(out), [], 'no @grpc/* module in the require cache');
});
