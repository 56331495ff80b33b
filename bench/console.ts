// The web console's weight and first load: bundle bytes (raw and gzip), then a cold and a
// warm load of /_console/ in Debian's chromium against a local node, to the sign-in form.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { ensureConsoleBuilt } from '../test/support/console.js';
import { startTestNode } from '../test/support/node.js';
import { type BenchResult, percentile, report, selected } from './support.js';

const LOADS = 20;
const results: BenchResult[] = [];
const assetsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/console');

ensureConsoleBuilt();
if (selected('console-bundle')) {
  for (const name of readdirSync(assetsDir).filter((f) => !f.startsWith('.'))) {
    const bytes = readFileSync(path.join(assetsDir, name));
    results.push({ bench: 'console-bundle', file: name.replace(/-[A-Z0-9]+\./, '.'), bytes: bytes.length, gzip_bytes: gzipSync(bytes).length });
  }
}

if (selected('console-load')) {
  const node = await startTestNode();
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    for (const cache of ['cold', 'warm'] as const) {
      const times: number[] = [];
      const context = await browser.newContext();
      const page = await context.newPage();
      for (let i = 0; i < LOADS; i++) {
        // cold: a new context each time (empty cache); warm: the same one (hashed assets cached).
        const tab = cache === 'cold' ? await (await browser.newContext()).newPage() : page;
        const started = performance.now();
        await tab.goto(`${node.url}/_console/`);
        await tab.getByLabel('API key').waitFor();
        times.push(performance.now() - started);
        if (cache === 'cold') await tab.context().close();
      }
      await context.close();
      times.sort((a, b) => a - b);
      results.push({ bench: 'console-load', cache, loads: LOADS, p50_ms: percentile(times, 50), p95_ms: percentile(times, 95) });
    }
  } finally {
    await browser.close();
    await node.close();
  }
}

report(results);
