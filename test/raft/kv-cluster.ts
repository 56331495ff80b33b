// Spawns kv-node.ts processes on loopback for the real-process test and the benchmark.
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { spawnScript } from '../support/process.js';

export interface KvProc {
  id: string;
  url: string;
  proc: ChildProcess;
  output(): string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** Free loopback ports for the gRPC listeners (peers must know them before start). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export async function spawnKv(id: string, dir: string, peers: string, env: Record<string, string> = {}): Promise<KvProc> {
  const child = await spawnScript({
    script: 'test/raft/kv-node.ts',
    env: { KV_ID: id, KV_DIR: dir, KV_PEERS: peers, KV_COOKIE: 'test-cookie', ...env },
    ready: /listening (http:\/\/[^\s]+)/,
    what: `kv node ${id}`,
  });
  return {
    ...child,
    id,
    async stop() {
      await child.stop();
    },
  };
}

export async function status(p: KvProc): Promise<{ role: string; term: number; leader: string | null; commit: number; applied: number } | undefined> {
  try {
    const r = await fetch(`${p.url}/status`);
    return (await r.json()) as { role: string; term: number; leader: string | null; commit: number; applied: number };
  } catch {
    return undefined;
  }
}

// Keep-alive node:http: far cheaper per request than fetch when 64 writers share a core.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export function put(p: KvProc, k: string, v: string): Promise<{ ok: boolean; status: number; body: Record<string, unknown> }> {
  const url = new URL(`${p.url}/put?k=${encodeURIComponent(k)}&v=${encodeURIComponent(v)}`);
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          body = { error: text };
        }
        resolve({ ok: res.statusCode === 200, status: res.statusCode ?? 0, body });
      });
      res.on('error', (err) => resolve({ ok: false, status: 0, body: { error: String(err) } }));
    });
    req.on('error', (err) => resolve({ ok: false, status: 0, body: { error: String(err) } }));
    req.end();
  });
}

export async function findLeader(nodes: readonly KvProc[]): Promise<KvProc | undefined> {
  for (const n of nodes) if ((await status(n))?.role === 'leader') return n;
  return undefined;
}
