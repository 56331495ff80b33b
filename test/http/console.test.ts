// The console as served by a real node: content types, caching, security headers, the
// browser redirect from `/`, and `/` unchanged for API clients.
import t, { type Test } from 'tap';
import { CONSOLE_CSP } from '../../src/http/console.js';
import { ensureConsoleBuilt } from '../support/console.js';
import { startTestNode } from '../support/node.js';

ensureConsoleBuilt();
const node = await startTestNode();
t.teardown(() => node.close());

function assertSecurityHeaders(t: Test, headers: Headers): void {
  t.equal(headers.get('content-security-policy'), CONSOLE_CSP);
  t.match(headers.get('content-security-policy'), /frame-ancestors 'none'/);
  t.match(headers.get('content-security-policy'), /script-src 'self'(;|$)/, 'no inline or remote scripts');
  t.equal(headers.get('x-content-type-options'), 'nosniff');
}

t.test('/_console/ serves the page, never cached, with security headers', async (t) => {
  const page = await node.request('GET', '/_console/', { key: false });
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(page.headers.get('cache-control'), 'no-cache');
  assertSecurityHeaders(t, page.headers);
  t.notMatch(page.text, /<script>/, 'no inline script');
  const script = /src="(\/_console\/main-[A-Z0-9]+\.js)"/.exec(page.text)?.[1];
  const style = /href="(\/_console\/main-[A-Z0-9]+\.css)"/.exec(page.text)?.[1];
  t.ok(script, 'the page names its hashed script');
  t.ok(style, 'the page names its hashed stylesheet');

  const js = await node.request('GET', script!, { key: false });
  t.equal(js.status, 200);
  t.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  t.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assertSecurityHeaders(t, js.headers);
  const css = await node.request('GET', style!, { key: false });
  t.equal(css.status, 200);
  t.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
});

t.test('unknown and malformed asset names are 404s', async (t) => {
  for (const asset of ['/_console/nope-ABC.js', '/_console/index.html.bak', '/_console/..%2Fpackage.json', '/_console/%2E%2E']) {
    const reply = await node.request('GET', asset, { key: false });
    t.equal(reply.status, 404, asset);
    t.equal(reply.body.error, 'not_found', asset);
  }
});

t.test('browsers asking for / are sent to the console', async (t) => {
  const reply = await fetch(`${node.url}/`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }, redirect: 'manual' });
  t.equal(reply.status, 302);
  t.equal(reply.headers.get('location'), '/_console/');
});

t.test('API clients see / exactly as before the console', async (t) => {
  for (const accept of [undefined, 'application/json', '*/*']) {
    const reply = await node.request('GET', '/', { key: false, headers: accept === undefined ? {} : { accept } });
    t.equal(reply.status, 404, `accept ${accept}`);
    t.same(reply.body, { error: 'not_found', message: 'no route for GET /' });
  }
  const post = await node.request('POST', '/', { key: false, headers: { accept: 'text/html' }, body: {} });
  t.equal(post.status, 404, 'other methods on / are untouched, browser or not');
});
