// The console in a real browser (Debian's chromium driven by playwright-core) against a
// real node: sign-in, each page, the search playground, a conflicted revision tree, the
// live changes feed. One browser for the whole file; screenshots go to docs/console/.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type Locator, type Page, chromium } from 'playwright-core';
import t, { type Test } from 'tap';
import { ensureConsoleBuilt } from '../support/console.js';
import { TEST_ADMIN_KEY, request, startTestNode, tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';
import { VERSION } from '../../src/version.js';
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
const GATEWAY_MASTER_KEY = 'gateway-master-key-for-the-console-test';

if (!existsSync(CHROMIUM)) {
  // Fail loudly: a skipped browser test would hide that the console went untested.
  t.fail(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the console browser test`);
} else {
  ensureConsoleBuilt();
  mkdirSync(SCREENSHOTS, { recursive: true });
  if (process.env.CONSOLE_SCREENSHOTS !== '1') t.teardown(() => rmSync(SCREENSHOTS, { recursive: true, force: true }));
  // The gateway shares the HTTP port (both 0: the same ephemeral listener).
  const node = await startTestNode({ SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_PORT: '0', SERVICE_GATEWAY_MASTER_KEY: GATEWAY_MASTER_KEY });
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
      await page.getByLabel('Storage sizes').getByText(/Storage: \d+ table files, [\d.]+ [KMG]?i?B; WAL [\d.]+ [KMG]?i?B; open-files limit \d+/).waitFor();
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
      const jobs = await node.request('GET', '/_cluster/jobs');
      t.same([jobs.status, jobs.body.error], [400, 'not_clustered'], 'the jobs route says a standalone node has none');
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
      const browser = page.getByRole('region', { name: 'Document browser' });
      await browser.getByLabel('Document id').fill('lime');
      await browser.getByRole('button', { name: 'Get document' }).click();
      await browser.getByText('"a green lime"').waitFor();
      const listed = browser.getByRole('group', { name: 'Documents by id' });
      await listed.getByRole('button', { name: 'plum' }).click();
      await browser.getByText('"a purple plum, not an apple"').waitFor();
      t.same(await listed.getByRole('button').allInnerTexts(), ['apple', 'cherry', 'lime', 'plum'], 'the collection\'s documents listed by id (scroll), and one opened from the list');
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

      // A larger collection pages its document list, 20 ids at a time, both ways.
      await form.getByLabel('Name').fill('many');
      await form.getByLabel('Dimensions').fill('3');
      await form.getByRole('button', { name: 'Create collection' }).click();
      await page.getByRole('button', { name: 'many', exact: true }).waitFor();
      const many = Array.from({ length: 45 }, (_, i) => ({ id: `m${String(i).padStart(2, '0')}`, vector: [1, i, 0] }));
      t.equal((await node.request('POST', '/vectordb/collections/many/docs', { body: { documents: many } })).status, 200);
      await page.getByRole('button', { name: 'many', exact: true }).click();
      const ids = page.getByRole('region', { name: 'Document browser' }).getByRole('group', { name: 'Documents by id' });
      await ids.getByRole('button', { name: 'm00', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Next 20' }).click();
      await ids.getByRole('button', { name: 'm20', exact: true }).waitFor();
      t.same(await ids.getByRole('button').allInnerTexts(), many.slice(20, 40).map((d) => d.id), 'the second page');
      await page.getByRole('button', { name: 'Next 20' }).click();
      await ids.getByRole('button', { name: 'm44', exact: true }).waitFor();
      t.ok(await page.getByRole('button', { name: 'Next 20' }).isDisabled(), 'no page after the last');
      await page.getByRole('button', { name: 'Previous 20' }).click();
      await ids.getByRole('button', { name: 'm20', exact: true }).waitFor();
      t.pass('and back');
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

    await t.test('databases: _find returns the expected documents, with its plan and count; attachments download', async (t) => {
      const fruit = [
        { _id: 'f-apple', kind: 'fruit', colour: 'red' },
        { _id: 'f-kiwi', kind: 'fruit', colour: 'green' },
        { _id: 'v-leek', kind: 'vegetable', colour: 'green' },
        { _id: 'f-plum', kind: 'fruit', colour: 'purple' },
      ];
      t.equal((await node.request('POST', '/db/shop/_bulk_docs', { body: { docs: fruit } })).status, 201);
      const query = page.getByRole('region', { name: 'Query', exact: true });
      await query.getByLabel(/^Query \(JSON/).fill(JSON.stringify({ selector: { kind: 'fruit' }, order_by: [{ path: ['colour'], dir: 'asc' }] }));
      await query.getByRole('button', { name: 'Find' }).click();
      // By colour: green kiwi, purple plum, red apple.
      await waitForTexts(page.locator('button.find-id'), ['f-kiwi', 'f-plum', 'f-apple']);
      await query.getByText('3 of 3 matching documents from offset 0').waitFor();
      t.pass('_find: the three fruit, ordered by colour');
      await query.getByRole('button', { name: 'Count' }).click();
      await query.getByText(/^3 matching documents \(/).waitFor();
      await query.getByRole('button', { name: 'Explain' }).click();
      await query.getByText(/^Plan: index scan/).waitFor();
      t.pass('count and plan shown');
      t.equal(await query.getByLabel('Query warning').count(), 0, 'an indexed query has no warning');
      await query.getByLabel(/^Query \(JSON/).fill(JSON.stringify({ selector: { colour: { $ne: 'red' } } }));
      await query.getByRole('button', { name: 'Find' }).click();
      await query.getByLabel('Query warning').getByText(/no index could narrow this selector/).waitFor();
      t.pass('a full scan shows the node\'s warning');
      await query.getByLabel(/^Query \(JSON/).fill(JSON.stringify({ selector: { kind: 'fruit' }, order_by: [{ path: ['colour'], dir: 'asc' }] }));

      const put = await node.request('PUT', '/db/shop/invoice', {
        body: { total: 12, _attachments: { 'note.txt': { content_type: 'text/plain', data: Buffer.from('paid in full').toString('base64') } } },
      });
      t.equal(put.status, 201, put.text);
      await page.getByLabel('Document id').fill('invoice');
      await page.getByRole('button', { name: 'Open document' }).click();
      const row = page.getByRole('table', { name: 'Attachments' }).locator('tr[data-attachment="note.txt"]');
      await row.getByText('text/plain').waitFor();
      t.equal(await row.locator('td').nth(2).textContent(), '12 B', 'its length');
      const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download note.txt' }).click()]);
      t.equal(download.suggestedFilename(), 'note.txt');
      const saved = await download.path();
      t.equal(readFileSync(saved, 'utf8'), 'paid in full', 'the downloaded bytes are the attachment');
      await query.getByRole('button', { name: 'Find' }).click();
      await waitForTexts(page.locator('button.find-id'), ['f-kiwi', 'f-plum', 'f-apple']);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'databases-find.png'), fullPage: true });
    });

    await t.test('a long _all_docs page is virtualised and scrolls by keyboard', async (t) => {
      t.equal((await node.request('PUT', '/db/many')).status, 201);
      const docs = Array.from({ length: 300 }, (_, i) => ({ _id: `d${String(i).padStart(3, '0')}`, i }));
      t.equal((await node.request('POST', '/db/many/_bulk_docs', { body: { docs } })).status, 201);
      await page.getByRole('link', { name: 'Overview' }).click();
      await page.getByRole('link', { name: 'Databases' }).click();
      await page.getByRole('button', { name: 'many', exact: true }).click();
      await page.getByLabel('Rows per page').selectOption('500');
      await page.getByText('page 1, 300 documents').waitFor();
      const rendered = page.getByRole('table', { name: 'Documents' }).locator('tbody tr:not(.spacer)');
      await rendered.first().getByRole('button', { name: 'd000' }).waitFor();
      t.ok((await rendered.count()) < 60, `only the rows in view are in the page (${await rendered.count()} of 300)`);
      // Focus, End, until the last row is rendered: under load a re-render of the list can take
      // the focus between the two, and the key then scrolls nothing (CI, 11-30: a 10 s wait for
      // d299 after one press timed out, the first row still in view).
      const region = page.getByRole('region', { name: 'Documents (scrolls)' });
      await waitFor(
        async () => {
          await region.focus();
          await page.keyboard.press('End');
          return (await rendered.getByRole('button', { name: 'd299' }).count()) > 0;
        },
        { timeoutMs: 30_000, intervalMs: 250, what: 'the last row rendered after End' },
      );
      t.ok((await rendered.count()) < 60, 'still only the rows in view after scrolling to the end');
      t.equal(await rendered.getByRole('button', { name: 'd000' }).count(), 0, 'the first row is no longer rendered');
    });

    await t.test('replication: a task made through the API is shown, its policy disabled, a task deleted', async (t) => {
      for (const db of ['src', 'dst', 'copies']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
      t.equal((await node.request('PUT', '/db/src/hello', { body: { n: 1 } })).status, 201);
      const started = await node.request('POST', '/db/src/_replicate', { body: { target: 'dst', continuous: true } });
      t.equal(started.status, 202, started.text);
      const taskId = started.body.task_id as string;
      const policy = await node.request('POST', '/_policies', { body: { name: 'copy', pattern: 'fanout', source: 'src', targets: ['copies'], enabled: true } });
      t.equal(policy.status, 201, policy.text);

      await page.getByRole('link', { name: 'Replication' }).click();
      const task = page.locator(`tr[data-task="${taskId}"]`);
      await task.locator('td.task-status').getByText('active').waitFor();
      // One document read and written once the first batch went through.
      await waitForTexts(task.locator('td:nth-child(5), td:nth-child(6)'), ['1', '1']);
      t.pass('the API-made task is active with 1 doc read and written');
      const policyRow = page.locator('tr[data-policy="copy"]');
      await policyRow.getByText('enabled', { exact: true }).waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, 'replication.png'), fullPage: true });

      // Keyboard only: focus the action, Enter asks, Enter on the confirmation does it.
      await policyRow.getByRole('button', { name: 'Disable policy copy' }).focus();
      await page.keyboard.press('Enter');
      await policyRow.getByRole('button', { name: 'Yes, disable' }).focus();
      await page.keyboard.press('Enter');
      await policyRow.getByText('disabled', { exact: true }).waitFor();
      await page.locator('tr[data-task="copy:0"] td.task-status').getByText('stopped').waitFor();
      t.equal((await node.request('GET', '/_policies/copy')).body.enabled, false, 'the policy is disabled in the node');

      await task.getByRole('button', { name: `Delete replication ${taskId}` }).click();
      await task.getByRole('button', { name: 'Yes, delete' }).click();
      await task.waitFor({ state: 'detached' });
      t.equal((await node.request('GET', `/_replications/${taskId}`)).status, 404, 'the task is gone from the node');
    });

    await t.test('a standalone VDB: listed on Databases, its shards local on Cluster', async (t) => {
      t.equal((await node.request('POST', '/vdb', { body: { name: 'ledger', shard_count: 2, placement: { replica_factor: 1 } } })).status, 201);
      t.equal((await node.request('PUT', '/vdb/ledger/_shards/1/_status', { body: { status: 'readonly' } })).status, 200);
      await page.getByRole('link', { name: 'Databases' }).click();
      const row = page.getByRole('table', { name: 'Virtual databases' }).locator('tr[data-vdb="ledger"]');
      await waitForTexts(row.locator('td:nth-child(-n+4)'), ['ledger', '2', '0', '1']);
      t.pass('name, shards, documents, replica factor');
      await row.getByRole('link', { name: 'Shards of ledger' }).click();
      await page.getByRole('heading', { level: 1, name: 'Cluster' }).waitFor();
      const grid = page.locator('section[aria-label="Shards of VDB ledger"]');
      await waitForTexts(grid.locator('tr[data-shard] td.local'), ['local', 'local']);
      t.equal(await grid.locator('tr[data-shard="1"] .tag').textContent(), ' read-only', 'the read-only shard is marked');
      t.equal(await grid.locator('tr[data-shard="0"] .tag').count(), 0, 'the other is not');
    });

    await t.test('a VDB of 4 shards is browsed like a database: pages, a conflict, an attachment, _find, the live feed', async (t) => {
      t.equal((await node.request('POST', '/vdb', { body: { name: 'orders', shard_count: 4, placement: { replica_factor: 1 } } })).status, 201);
      const orders = Array.from({ length: 24 }, (_, i) => ({ _id: `o${String(i).padStart(2, '0')}`, kind: i % 2 === 0 ? 'even' : 'odd', n: i }));
      t.equal((await node.request('POST', '/vdb/orders/_bulk_docs', { body: { docs: orders } })).status, 201);
      const conflict = await node.request('POST', '/vdb/orders/_bulk_docs', {
        body: {
          new_edits: false,
          docs: [
            { _id: 'cart', _rev: `2-${HEX_A}`, _revisions: { start: 2, ids: [HEX_A, HEX_ROOT] }, items: 1 },
            { _id: 'cart', _rev: `2-${HEX_B}`, _revisions: { start: 2, ids: [HEX_B, HEX_ROOT] }, items: 2 },
          ],
        },
      });
      t.equal(conflict.status, 201, conflict.text);
      const invoice = await node.request('PUT', '/vdb/orders/invoice', {
        body: { total: 12, _attachments: { 'note.txt': { content_type: 'text/plain', data: Buffer.from('paid by VDB').toString('base64') } } },
      });
      t.equal(invoice.status, 201, invoice.text);
      // Standalone, each shard is a database of this node: where every id went.
      const perShard = await Promise.all(
        [0, 1, 2, 3].map(async (i) => (await node.request<{ rows: { id: string }[] }>('GET', `/db/orders_s${i}/_all_docs`)).body.rows.map((r) => r.id)),
      );
      const ids = perShard.flat().sort();
      t.equal(ids.length, 26, 'every document on exactly one shard');
      t.ok(perShard.filter((s) => s.length > 0).length >= 3, `spread over the shards (${perShard.map((s) => s.length).join(', ')})`);

      await page.getByRole('link', { name: 'Databases' }).click();
      await page.getByRole('table', { name: 'Virtual databases' }).locator('tr[data-vdb="orders"]').getByRole('button', { name: 'orders', exact: true }).click();
      const detail = page.getByRole('region', { name: 'Virtual database orders' });
      await detail.getByRole('heading', { name: 'Virtual database orders' }).waitFor();
      // Keyset pages of 20: the first page starts at the first id, the second at the 21st.
      await detail.getByText('page 1, 26 documents').waitFor();
      const listed = detail.getByRole('table', { name: 'Documents' }).locator('tbody tr:not(.spacer) td:first-child');
      await listed.first().getByRole('button', { name: ids[0], exact: true }).waitFor();
      const firstPage = await listed.allTextContents();
      t.same(firstPage, ids.slice(0, firstPage.length), `page 1 lists the merged shards in id order (${firstPage.length} rows in view)`);
      await detail.getByRole('button', { name: 'Next page' }).click();
      await detail.getByText('page 2, 26 documents').waitFor();
      await waitForTexts(listed, ids.slice(20));
      t.ok(await detail.getByRole('button', { name: 'Next page' }).isDisabled(), 'no page after the last');
      const shardsOnPage2 = perShard.filter((s) => s.some((id) => ids.slice(20).includes(id))).length;
      t.ok(shardsOnPage2 >= 2, `page 2 mixes ids from ${shardsOnPage2} shards`);
      await detail.getByRole('button', { name: 'Previous page' }).click();
      await detail.getByText('page 1, 26 documents').waitFor();

      // The conflicted document: its JSON with _conflicts, and its revision tree.
      await detail.getByRole('table', { name: 'Documents' }).getByRole('button', { name: 'cart', exact: true }).click();
      const cart = detail.getByRole('region', { name: 'Document cart' });
      await cart.getByText(`"_conflicts": [`).waitFor();
      t.ok(await cart.getByText(`"2-${HEX_A}"`).isVisible(), 'the losing leaf is listed in _conflicts');
      const tree = cart.locator('svg.revtree');
      await tree.locator('g[data-kind="conflict"]').waitFor();
      t.same(
        [await tree.locator('g[data-kind="winner"]').getAttribute('data-rev'), await tree.locator('g[data-kind="conflict"]').getAttribute('data-rev'), await tree.locator('g[data-kind="inner"]').getAttribute('data-rev')],
        [`2-${HEX_B}`, `2-${HEX_A}`, `1-${HEX_ROOT}`],
        'winner, conflicting leaf and their parent, read through the owning shard',
      );

      // The attachment, downloaded with the key through /vdb/orders/invoice/_attachments/note.txt.
      await detail.getByLabel('Document id').fill('invoice');
      await detail.getByRole('button', { name: 'Open document' }).click();
      const row = detail.getByRole('table', { name: 'Attachments' }).locator('tr[data-attachment="note.txt"]');
      await row.getByText('text/plain').waitFor();
      const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download note.txt' }).click()]);
      t.equal(readFileSync(await download.path(), 'utf8'), 'paid by VDB', 'the downloaded bytes are the attachment');

      // _find merges the shards in the query's order; Count asks with limit 0; no Explain.
      const query = detail.getByRole('region', { name: 'Query', exact: true });
      t.equal(await query.getByRole('button', { name: 'Explain' }).count(), 0, 'no Explain button for a VDB');
      await query.getByText('No Explain here: a virtual database has no').waitFor();
      await query.getByLabel(/^Query \(JSON/).fill(JSON.stringify({ selector: { kind: 'odd', n: { $gte: 15 } }, order_by: [{ path: ['n'], dir: 'desc' }] }));
      await query.getByRole('button', { name: 'Find' }).click();
      await waitForTexts(query.locator('button.find-id'), ['o23', 'o21', 'o19', 'o17', 'o15']);
      await query.getByText('5 of 5 matching documents from offset 0').waitFor();
      t.pass('_find: the odd orders from 15 on, by n descending');
      await query.getByRole('button', { name: 'Count' }).click();
      await query.getByText(/^5 matching documents \(/).waitFor();
      t.pass('count');
      await query.getByRole('button', { name: 'Find' }).click();
      await waitForTexts(query.locator('button.find-id'), ['o23', 'o21', 'o19', 'o17', 'o15']);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'databases-vdb.png'), fullPage: true });

      // The live feed (the VDB's eventsource feed): a write shows once; one made while paused
      // shows after Resume, from the feed's cursor, and nothing twice.
      const live = detail.getByRole('region', { name: 'Live changes' });
      const feed = live.getByRole('list', { name: 'Changes feed' });
      await live.getByText('following').waitFor();
      t.equal((await node.request('PUT', '/vdb/orders/late-1', { body: { n: 100 } })).status, 201);
      await feed.locator('li[data-id="late-1"]').waitFor();
      await live.getByRole('button', { name: 'Pause' }).click();
      await live.getByText('paused').waitFor();
      t.equal((await node.request('POST', '/vdb/orders/_bulk_docs', { body: { docs: [{ _id: 'late-2' }, { _id: 'late-3' }] } })).status, 201);
      await live.getByRole('button', { name: 'Resume' }).click();
      await feed.locator('li[data-id="late-3"]').waitFor();
      await feed.locator('li[data-id="late-2"]').waitFor();
      const shown = await Promise.all((await feed.locator('li').all()).map((li) => li.getAttribute('data-id')));
      t.same(shown, ['late-3', 'late-2', 'late-1'], 'newest first, each once');
    });

    await t.test('every page fits a 1024 px wide window', async (t) => {
      await page.setViewportSize({ width: 1024, height: 768 });
      for (const name of ['Overview', 'Cluster', 'Collections', 'Databases', 'Replication', 'Gateway']) {
        await page.getByRole('link', { name }).click();
        await page.getByRole('heading', { level: 1, name }).waitFor();
        const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
        t.equal(overflow, 0, `${name}: no horizontal scrolling`);
      }
      await page.emulateMedia({ colorScheme: 'dark' });
      t.equal(await page.evaluate('getComputedStyle(document.body).backgroundColor'), 'rgb(17, 20, 24)', 'dark background when the OS prefers dark');
      await page.getByRole('link', { name: 'Replication' }).click();
      await page.getByRole('table', { name: 'Replication policies' }).waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, 'replication-dark-1024.png'), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });
      t.equal(await page.evaluate('getComputedStyle(document.body).backgroundColor'), 'rgb(255, 255, 255)', 'light background when it prefers light');
    });

    t.same(errors, [], 'no console errors on any page');
  });

  t.test('a read-only key sees the node\'s 403 in place of admin data, never the data', async (t) => {
    const made = await node.request('POST', '/_keys', { body: { permissions: ['read'], label: 'console reader' } });
    t.equal(made.status, 201, made.text);
    t.equal((await node.request('POST', '/_policies', { body: { name: 'secret-policy', pattern: 'fanout', source: 'shop', targets: ['shop-copy'] } })).status, 201);
    const { page, errors } = await openTab(t);
    await signIn(page, made.body.key as string);
    await page.getByRole('link', { name: 'Replication' }).click();
    await page.getByRole('region', { name: 'Policies' }).getByRole('alert').filter({ hasText: 'This API key may not read this (403)' }).waitFor();
    await page.getByRole('region', { name: 'Tasks' }).getByRole('table', { name: 'Replication tasks' }).waitFor();
    t.notOk((await page.content()).includes('secret-policy'), 'the policy is not on the page');
    t.same(errors.filter((e) => !e.includes('403')), [], 'only the refused request is logged');
  });

  t.test('a key scoped to one database sees only that database listed', async (t) => {
    for (const db of ['shop', 'payroll']) t.ok([201, 409].includes((await node.request('PUT', `/db/${db}`)).status));
    t.equal((await node.request('POST', '/vdb', { body: { name: 'vault', shard_count: 1 } })).status, 201);
    const made = await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['shop'], label: 'shop reader' } });
    t.equal(made.status, 201, made.text);
    const { page, errors } = await openTab(t);
    await signIn(page, made.body.key as string);
    await page.getByRole('link', { name: 'Databases' }).click();
    const names = page.getByRole('table', { name: 'Databases', exact: true }).locator('tbody tr td:first-child');
    await waitForTexts(names, ['shop']);
    t.same(await names.allTextContents(), ['shop'], 'the other databases are not named');
    t.notOk((await page.content()).includes('vault'), 'nor a VDB the key may not read');
    t.same(errors, []);
  });

  t.test('gateway: the master key is asked for, a tenant shows its usage against its quotas', async (t) => {
    const tenant = await node.request('POST', '/admin/tenants', { key: false, headers: { 'x-api-key': GATEWAY_MASTER_KEY }, body: { tenant_id: 'acme', max_vectors: 10, max_collections: 2 } });
    t.equal(tenant.status, 201, tenant.text);
    const tenantKey = tenant.body.api_key as string;
    const v1 = (method: string, urlPath: string, body: unknown) => node.request(method, urlPath, { key: false, headers: { 'x-api-key': tenantKey }, body });
    t.equal((await v1('POST', '/v1/collections', { name: 'notes', dimension: 3 })).status, 201);
    const docs = [1, 2, 3].map((i) => ({ id: `n${i}`, vector: [i, 1, 0], text: `note ${i}` }));
    t.equal((await v1('POST', '/v1/collections/notes/documents', { documents: docs })).status, 201);

    const { page, errors } = await openTab(t);
    await signIn(page, TEST_ADMIN_KEY);
    await page.getByRole('link', { name: 'Gateway' }).click();
    await page.getByLabel('Gateway master key').fill('not-the-master-key');
    await page.getByRole('button', { name: 'Use master key' }).click();
    await page.getByRole('alert').filter({ hasText: 'The gateway master key was refused (401)' }).waitFor();
    t.equal(await page.evaluate("sessionStorage.getItem('firkin.gatewayMasterKey')"), null, 'a refused master key is not kept');

    await page.getByLabel('Gateway master key').fill(GATEWAY_MASTER_KEY);
    await page.getByRole('button', { name: 'Use master key' }).click();
    await page.locator('tr[data-tenant="acme"]').getByRole('button', { name: 'acme' }).click();
    const vectors = page.getByRole('progressbar', { name: 'Vectors used by acme' });
    await vectors.and(page.locator('[aria-valuetext="3 of 10"]')).waitFor();
    t.equal(await vectors.getAttribute('aria-valuenow'), '30', 'three of ten vectors: 30 %');
    t.equal(await page.getByRole('progressbar', { name: 'Collections used by acme' }).getAttribute('aria-valuetext'), '1 of 2');
    const keys = page.getByRole('table', { name: 'Keys of acme' });
    await keys.getByText(`${tenant.body.key_prefix as string}…`).waitFor();
    t.notOk((await page.content()).includes(tenantKey), 'the page never holds a whole tenant key');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'gateway.png'), fullPage: true });
    // The refused master key is the one request Chromium logs as failed.
    t.same(errors.filter((e) => !e.includes('401')), [], 'no other console errors');
  });

  t.test('3-node cluster: a reshard started and cancelled, a VDB shard split and merged back, from the Cluster page', async (t) => {
    // Copies slowed to 50 documents/s: the reshard of 400 stays in its copy while the page cancels it.
    const cluster = await TestCluster.start(3, { SERVICE_RESHARD_DOCS_PER_SEC: '50' });
    t.teardown(() => cluster.close());
    t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/r', { body: { dimensions: 3, num_shards: 1, replication_factor: 2 } })).status, 201);
    const documents = Array.from({ length: 400 }, (_, i) => ({ id: `d${i}`, text: `doc ${i}`, metadata: {}, vector: [1, i, 2] }));
    t.equal((await cluster.request('n1', 'POST', '/vectordb/collections/r/docs', { body: { documents } })).status, 200);
    t.equal((await cluster.request('n1', 'POST', '/vdb', { body: { name: 'v', shard_count: 2, placement: { replica_factor: 2 } } })).status, 201);
    t.equal((await cluster.request('n1', 'POST', '/vdb/v/_bulk_docs', { body: { docs: Array.from({ length: 30 }, (_, i) => ({ _id: `k${i}` })) } })).status, 201);

    const { page, errors } = await openTab(t, cluster.url('n1'));
    await signIn(page, TEST_ADMIN_KEY);
    await page.getByRole('link', { name: 'Cluster' }).click();
    const reshard = page.getByRole('form', { name: 'Reshard r' });
    await reshard.getByLabel('Shards').fill('3');
    await reshard.getByRole('button', { name: 'Reshard' }).click();
    const row = page.locator('tr', { has: page.getByRole('progressbar', { name: 'reshard r' }) });
    await row.getByRole('button', { name: 'Cancel reshard of r' }).click();
    await row.getByRole('button', { name: 'Cancel the job' }).click();
    // The step column (the fourth) says it ended.
    await row.locator('td').nth(3).getByText('cancelled', { exact: true }).waitFor({ timeout: 30_000 });
    const job = (await cluster.request<{ state: string; documents_migrated: number }>('n1', 'GET', '/vectordb/collections/r/reshard')).body;
    t.equal(job.state, 'cancelled', `the reshard was cancelled in its copy (${job.documents_migrated} of 400 copied)`);
    t.equal((await cluster.request<{ shards: unknown[] }>('n1', 'GET', '/_cluster/collections/r/shards')).body.shards.length, 1, 'r keeps its one shard');

    const grid = page.locator('section[aria-label="Shards of VDB v"]');
    await grid.locator('tr[data-shard]').nth(1).waitFor();
    const split = grid.getByRole('form', { name: 'Split or merge shards of v' });
    await split.locator('select[name="vdb-source"]').selectOption('0');
    await split.getByRole('button', { name: 'Split' }).click();
    await waitFor(async () => (await grid.locator('tr[data-shard]').count()) === 3, { timeoutMs: 60_000, intervalMs: 200, what: 'a third shard of v in the grid' });
    const shards = (await cluster.request<{ shards: { doc_count: number }[] }>('n1', 'GET', '/vdb/v/_shards')).body.shards;
    t.equal(shards.length, 3, 'the split made shard 2');
    // Counted once the job cleaned the moved documents off shard 0.
    await waitFor(
      async () => (await cluster.request<{ jobs: { kind: string; step: string }[] }>('n1', 'GET', '/_cluster/jobs')).body.jobs.some((j) => j.kind === 'vdb-rebalance' && j.step === 'done'),
      { timeoutMs: 30_000, intervalMs: 200, what: 'the split job done' },
    );
    const info = (await cluster.request<{ total_docs: number; shards: { doc_count: number }[] }>('n1', 'GET', '/vdb/v')).body;
    t.equal(info.total_docs, 30, 'every document kept');
    t.ok(info.shards[2]!.doc_count > 0, `shard 2 took part of shard 0's (${info.shards.map((s) => s.doc_count).join(', ')})`);

    // And back: shard 2 merged into shard 0, its neighbour in the hash range.
    await split.locator('select[name="vdb-source"]').selectOption('2');
    await split.locator('select[name="vdb-target"]').selectOption('0');
    await split.getByRole('button', { name: 'Merge' }).click();
    await waitFor(
      async () => (await cluster.request<{ jobs: { kind: string; step: string; vdb?: { op: string } }[] }>('n1', 'GET', '/_cluster/jobs')).body.jobs.some((j) => j.vdb?.op === 'merge' && j.step === 'done'),
      { timeoutMs: 30_000, intervalMs: 200, what: 'the merge job done' },
    );
    const merged = (await cluster.request<{ total_docs: number; shards: unknown[] }>('n1', 'GET', '/vdb/v')).body;
    t.equal(merged.total_docs, 30, `every document kept by the merge (${JSON.stringify(merged.shards)})`);
    t.same(errors.filter((e) => !e.startsWith('Failed to load resource')), [], 'no script errors');
  });

  t.test('4-node cluster: a leave job shows its steps as a progress bar, and why it waits', async (t) => {
    const cluster = await TestCluster.start(4);
    t.teardown(() => cluster.close());
    await cluster.waitMembers();
    // Three replicas on four nodes; the leaving node's replica could go to the fourth, which
    // dies right after the leave is accepted: the job then waits at its replica step, and says
    // why, where the page can be looked at.
    t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/kept', { body: { dimensions: 3, num_shards: 1, replication_factor: 3 } })).status, 201);
    const placed = await waitFor(
      async () => {
        const r = await cluster.request<{ shards: { replicas: string[] }[] }>('n1', 'GET', '/_cluster/collections/kept/shards');
        return r.status === 200 ? r.body.shards[0]?.replicas : undefined;
      },
      { timeoutMs: WAIT_MS, what: 'the placement of kept' },
    );
    const all = ['n1', 'n2', 'n3', 'n4'];
    const spare = all.find((n) => !placed.includes(n))!;
    const [viewer, leaver] = placed;
    await cluster.kill9(spare);
    const leave = await cluster.request(leaver!, 'POST', '/vectordb/cluster/leave');
    t.same([leave.status, leave.body], [200, { status: 'leaving', node: leaver }], `${leaver} leaves while ${spare} is not known to be down yet`);
    // Whichever came first, the leader's move of the replica to the spare or its learning that
    // the spare is down, the leave waits for a node to join, and says so.
    const waiting = /^a node must join: vs0 of collection kept: (every other live node already holds a replica|its new replica is on n\d, not live, and no other live node can take it)$/;
    const jobs = await waitFor(
      async () => {
        const r = await cluster.request<{ jobs: { kind: string; target: string; step: string; waiting?: string }[] }>(viewer!, 'GET', '/_cluster/jobs');
        return r.status === 200 && r.body.jobs.some((j) => j.waiting !== undefined) ? r.body.jobs : undefined;
      },
      { timeoutMs: 30_000, what: `the leave job to wait, once ${spare} is down` },
    );
    t.same(jobs.map((j) => [j.kind, j.target, j.step]), [['leave', leaver, 'leave_voters']], 'GET /_cluster/jobs: the leave job');
    t.match(jobs[0]!.waiting, waiting, `and why it waits (${jobs[0]!.waiting})`);

    const { page, errors } = await openTab(t, cluster.url(viewer!));
    await signIn(page, TEST_ADMIN_KEY);
    await page.getByRole('link', { name: 'Cluster' }).click();
    const bar = page.getByRole('progressbar', { name: `leave ${leaver}` });
    // Out of the metadata group (2 of 4 steps); the replica stays, as said above.
    await bar.and(page.locator(`[aria-valuetext="step 3 of 4: moving shard replicas (1 left); waiting: ${jobs[0]!.waiting!}"]`)).waitFor({ timeout: 30_000 });
    t.equal(await bar.getAttribute('aria-valuenow'), '50');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'cluster-jobs.png'), fullPage: true });
    t.same(errors.filter((e) => !e.startsWith('Failed to load resource')), [], 'no script errors');
  });

  t.test('3-node cluster: a killed node turns down and its shard leadership moves', async (t) => {
    const cluster = await TestCluster.start(3);
    t.teardown(() => cluster.close());
    t.equal((await cluster.request('n1', 'PUT', '/vectordb/collections/c', { body: { dimensions: 3, num_shards: 3, replication_factor: 3 } })).status, 201);
    // POST /vdb answers once every shard has a leader.
    const vdb = await cluster.request('n1', 'POST', '/vdb', { body: { name: 'v', shard_count: 4, placement: { replica_factor: 3 } } });
    t.equal(vdb.status, 201, `VDB v created (4 shards, replica_factor 3)${vdb.status === 201 ? '' : `: ${vdb.text}`}`);
    type Report = { shards: { shard: number; leader: string | null }[] };
    const report = await waitFor(
      async () => {
        const r = await cluster.request<Report>('n1', 'GET', '/_cluster/collections/c/shards');
        return r.status === 200 && r.body.shards.every((s) => s.leader !== null) ? r.body : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'a leader for every shard of c' },
    );
    const vdbLeaders = ((await cluster.request<{ shards: { primary: string | null }[] }>('n1', 'GET', '/vdb/v/_shards')).body.shards).map((s) => s.primary);
    // The browser talks to n1, so the victim is another node: one leading a shard of c and of
    // v if one does, else one leading a shard of either.
    const leads = (n: string) => [report.shards.some((s) => s.leader === n), vdbLeaders.includes(n)];
    const victim = ['n2', 'n3'].find((n) => leads(n).every(Boolean)) ?? ['n2', 'n3'].find((n) => leads(n).some(Boolean)) ?? 'n3';
    const led = report.shards.find((s) => s.leader === victim);

    const { page, errors } = await openTab(t, cluster.url('n1'));
    await signIn(page, TEST_ADMIN_KEY);
    await page.getByRole('link', { name: 'Cluster' }).click();
    for (const name of ['n1', 'n2', 'n3']) await page.locator(`tr[data-node="${name}"] td.node-status`).getByText('up').waitFor();
    for (const name of ['n1', 'n2', 'n3']) t.equal(await page.locator(`tr[data-node="${name}"] td.node-version`).textContent(), VERSION, `${name} runs this build`);
    // Shard leaderships per node: numbers adding up to every shard group of c and v (heard over the links).
    const shardGroups = report.shards.length + 4;
    const leadCells = await waitFor(async () => {
      const cells = await Promise.all(['n1', 'n2', 'n3'].map(async (name) => (await page.locator(`tr[data-node="${name}"] td.node-leads`).textContent()) ?? ''));
      return cells.every((c) => /^\d+$/.test(c)) && cells.reduce((sum, c) => sum + Number(c), 0) === shardGroups ? cells : undefined;
    }, { timeoutMs: WAIT_MS, what: `the nodes' shard leaderships to add up to ${shardGroups}` });
    t.pass(`shard leaderships per node shown: ${leadCells.join(' / ')}`);
    await page.locator('section[aria-label="Shards of c"] td.leader').first().waitFor();
    const vdbGrid = page.locator('section[aria-label="Shards of VDB v"]');
    const vdbRows = vdbGrid.locator('tr[data-shard]');
    // Four rows, each with one leader: what the grid shows is what the API said.
    await waitFor(async () => (await vdbRows.count()) === 4 && (await vdbGrid.locator('td.leader').count()) === 4, { timeoutMs: WAIT_MS, what: 'four VDB shards, each with a leader' });
    for (let i = 0; i < 4; i++) t.equal(await vdbRows.nth(i).locator('td.leader').count(), 1, `VDB shard ${i}: one leader`);
    const vdbLedByVictim: number[] = [];
    for (let i = 0; i < 4; i++) if ((await vdbRows.nth(i).locator('td.leader').getAttribute('data-node')) === victim) vdbLedByVictim.push(i);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'cluster.png'), fullPage: true });
    await vdbGrid.screenshot({ path: path.join(SCREENSHOTS, 'cluster-vdb.png') });

    await cluster.kill9(victim);
    await page.locator(`tr[data-node="${victim}"] td.node-status`).getByText('down').waitFor({ timeout: 30_000 });
    t.pass(`${victim} shown down`);
    if (led !== undefined) {
      const shardRow = page.locator(`section[aria-label="Shards of c"] tr[data-shard="${led.shard}"]`);
      await shardRow.locator(`td.leader:not([data-node="${victim}"])`).waitFor({ timeout: 30_000 });
      t.pass(`shard ${led.shard}'s leader moved off ${victim}`);
    }
    // Every VDB shard ends up with a leader that is not the killed node: a new one for those it led.
    for (let i = 0; i < 4; i++) await vdbRows.nth(i).locator(`td.leader:not([data-node="${victim}"])`).waitFor({ timeout: 30_000 });
    t.pass(`VDB shards ${victim} led (${vdbLedByVictim.join(', ') || 'none'}) show a new leader; the others keep one`);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'cluster-node-down.png'), fullPage: true });
    await page.getByRole('link', { name: 'Gateway' }).click();
    await page.getByText('The gateway is off on this node').waitFor();
    t.pass('a node without the gateway says so');
    // Requests may fail while the cluster fails over (the browser logs those); scripts must not.
    t.same(errors.filter((e) => !e.startsWith('Failed to load resource')), [], 'no script errors');
  });
}

/** The playground's result ids, in order, become `expected`. */
async function waitForIds(page: Page, expected: string[]): Promise<void> {
  await waitForTexts(page.locator('.hit-id'), expected);
}

/**
 * The texts of `locator`'s elements become `expected`, in order. Polled from the test, not
 * with page.waitForFunction: that re-evaluates a string in the page, which the console's
 * CSP (no 'unsafe-eval') refuses.
 */
async function waitForTexts(locator: Locator, expected: string[]): Promise<void> {
  const want = JSON.stringify(expected);
  await waitFor(async () => JSON.stringify(await locator.allTextContents()) === want, { timeoutMs: WAIT_MS, intervalMs: 50, what: `texts ${want}` });
}

/** The node counts open SSE streams per database in /health (listed for a key that may read it). */
async function waitForFeedOpen(url: string, db: string): Promise<void> {
  await waitFor(
    async () => {
      const health = await request<{ docdb: { databases: { name: string; open_feeds: number }[] } }>(url, 'GET', '/health', { key: TEST_ADMIN_KEY });
      return (health.body.docdb.databases.find((d) => d.name === db)?.open_feeds ?? 0) > 0;
    },
    { timeoutMs: WAIT_MS, what: `an open changes feed on ${db}` },
  );
}
