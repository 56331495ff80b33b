// The load generator's HTTP client for the benches that talk to a node over keep-alive.
// node:http rather than fetch: on this 2-core machine the client shares the CPU with the
// node, and fetch (undici's WHATWG layer) costs about as much per request as the server's
// whole search, which made the HTTP figures mostly a client measurement.
import http from 'node:http';
import { encodeCbor } from '../src/core/codec.js';
import { percentile } from './support.js';

export const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

export function call(url: string, method: string, path: string, body?: unknown, cbor = false, extraHeaders: Record<string, string> = {}): Promise<any> {
  const headers: Record<string, string | number> = { ...extraHeaders };
  let payload: string | Buffer | undefined;
  if (body !== undefined) {
    headers['content-type'] = cbor ? 'application/cbor' : 'application/json';
    payload = cbor ? encodeCbor(body) : JSON.stringify(body);
    headers['content-length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const req = http.request(url + path, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode! >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`));
        else resolve(JSON.parse(text));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Runs `queries` through `run` with `clients` concurrent workers; QPS and latency percentiles. */
export async function drive<Q>(queries: readonly Q[], clients: number, run: (q: Q, i: number) => Promise<void>): Promise<{ qps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < queries.length; i = next++) {
        const t0 = performance.now();
        await run(queries[i]!, i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { qps: queries.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}
