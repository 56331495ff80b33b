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
/**
 * Ports for test nodes to bind later. Picked at random BELOW the kernel's ephemeral range
 * (32768+ on Linux): a port the OS handed out for port 0 and we released could be taken by any
 * outgoing connection's local port before the node binds it (EADDRINUSE, seen under load).
 * Each pick is checked free by binding it; a process never hands out the same port twice.
 */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
    if (handedOut.has(port) || ports.includes(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (!free) continue;
    handedOut.add(port);
    ports.push(port);
  }
  return ports;
}

const PORT_LOW = 20_000;
const PORT_HIGH = 32_000;
const handedOut = new Set<number>();

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
    // content-length 0: without it a body-less POST goes chunked, headers and terminator apart.
    const req = request(url, { method: 'POST', agent, headers: { 'content-length': '0' } }, (res) => {
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
