// A one-shot `_replicate` that outlives SERVICE_REPLICATION_KEEPALIVE_MS answers with a 200
// stream of whitespace keep-alives ended by the result (or by {ok: false, error} when the run
// fails late), so a long run is never cut by the server's idle timeout.
import { createServer, type Socket } from 'node:net';
import t from 'tap';
import { startTestNode } from '../../support/node.js';

t.test('long one-shot runs stream keep-alives', async (t) => {
  const node = await startTestNode({ SERVICE_REPLICATION_KEEPALIVE_MS: '20', SERVICE_REPLICATION_TIMEOUT_MS: '1500', SERVICE_REPLICATION_BATCH_SIZE: '10' });
  t.teardown(() => node.close());
  await node.request('PUT', '/db/big');
  const docs = Array.from({ length: 60 }, (_, i) => ({ _id: `d${i}`, i }));
  await node.request('POST', '/db/big/_bulk_docs', { body: { docs } });

  const ok = await node.request('POST', '/db/big/_replicate', { body: { target: 'copy', create_target: true } });
  t.equal(ok.status, 200);
  t.match(ok.text, /^\n+\{/, 'keep-alive newlines first (6 batches take longer than 20 ms)');
  t.match(JSON.parse(ok.text), { ok: true, docs_written: 60 });

  // A peer that accepts connections and never answers: the run fails after the stream began.
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const port = (silent.address() as { port: number }).port;
  const late = await node.request('POST', '/db/big/_replicate', { body: { target: `http://127.0.0.1:${port}/db/x` } });
  t.equal(late.status, 200, 'the status was sent before the failure');
  t.match(JSON.parse(late.text), { ok: false, error: 'timeout' });
});
