// The write thread's dependent writes: a batch handed over with `after` is never written
// when the batch it was built on failed or was itself refused, so a pipelined writer's later
// batches cannot land without the earlier ones they were built on.
import { RocksLevel } from '@nxtedition/rocksdb';
import t from 'tap';
import { WriteWorker, packOps } from '../../src/storage/write-worker.js';
import { tempDir } from '../support/node.js';

t.test('a write built on a failed one is refused, transitively; an independent one lands', async (t) => {
  const db = new RocksLevel(tempDir(), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open({ columns: { default: {}, docs: {} }, createIfMissing: true } as never);
  const worker = await WriteWorker.start((db as unknown as { handle: bigint }).handle, ['docs']);
  t.teardown(async () => {
    await worker.stop();
    await db.close();
  });
  const columns = new Map([['docs', 0]]);
  const put = (key: string) => [{ type: 'put' as const, cf: 'docs', key: Buffer.from(key), value: Buffer.from('v') }];
  const column = (db as unknown as { columns: Record<string, unknown> }).columns.docs;
  const has = async (key: string) => {
    const [value] = (await db.getMany([Buffer.from(key)], { column } as never)) as unknown[];
    return value !== undefined && value !== null;
  };

  // A put whose value length is cut off: the thread fails to decode it, so the write fails.
  const good = packOps(put('x'), columns);
  const broken = good.slice(0, good.byteLength - 5);
  const first = worker.writePacked(broken, true, undefined);
  const second = worker.writeAfter(put('built-on-failed'), true, first.id);
  const third = worker.writeAfter(put('built-on-refused'), true, second.id);
  const independent = worker.writeAfter(put('independent'), true, undefined);
  const chained = worker.writeAfter(put('built-on-ok'), true, independent.id);
  await t.rejects(first.done, 'the broken batch fails');
  await t.rejects(second.done, /a write it was built on failed/);
  await t.rejects(third.done, /a write it was built on failed/);
  await independent.done;
  await chained.done;
  t.same(await Promise.all(['built-on-failed', 'built-on-refused', 'independent', 'built-on-ok'].map(has)), [false, false, true, true]);
});
