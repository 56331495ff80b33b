// The gateway's overhead: search QPS through /v1 (X-Api-Key lookup, token buckets, registry
// lookup, name mapping) vs the standard API on the very same engine collection (its internal
// name): alternating sequential requests (the fairest comparison on a busy machine), then
// autocannon at 1 and 16 connections per route. The node runs in its own process. Usage: npx tsx bench/gateway.ts [filter]   (DURATION_S=10, DOCS=10000)
import autocannon from 'autocannon';
import { internalName } from '../src/gateway/names.js';
import { request, tempDir } from '../test/support/node.js';
import { type BenchResult, percentile, report, selected, spawnBenchNode } from './support.js';

const durationS = Number(process.env.DURATION_S ?? 10);
const docCount = Number(process.env.DOCS ?? 10_000);
const dimension = 128;
const batchSize = 1_000;
const masterKey = 'bench-master-key';

// A fixed-seed generator: every run searches the same data.
let seed = 42;
const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const vector = () => Array.from({ length: dimension }, rand);

async function search(name: string, url: string, headers: Record<string, string>, connections: number): Promise<BenchResult> {
  const queries = Array.from({ length: 64 }, () => JSON.stringify({ vector: vector(), k: 10 }));
  let i = 0;
  const result = await autocannon({
    url,
    method: 'POST',
    connections,
    duration: durationS,
    headers: { 'content-type': 'application/json', ...headers },
    requests: [{ setupRequest: (req) => ({ ...req, body: queries[i++ % queries.length] }) }],
  });
  return { bench: `${name} c=${connections}`, rps: result.requests.average, p50_ms: result.latency.p50, p99_ms: result.latency.p99, errors: result.errors + result.non2xx };
}

/** Sequential requests alternating between the two routes; latencies in ms, sorted. */
async function interleaved(v1Url: string, standardUrl: string, tenant: Record<string, string>, n: number): Promise<{ v1: number[]; standard: number[] }> {
  const post = async (url: string, headers: Record<string, string>, body: string): Promise<number> => {
    const start = performance.now();
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    return performance.now() - start;
  };
  const v1: number[] = [];
  const standard: number[] = [];
  for (let i = 0; i < n; i++) {
    const body = JSON.stringify({ vector: vector(), k: 10 });
    v1.push(await post(v1Url, tenant, body));
    standard.push(await post(standardUrl, {}, body));
  }
  return { v1: v1.sort((a, b) => a - b), standard: standard.sort((a, b) => a - b) };
}

const node = await spawnBenchNode({
  SERVICE_DATA_DIR: tempDir('firkin-bench-gateway-'),
  SERVICE_LOG_LEVEL: 'info', // spawnBenchNode waits for the "listening" line
  SERVICE_GATEWAY_ENABLED: 'true',
  SERVICE_GATEWAY_PORT: '0', // = SERVICE_HTTP_PORT 0: the same server
  SERVICE_GATEWAY_MASTER_KEY: masterKey,
});
try {
  const admin = { 'x-api-key': masterKey };
  const created = await request(node.url, 'POST', '/admin/tenants', { key: false, headers: admin, body: { tenant_id: 'bench', rpm_limit: 10_000_000, max_vectors: docCount * 2 } });
  const tenant = { 'x-api-key': created.body.api_key as string };
  await request(node.url, 'POST', '/v1/collections', { key: false, headers: tenant, body: { name: 'docs', dimension } });
  for (let start = 0; start < docCount; start += batchSize) {
    const documents = Array.from({ length: Math.min(batchSize, docCount - start) }, (_, j) => ({ id: `d${start + j}`, text: `doc ${start + j}`, vector: vector(), metadata: { n: start + j } }));
    const r = await request(node.url, 'POST', '/v1/collections/docs/documents', { key: false, headers: tenant, body: { documents } });
    if (r.status !== 201) throw new Error(`loading failed: ${r.status} ${r.text}`);
  }
  const v1Url = `${node.url}/v1/collections/docs/search`;
  const standardUrl = `${node.url}/vectordb/collections/${internalName('bench', 'docs')}/search`;
  // Warm up both paths first: whichever ran first would otherwise pay for V8's optimisation.
  await interleaved(v1Url, standardUrl, tenant, 500);
  const results: BenchResult[] = [];
  if (selected('interleaved')) {
    // One request to each in turn, for the same query: load on the machine hits both alike.
    const n = durationS * 200;
    const { v1, standard } = await interleaved(v1Url, standardUrl, tenant, n);
    results.push({ bench: 'interleaved v1 search c=1', requests: n, p50_ms: percentile(v1, 50), p99_ms: percentile(v1, 99) });
    results.push({ bench: 'interleaved standard search c=1', requests: n, p50_ms: percentile(standard, 50), p99_ms: percentile(standard, 99) });
    results.push({ bench: 'interleaved overhead c=1', p50_ms: percentile(v1, 50) - percentile(standard, 50) });
  }
  for (const c of [1, 16]) {
    if (selected(`v1 search c=${c}`)) results.push(await search('v1 search', v1Url, tenant, c));
    if (selected(`standard search c=${c}`)) {
      results.push(await search('standard search', standardUrl, {}, c));
    }
  }
  report([{ bench: 'setup', docs: docCount, dimension }, ...results]);
} finally {
  await node.stop();
}
