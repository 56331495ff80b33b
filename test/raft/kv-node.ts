// Test-only: a tiny replicated key-value node (one Raft group over RocksDB and gRPC) run as a
// real process by kv-process.test.ts and bench/raft.ts. Not part of the product.
//
// env: KV_ID, KV_DIR, KV_PEERS="n1=127.0.0.1:7001,n2=...", KV_COOKIE, KV_TICK_MS (default 50)
// HTTP (port 0, printed): POST /put?k=&v=  GET /get?k= (linearizable)  GET /dump  GET /status
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Store } from '../../src/storage/db.js';
import { RocksLog } from '../../src/raft/rocks-log.js';
import { mathRand } from '../../src/core/rand.js';
import { RaftGroup, type StateMachine } from '../../src/raft/group.js';
import { RaftTicker } from '../../src/raft/ticker.js';
import { Transport } from '../../src/cluster/transport.js';
import { isFirkinError } from '../../src/core/errors.js';
import type { Entry } from '../../src/raft/types.js';

if (process.env.KV_ID === undefined) {
  // `npx tap test/raft` runs every file in the folder: this one is a helper process, not a test.
  console.log('1..0 # SKIP helper process for kv-process.test.ts and bench/raft.ts');
  process.exit(0);
}

const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is required`);
  return v;
};
const id = env('KV_ID');
const peers = new Map(env('KV_PEERS').split(',').map((p) => p.split('=') as [string, string]));
const tickMs = Number(process.env.KV_TICK_MS ?? 50);
const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

class KvFsm implements StateMachine {
  map = new Map<string, string>();
  apply(e: Entry): unknown {
    if (e.kind !== 'normal') return e.index;
    const { k, v } = JSON.parse(utf8d.decode(e.data)) as { k: string; v: string };
    this.map.set(k, v);
    return e.index;
  }
  snapshot(): Uint8Array {
    return utf8.encode(JSON.stringify([...this.map]));
  }
  restore(data: Uint8Array): void {
    this.map = new Map(JSON.parse(utf8d.decode(data)) as [string, string][]);
  }
}

// As the node runs it (SERVICE_STORAGE_WRITE_WORKER defaults to true): synced writes on a
// worker thread, so an fsync does not hold back the messages queued before it.
const store = await Store.open(env('KV_DIR'), { writeWorker: true });
const log = await RocksLog.open(store, 'kv', { voters: [...peers.keys()], learners: [] });
const fsm = new KvFsm();
let group: RaftGroup | undefined;
const transport = new Transport({
  nodeId: id,
  cookie: env('KV_COOKIE'),
  listen: peers.get(id)!,
  peers,
  heartbeatIntervalMs: 100,
  onMessages: (ms) => {
    for (const m of ms) group?.step(m);
  },
});
group = new RaftGroup({
  id, group: 'kv', log, fsm, rand: mathRand, ticker: new RaftTicker(tickMs), electionTicks: 10, heartbeatTicks: 1,
  proposalTimeoutMs: 2_000, snapshotEveryEntries: 1_000, retainEntries: 100,
  send: (ms) => transport.send(ms),
  linkLost: (node) => transport.linkLost(node),
});
await transport.start();
await group.start();

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function fail(res: ServerResponse, err: unknown): void {
  if (isFirkinError(err)) reply(res, err.code === 'not_leader' ? 421 : 503, { error: err.code, message: err.message, ...err.details });
  else reply(res, 500, { error: 'error', message: String(err) });
}

const http = createServer((req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const g = group!;
  if (req.method === 'POST' && url.pathname === '/put') {
    const k = url.searchParams.get('k') ?? '';
    const v = url.searchParams.get('v') ?? '';
    const t0 = performance.now();
    g.propose(utf8.encode(JSON.stringify({ k, v }))).then((index) => reply(res, 200, { index, server_ms: performance.now() - t0 }), (err: unknown) => fail(res, err));
  } else if (url.pathname === '/get') {
    g.readBarrier().then(() => reply(res, 200, { value: fsm.map.get(url.searchParams.get('k') ?? '') ?? null }), (err: unknown) => fail(res, err));
  } else if (url.pathname === '/dump') {
    reply(res, 200, { status: g.status(), map: Object.fromEntries(fsm.map) });
  } else if (url.pathname === '/status') {
    reply(res, 200, g.status());
  } else {
    reply(res, 404, { error: 'not_found' });
  }
});
http.listen(0, '127.0.0.1', () => {
  const addr = http.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  process.stdout.write(`kv-node ${id} listening http://127.0.0.1:${port}\n`);
});

process.on('SIGTERM', () => {
  void (async () => {
    http.close();
    await group!.close();
    await transport.close();
    await store.close();
    process.exit(0);
  })();
});
