// A node whose disk fills: writes are refused with RocksDB's reason, /health says so and what
// to do, reads go on, and after space is freed and the node restarted every acknowledged write
// is there and writes work again. The disk is a small tmpfs, which takes root (CAP_SYS_ADMIN):
// the test is skipped where mounting one is refused.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startTestNode, tempDir } from '../support/node.js';

function mountTmpfs(dir: string, mb: number): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return (err as Error).message.split('\n')[0];
  }
}

t.test('a full disk refuses writes with the reason, /health says so, and a restart after freeing space loses nothing acknowledged', async (t) => {
  const disk = tempDir('firkin-full-disk-');
  const refused = mountTmpfs(disk, 12);
  if (refused !== undefined) {
    t.plan(0, `skipped: cannot mount a tmpfs here (${refused})`);
    return;
  }
  t.teardown(() => execFileSync('umount', ['-l', disk]));
  const dataDir = `${disk}/data`;
  const node = await startTestNode({ SERVICE_DATA_DIR: dataDir });
  let open = true;
  t.teardown(async () => {
    if (open) await node.close();
  });
  t.equal((await node.request('PUT', '/db/full')).status, 201);

  // Incompressible documents, 20 a request, until the disk refuses one.
  const acknowledged: string[] = [];
  let failure: { status: number; body: any } | undefined;
  for (let batch = 0; batch < 200 && failure === undefined; batch++) {
    const docs = Array.from({ length: 20 }, (_, i) => ({ _id: `b${batch}-${i}`, payload: randomBytes(12_000).toString('base64') }));
    const res = await node.request('POST', '/db/full/_bulk_docs', { body: { docs } });
    if (res.status === 201) {
      for (const r of res.body as { id: string; ok?: boolean }[]) if (r.ok === true) acknowledged.push(r.id);
    } else failure = res;
  }
  t.ok(failure !== undefined, 'the disk filled');
  t.ok(acknowledged.length > 0, 'some writes were acknowledged before');
  t.equal(failure!.status, 503);
  t.match(failure!.body, { error: 'unavailable', message: /^storage write failed: .*No space left on device/ });

  // RocksDB refuses every write after that one; /health says what is wrong and what to do.
  t.equal((await node.request('PUT', '/db/full/one-more', { body: { a: 1 } })).status, 503);
  const health = await node.request('GET', '/health');
  t.equal(health.status, 503);
  t.equal(health.body.status, 'failing');
  t.match(health.body.storage, { status: 'failing', write_failure: { message: /No space left on device/, count: Number } });
  t.ok(
    (health.body.problems as string[]).some((p) => /^storage: writes fail \(\d+ since .*\): .*No space left on device.*; free space on the data directory's disk, then restart the node/.test(p)),
    'the problem names the fix',
  );
  // The data directory's path is for an admin's eyes.
  const anyone = await node.request('GET', '/health', { key: false });
  t.match(anyone.body.storage.write_failure.message, /<data dir>\/\S+\.log/);
  t.notMatch(JSON.stringify(anyone.body), dataDir);
  t.notMatch(JSON.stringify(failure!.body), dataDir, 'nor is it in the error a writer gets');
  // Reads go on.
  const first = await node.request('GET', `/db/full/${acknowledged[0]}`);
  t.equal(first.status, 200);

  // Started again on the full disk, it stops at once saying so.
  await t.rejects(node.restart(), { code: 'unavailable', message: /^cannot open RocksDB at .*No space left on device.*\(free space on the data directory's disk/ });
  // Space freed, the node restarted: every acknowledged write is there, and writes work.
  execFileSync('mount', ['-o', 'remount,size=256m', disk]);
  await node.restart();
  const info = await node.request('GET', '/db/full');
  t.equal(info.body.doc_count, acknowledged.length, 'every acknowledged document, no other');
  const all = await node.request('POST', '/db/full/_all_docs', { body: { keys: acknowledged } });
  t.equal((all.body.rows as { value?: unknown }[]).filter((r) => r.value !== undefined).length, acknowledged.length);
  t.equal((await node.request('PUT', '/db/full/after', { body: { a: 1 } })).status, 201);
  const healed = await node.request('GET', '/health');
  t.equal(healed.body.storage.status, 'ok');
  t.equal(healed.body.storage.write_failure, undefined);
  await node.close();
  open = false;
});
