// TLS: ALPN offers h2 and http/1.1; verify_peer requires a client cert signed by the CA.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import path from 'node:path';
import t from 'tap';
import { startTestNode, tempDir } from '../support/node.js';

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore' });
}

/** A throwaway CA, a server cert for 127.0.0.1 and a client cert, all signed by the CA. */
function makeCerts(): Record<'ca' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey', string> {
  const dir = tempDir('firkin-tls-');
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=firkin-test-ca'], dir);
  writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const name of ['server', 'client']) {
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', 'san.ext'], dir);
  }
  const p = (f: string) => path.join(dir, f);
  return { ca: p('ca.pem'), serverCert: p('server.pem'), serverKey: p('server.key'), clientCert: p('client.pem'), clientKey: p('client.key') };
}

function h1Get(url: string, options: https.RequestOptions): Promise<{ status: number; alpn: string | false | null; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ...options, ALPNProtocols: ['http/1.1'] } as https.RequestOptions, (res) => {
      let body = '';
      const alpn = (res.socket as import('node:tls').TLSSocket).alpnProtocol;
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, alpn, body }));
    });
    req.on('error', reject);
  });
}

function h2Get(url: string, options: http2.SecureClientSessionOptions): Promise<{ status: number; alpn: string | undefined; hlc: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, options);
    session.on('error', reject);
    const req = session.request({ ':path': '/health' });
    req.on('response', (h) => {
      const out = { status: Number(h[':status']), alpn: session.alpnProtocol, hlc: String(h['x-service-hlc']) };
      req.resume();
      req.on('end', () => {
        session.close();
        resolve(out);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

let hasOpenssl = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  hasOpenssl = false;
}

t.test('TLS with ALPN h2 and http/1.1', { skip: hasOpenssl ? false : 'openssl not installed' }, async (t) => {
  const certs = makeCerts();
  const node = await startTestNode({
    SERVICE_HTTP_TLS_ENABLED: 'true',
    SERVICE_HTTP_CERTFILE: certs.serverCert,
    SERVICE_HTTP_KEYFILE: certs.serverKey,
  });
  t.teardown(() => node.close());
  t.match(node.url, /^https:\/\//);
  const ca = readFileSync(certs.ca);
  const h2 = await h2Get(node.url, { ca });
  t.equal(h2.status, 200);
  t.equal(h2.alpn, 'h2');
  t.ok(h2.hlc.length > 0);
  const h1 = await h1Get(`${node.url}/health`, { ca });
  t.equal(h1.status, 200);
  t.equal(h1.alpn, 'http/1.1');
  t.equal(JSON.parse(h1.body).status, 'ok');
});

t.test('verify_peer demands a client certificate signed by the CA', { skip: hasOpenssl ? false : 'openssl not installed' }, async (t) => {
  const certs = makeCerts();
  const node = await startTestNode({
    SERVICE_HTTP_TLS_ENABLED: 'true',
    SERVICE_HTTP_CERTFILE: certs.serverCert,
    SERVICE_HTTP_KEYFILE: certs.serverKey,
    SERVICE_HTTP_CACERTFILE: certs.ca,
    SERVICE_HTTP_VERIFY: 'verify_peer',
  });
  t.teardown(() => node.close());
  const ca = readFileSync(certs.ca);
  const withCert = await h2Get(node.url, { ca, cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) });
  t.equal(withCert.status, 200);
  await t.rejects(h1Get(`${node.url}/health`, { ca }), 'no client certificate: handshake refused');
  const stranger = makeCerts(); // a client cert from another CA
  await t.rejects(
    h1Get(`${node.url}/health`, { ca, cert: readFileSync(stranger.clientCert), key: readFileSync(stranger.clientKey) }),
    'client certificate from an unknown CA: refused',
  );
});
