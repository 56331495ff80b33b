// Sockets and protocols for one port.
// - Cleartext: sniff the first bytes of each connection for the HTTP/2 preface; HTTP/2 with
//   prior knowledge goes to an http2 server, anything else to an HTTP/1.1 server.
// - TLS: one http2 secure server with allowHTTP1, ALPN offering h2 and http/1.1;
//   verify_peer demands a client certificate signed by the CA file.
// Both protocols call the same fastify handler.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { FirkinError } from '../core/errors.js';

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** How long shutdown waits for in-flight requests before cutting connections. */
const drainTimeoutMs = 5_000;
/** Idle connections are dropped after this long (HTTP/1.1 keep-alive and HTTP/2 sessions). */
const idleTimeoutMs = 120_000;

export interface Listener {
  readonly port: number;
  readonly url: string;
  /** Stop accepting, let in-flight requests finish (bounded), then close every connection. */
  close(): Promise<void>;
}

export interface ListenOptions {
  host: string;
  port: number;
  maxConnections: number;
  tls: Config['http']['tls'];
  log: Logger;
}

function sniff(socket: net.Socket, onDecided: (isH2: boolean, head: Buffer) => void): void {
  let head: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const n = Math.min(head.length, H2_PREFACE.length);
    const matches = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (!matches || head.length >= H2_PREFACE.length) {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.pause();
      onDecided(matches, head);
    }
  };
  const onEnd = () => socket.destroy();
  socket.on('data', onData);
  socket.on('end', onEnd);
}

function h2Duplex(socket: net.Socket, head: Buffer): Duplex {
  // unshift() is not enough for HTTP/2: its session reads the native handle and would lose
  // the sniffed bytes. Feed them through a PassThrough that then follows the socket.
  const readable = new PassThrough();
  readable.write(head);
  socket.pipe(readable);
  const duplex = Duplex.from({ readable, writable: socket });
  socket.on('close', () => duplex.destroy());
  duplex.on('error', () => socket.destroy());
  return duplex;
}

export async function listen(handler: Handler, options: ListenOptions): Promise<Listener> {
  const sockets = new Set<net.Socket>();
  /** Connections that have not sent a request yet: nothing to drain, close them at once. */
  const sniffing = new Set<net.Socket>();
  /** HTTP/1.1 connections and their requests in flight. An h1 server that never listened
   *  does not track connections itself, so closeIdleConnections() cannot be relied on. */
  const h1InFlight = new Map<net.Socket, number>();
  const sessions = new Set<http2.Http2Session>();
  let front: net.Server;
  let h1: http.Server | undefined;

  const trackSession = (server: http2.Http2Server | http2.Http2SecureServer) =>
    server.on('session', (session) => {
      sessions.add(session);
      session.setTimeout(idleTimeoutMs, () => session.close());
      session.on('close', () => sessions.delete(session));
    });

  if (options.tls.enabled) {
    const tls = options.tls;
    const verifyPeer = tls.verify === 'verify_peer';
    let secure: http2.Http2SecureServer;
    try {
      secure = http2.createSecureServer(
        {
          key: readFileSync(tls.keyFile),
          cert: readFileSync(tls.certFile),
          ...(tls.caCertFile === undefined ? {} : { ca: readFileSync(tls.caCertFile) }),
          allowHTTP1: true,
          requestCert: verifyPeer,
          rejectUnauthorized: verifyPeer,
        },
        handler as never,
      );
    } catch (err) {
      // OpenSSL's reason alone ("PEM routines::no start line") names no file.
      const files = `SERVICE_HTTP_CERTFILE=${tls.certFile}, SERVICE_HTTP_KEYFILE=${tls.keyFile}${tls.caCertFile === undefined ? '' : `, SERVICE_HTTP_CACERTFILE=${tls.caCertFile}`}`;
      throw new FirkinError('unavailable', `cannot use the TLS certificate and key (${files}): ${(err as Error).message}`, { cause: err });
    }
    secure.setTimeout(idleTimeoutMs);
    trackSession(secure);
    secure.on('secureConnection', (socket: TLSSocket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    secure.on('tlsClientError', (err) => options.log.debug({ err: err.message }, 'TLS handshake failed'));
    front = secure;
  } else {
    const h1Server = http.createServer({ keepAliveTimeout: 5_000 }, handler as never);
    h1Server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const socket = req.socket;
      h1InFlight.set(socket, (h1InFlight.get(socket) ?? 0) + 1);
      res.once('close', () => h1InFlight.set(socket, (h1InFlight.get(socket) ?? 1) - 1));
    });
    h1Server.setTimeout(idleTimeoutMs);
    h1 = h1Server;
    const h2 = http2.createServer({}, handler as never);
    trackSession(h2);
    front = net.createServer((socket) => {
      // Nagle + delayed ACK would add ~40 ms to every HTTP/2 exchange through the duplex.
      socket.setNoDelay(true);
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', (err) => options.log.debug({ err: err.message }, 'socket error'));
      sniffing.add(socket);
      sniff(socket, (isH2, head) => {
        sniffing.delete(socket);
        if (isH2) {
          h2.emit('connection', h2Duplex(socket, head));
        } else {
          socket.unshift(head);
          h1InFlight.set(socket, 0);
          socket.once('close', () => h1InFlight.delete(socket));
          h1Server.emit('connection', socket);
          socket.resume();
        }
      });
    });
  }
  if (Number.isFinite(options.maxConnections)) front.maxConnections = options.maxConnections;

  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen({ host: options.host, port: options.port }, () => {
      front.off('error', reject);
      resolve();
    });
  });
  const address = front.address() as net.AddressInfo;
  const scheme = options.tls.enabled ? 'https' : 'http';
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;

  return {
    port: address.port,
    url: `${scheme}://${host}:${address.port}`,
    async close() {
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      for (const socket of sniffing) socket.destroy();
      for (const session of sessions) session.close(); // GOAWAY: finish open streams, take no new ones
      h1?.closeIdleConnections();
      const deadline = Date.now() + drainTimeoutMs;
      const closeIdleH1 = () => {
        for (const [socket, n] of h1InFlight) if (n <= 0) socket.destroy();
      };
      closeIdleH1();
      while (sockets.size > 0 && Date.now() < deadline) {
        h1?.closeIdleConnections();
        closeIdleH1();
        await new Promise((r) => setTimeout(r, 25));
      }
      for (const socket of sockets) socket.destroy();
      for (const session of sessions) session.destroy();
      await closed;
    },
  };
}
