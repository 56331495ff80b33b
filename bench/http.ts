// GET /health at 1 and 32 concurrent clients over HTTP/1.1 (autocannon) and h2c (multiplexed
// streams on one session). The node runs in its own process so the load generator does not
// share its event loop. Usage: npx tsx bench/http.ts [filter]   (DURATION_S=10 by default)
import autocannon from 'autocannon';
import http2 from 'node:http2';
import { tempDir } from '../test/support/node.js';
import { type BenchResult, percentile, report, selected, spawnBenchNode } from './support.js';

const durationS = Number(process.env.DURATION_S ?? 10);

async function h1(url: string, connections: number): Promise<BenchResult> {
  const result = await autocannon({ url: `${url}/health`, connections, duration: durationS, pipelining: 1 });
  return {
    bench: `http1 GET /health c=${connections}`,
    rps: result.requests.average,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

async function h2c(url: string, concurrency: number): Promise<BenchResult> {
  const session = http2.connect(url);
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + durationS * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const start = performance.now();
      await new Promise<void>((resolve) => {
        const req = session.request({ ':path': '/health' });
        req.on('response', (h) => {
          if (h[':status'] !== 200) errors++;
        });
        req.on('error', () => {
          errors++;
          resolve();
        });
        req.resume();
        req.on('end', () => resolve());
        req.end();
      });
      latencies.push(performance.now() - start);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedS = (performance.now() - started) / 1000;
  session.close();
  latencies.sort((a, b) => a - b);
  return {
    bench: `h2c GET /health c=${concurrency}`,
    rps: latencies.length / elapsedS,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
    errors,
  };
}

const node = await spawnBenchNode({ SERVICE_DATA_DIR: tempDir('firkin-bench-'), SERVICE_LOG_LEVEL: 'info' });
try {
  const results: BenchResult[] = [];
  for (const c of [1, 32]) {
    if (selected(`http1 c=${c}`)) results.push(await h1(node.url, c));
    if (selected(`h2c c=${c}`)) results.push(await h2c(node.url, c));
  }
  report(results);
} finally {
  await node.stop();
}
