// The console in a real browser (Debian's chromium driven by playwright-core) against a
// real node: sign-in, each page, the search playground, a conflicted revision tree, the
// live changes feed. One browser for the whole file; screenshots go to docs/console/.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type Page, chromium } from 'playwright-core';
import t, { type Test } from 'tap';
import { ensureConsoleBuilt } from '../support/console.js';
import { TEST_ADMIN_KEY, request, startTestNode, tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';
import { TestCluster } from '../cluster/harness.js';

const CHROMIUM = '/usr/bin/chromium';
// The PNGs in docs/console are refreshed with CONSOLE_SCREENSHOTS=1; otherwise they go to a
// temp dir (still taken, so the step is exercised) and a test run leaves the tree clean.
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === '1'
  ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/console')
  : tempDir('firkin-console-screenshots-');
const WAIT_MS = 10_000;
const HEX_ROOT = '0'.repeat(64);
const HEX_A = 'a'.repeat(64);
const HEX_B = 'b'.repeat(64);

if (!existsSync(CHROMIUM)) {
  // Fail loudly: a skipped browser test would hide that the console went untested.
  t.fail(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the console browser test`);
} else {
  ensureConsoleBuilt();
  mkdirSync(SCREENSHOTS, { recursive: true });
  if (process.env.CONSOLE_SCREENSHOTS !== '1') t.teardown(() => rmSync(SCREENSHOTS, { recursive: true, force: true }));
  const node = await startTestNode();
  t.teardown(() => node.close());
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    // No network here: without these Chromium stalls on refused background connections.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());

  /** A fresh tab (fresh sessionStorage) that records every console error and page error. */
  async function openTab(t: Test, baseURL = node.url): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (err) => errors.push(err.message));
    return { page, errors };
  }

  async function signIn(page: Page, key: string): Promise<void> {
    await page.goto('/');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  t.test('a bad key is refused with a clear 401 message', async (t) => {
    const { page, errors } = await openTab(t);
    await signIn(page, 'fk_not-a-real-key');
    await page.getByRole('alert').filter({ hasText: 'The API key was refused (401)' }).waitFor();
    t.equal(await page.evaluate("sessionStorage.getItem('firkin.apiKey')"), null, 'a refused key is not kept');
    // The refused request itself is the one error Chromium logs on this page.
    t.same(errors.filter((e) => !e.includes('401')), []);
  });

  t.test('signed in with the admin key, every page works', async (t) => {
    const { page, errors } = await openTab(t);
    await signIn(page, TEST_ADMIN_KEY);

    await t.test('overview', async (t) => {
      await page.getByRole('list', { name: 'Health checks' }).getByText('storage: ok').waitFor();
      await page.getByText('Version 0.1.0').waitFor();
      // Two /metrics samples make the first sparkline point.
      await page.getByText(/Requests: \d+\.\d req\/s/).waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, 'overview.png') });
      t.pass('health, version and a traffic sample shown');
    });

    await t.test('cluster (standalone)', async (t) => {
      await page.getByRole('link', { name: 'Cluster' }).click();
      await page.getByText('This node runs standalone').waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, 'cluster-standalone.png') });
      t.pass('standalone says so');
    });

    await t.test('collections: create, then search in the playground', async (t) => {
      await page.getByRole('link', { name: 'Collections' }).click();
      await page.getByText('The standard vector API is open by its spec').waitFor();
      const form = page.getByRole('form', { name: 'Create a collection' });
      await form.getByLabel('Name').fill('fruit');
      await form.getByLabel('Dimensions').fill('3');
      await form.getByRole('button', { name: 'Create collection' }).click();
      await page.getByRole('button', { name: 'fruit', exact: true }).waitFor();

      const added = await node.request('POST', '/vectordb/collections/fruit/docs', {
        body: {
          documents: [
            { id: 'apple', vector: [1, 0, 0], text: 'a red apple', metadata: { colour: 'red' } },
            { id: 'cherry', vector: [0.9, 0.2, 0], text: 'a red cherry', metadata: { colour: 'red' } },
            { id: 'lime', vector: [0, 1, 0], text: 'a green lime', metadata: { colour: 'green' } },
            { id: 'plum', vector: [0, 0.2, 1], text: 'a purple plum, not an apple', metadata: { colour: 'purple' } },
          ],
        },
      });
      t.equal(added.status, 200);

      await page.getByRole('button', { name: 'fruit', exact: true }).click();
      const playground = page.getByRole('region', { name: 'Search playground' });
      await playground.locator('textarea[name="vector"]').fill('[1, 0, 0]');
      await playground.getByLabel('k', { exact: true }).fill('2');
      await playground.getByRole('button', { name: 'Search' }).click();
      await t.resolves(waitForIds(page, ['apple', 'cherry']), 'vector search: apple then cherry');
      await playground.getByText(/2 results in \d+\.\d ms/).waitFor();

      await playground.getByLabel('Hybrid').check();
      await playground.getByLabel('Keywords').fill('apple');
      await playground.locator('textarea[name="vector"]').fill('[0, 0.3, 1]');
      await playground.getByLabel('Fusion').selectOption('rrf');
      await playground.getByLabel('k', { exact: true }).fill('3');
      await playground.getByRole('button', { name: 'Search' }).click();
      const expected = await node.request('POST', '/vectordb/collections/fruit/search/hybrid', {
        body: { query: 'apple', vector: [0, 0.3, 1], k: 3, fusion: 'rrf', bm25_weight: 0.5, vector_weight: 0.5 },
      });
      const expectedIds = (expected.body.results as { id: string }[]).map((r) => r.id);
      t.equal(expectedIds[0], 'plum', 'plum is both a keyword and the nearest vector');
      await t.resolves(waitForIds(page, expectedIds), `hybrid search: ${expectedIds.join(', ')}`);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'collections.png'), fullPage: true });
    });

    await t.test('databases: a conflict shows two leaves; a change appears in the live feed', async (t) => {
      t.equal((await node.request('PUT', '/db/shop')).status, 201);
      // Two branches from one parent, as replication would bring them.
      const conflict = await node.request('POST', '/db/shop/_bulk_docs', {
        body: {
          new_edits: false,
          docs: [
            { _id: 'basket', _rev: `2-${HEX_A}`, _revisions: { start: 2, ids: [HEX_A, HEX_ROOT] }, items: 1 },
            { _id: 'basket', _rev: `2-${HEX_B}`, _revisions: { start: 2, ids: [HEX_B, HEX_ROOT] }, items: 2 },
          ],
        },
      });
      t.equal(conflict.status, 201, conflict.text);

      await page.getByRole('link', { name: 'Databases' }).click();
      await page.getByRole('button', { name: 'shop', exact: true }).click();
      await page.getByRole('button', { name: 'basket', exact: true }).click();
      const tree = page.locator('svg.revtree');
      await tree.locator('g[data-kind="conflict"]').waitFor();
      t.equal(await tree.locator('g[data-kind="winner"]').count(), 1, 'one winner');
      t.equal(await tree.locator('g[data-kind="conflict"]').count(), 1, 'one conflicting leaf');
      t.equal(await tree.locator('g[data-kind="inner"]').count(), 1, 'their common parent');
      t.equal(await tree.locator('line').count(), 2, 'two edges');

      const feed = page.getByRole('list', { name: 'Changes feed' });
      await page.getByRole('region', { name: 'Live changes' }).getByText('following').waitFor();
      // The feed starts at `now`: only writes after it opened appear.
      await waitForFeedOpen(node.url, 'shop');
      t.equal((await node.request('PUT', '/db/shop/receipt', { body: { total: 3 } })).status, 201);
      await feed.locator('li[data-id="receipt"]').waitFor();
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.getByText('paused').waitFor();
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.getByText('following').waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, 'databases.png'), fullPage: true });
    });

    t.same(errors, [], 'no console errors on any page');
  });

  t.test('3-node cluster: a killed node turns down and its shard leadership moves', async (t) => {
    const cluster = await TestCluster.start(3);
    t.teardown(() => cluster.close());
    t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/c', { body: { dimensions: 3, num_shards: 3, replication_factor: 3 } })).status, 201);
    type Report = { shards: { shard: number; leader: string | null }[] };
    const report = await waitFor(
      async () => {
        const r = await cluster.request<Report>('n1', 'GET', '/_cluster/collections/c/shards');
        return r.status === 200 && r.body.shards.every((s) => s.leader !== null) ? r.body : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'a leader for every shard of c' },
    );
    // The browser talks to n1, so the victim is another node, one leading a shard if any does.
    const led = report.shards.find((s) => s.leader !== 'n1');
    const victim = led?.leader ?? 'n3';

    const { page, errors } = await openTab(t, cluster.url('n1'));
    await signIn(page, TEST_ADMIN_KEY);
    await page.getByRole('link', { name: 'Cluster' }).click();
    for (const name of ['n1', 'n2', 'n3']) await page.locator(`tr[data-node="${name}"] td.node-status`).getByText('up').waitFor();
    await page.locator('section[aria-label="Shards of c"] td.leader').first().waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'cluster.png'), fullPage: true });

    await cluster.kill9(victim);
    await page.locator(`tr[data-node="${victim}"] td.node-status`).getByText('down').waitFor({ timeout: 30_000 });
    t.pass(`${victim} shown down`);
    if (led !== undefined) {
      const shardRow = page.locator(`section[aria-label="Shards of c"] tr[data-shard="${led.shard}"]`);
      await shardRow.locator(`td.leader:not([data-node="${victim}"])`).waitFor({ timeout: 30_000 });
      t.pass(`shard ${led.shard}'s leader moved off ${victim}`);
    }
    await page.screenshot({ path: path.join(SCREENSHOTS, 'cluster-node-down.png'), fullPage: true });
    // Requests may fail while the cluster fails over (the browser logs those); scripts must not.
    t.same(errors.filter((e) => !e.startsWith('Failed to load resource')), [], 'no script errors');
  });
}

/** The playground's result ids, in order, become `expected` (checked in the page). */
async function waitForIds(page: Page, expected: string[]): Promise<void> {
  // A string, evaluated in the page: the test's own tsconfig has no DOM types.
  const shown = "[...document.querySelectorAll('td.hit-id')].map((cell) => cell.textContent).join(',')";
  await page.waitForFunction(`${shown} === ${JSON.stringify(expected.join(','))}`, undefined, { timeout: WAIT_MS });
}

/** The node counts open SSE streams per database in /health. */
async function waitForFeedOpen(url: string, db: string): Promise<void> {
  await waitFor(
    async () => {
      const health = await request<{ docdb: { databases: { name: string; open_feeds: number }[] } }>(url, 'GET', '/health');
      return (health.body.docdb.databases.find((d) => d.name === db)?.open_feeds ?? 0) > 0;
    },
    { timeoutMs: WAIT_MS, what: `an open changes feed on ${db}` },
  );
}
