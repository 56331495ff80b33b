// gRPC transport for Raft messages between nodes (proto/cluster.proto).
//
// Each node dials every peer once and keeps one `Link` stream to it: outgoing Raft messages
// for that peer (all groups) are queued and flushed as one Batch per event-loop turn; large
// messages (snapshots) go as ordered chunks; a node heartbeat is sent every
// `heartbeatIntervalMs` on the same stream (`lastSeenMs(peer)` feeds the failure detector).
// Broken streams are redialled with exponential backoff; messages queued while a peer is
// unreachable (or while its stream is not draining) are bounded and dropped beyond the bound
// (Raft retransmits).
//
// Calls (`call`, `callAddress`) ride on the same authenticated streams: the dialler writes a
// Request frame, the listener answers with a Response frame of the same id. Peers can be
// added, moved and removed at run time (`setPeer`, `removePeer`): membership changes.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { format } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { type Backoff, nominalDelayMs } from '../core/backoff.js';
import { packagePath } from '../core/package-root.js';
import { FirkinError, isFirkinError, ERROR_CODES, type ErrorCode } from '../core/errors.js';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { decodeMessage, encodeValue } from '../raft/codec.js';
import { notSent } from './not-sent.js';
import type { Message, NodeId } from '../raft/types.js';

const PROTO_PATH = packagePath('proto', 'cluster.proto');

export const TRANSPORT_LIMITS = {
  queuedMessagesMax: 10_000,
  frameBytesMax: 1024 * 1024,
  chunkBytes: 256 * 1024,
  reassemblyBytesMax: 512 * 1024 * 1024,
  backoffMsMin: 50,
  backoffMsMax: 2_000,
  handshakeTimeoutMs: 5_000,
  callsInFlightMax: 10_000,
} as const;

/**
 * Redials of a broken link: 50 ms doubling to 2 s, no jitter (one dialler per peer pair, and
 * the same bounds as gRPC's own reconnect backoff configured below).
 */
const REDIAL_BACKOFF: Backoff = { baseMs: TRANSPORT_LIMITS.backoffMsMin, capMs: TRANSPORT_LIMITS.backoffMsMax };

/** This node's own link to a peer, as an operator reads it (`Transport.linkState`). */
export type LinkState = 'up' | 'blocked' | 'down' | 'none';

/** Answers a call from an authenticated peer; a thrown FirkinError travels back as one. */
export type RequestHandler = (from: NodeId, method: string, body: Buffer) => Promise<Uint8Array>;

export interface TransportOptions {
  nodeId: NodeId;
  cookie: string;
  /** host:port to listen on (port 0 picks one). */
  listen: string;
  peers: ReadonlyMap<NodeId, string>;
  onMessages(messages: Message[]): void;
  onRequest?: RequestHandler;
  heartbeatIntervalMs: number;
  /** What this node's heartbeats carry: the shard groups it leads, by data kind. */
  leadCounts?(): Record<string, number>;
  log?(line: string): void;
}

interface Frame {
  hello?: { node: string; nonce: Buffer };
  challenge?: { node: string; nonce: Buffer; mac: Buffer };
  proof?: { mac: Buffer };
  batch?: { messages: { group: string; payload: Buffer }[] };
  heartbeat?: { node: string; sent_ms: string | number; leads?: Record<string, number>; has_leads?: boolean };
  chunk?: { group: string; id: string | number; seq: number; last: boolean; data: Buffer };
  request?: { id: string | number; method: string; body: Buffer };
  response?: { id: string | number; ok: boolean; body: Buffer; code: string; message: string; details?: Buffer };
  body?: string;
}

interface PendingCall {
  frame: Frame;
  resolve(body: Buffer): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

function responseError(r: NonNullable<Frame['response']>): FirkinError {
  const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(r.code) ? (r.code as ErrorCode) : 'error';
  const details = detailsFromWire(r.details);
  return new FirkinError(code, r.message, details === undefined ? undefined : { details });
}

/**
 * An error's details cross the link with it: before, they were dropped, so a not_leader's
 * `leader` hint never reached a caller on another node (chaos: a node whose own stale replica
 * named an old leader asked it and one other replica in turn, for good, and never the real
 * leader). `sent` is left out: whether a call left a node belongs to the node that made it, and
 * a relayed one would read as the caller's own call not sent.
 */
function detailsToWire(details: Record<string, unknown> | undefined): Buffer {
  if (details === undefined) return Buffer.alloc(0);
  const { sent: _sent, ...rest } = details;
  if (Object.keys(rest).length === 0) return Buffer.alloc(0);
  try {
    return Buffer.from(encodeCbor(rest));
  } catch {
    return Buffer.alloc(0); // details that do not encode are not worth failing the answer for
  }
}

function detailsFromWire(bytes: Buffer | Uint8Array | undefined): Record<string, unknown> | undefined {
  if (bytes === undefined || bytes.length === 0) return undefined;
  try {
    const value = decodeCbor(bytes);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

type Duplex = grpc.ClientDuplexStream<Frame, Frame>;
type ServerDuplex = grpc.ServerDuplexStream<Frame, Frame>;

export function cookieMac(cookie: string, role: 'listener' | 'dialler', ...parts: (Buffer | string)[]): Buffer {
  const h = createHmac('sha256', cookie);
  h.update(role);
  for (const p of parts) {
    h.update('|');
    h.update(p);
  }
  return h.digest();
}

function macEqual(a: Buffer | undefined, b: Buffer): boolean {
  return a !== undefined && a.length === b.length && timingSafeEqual(a, b);
}

let clusterCtor: grpc.ServiceClientConstructor | undefined;
function clusterService(): grpc.ServiceClientConstructor {
  if (clusterCtor !== undefined) return clusterCtor;
  const def = protoLoader.loadSync(PROTO_PATH, { keepCase: true, longs: Number, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { firkin: { cluster: { Cluster: grpc.ServiceClientConstructor } } };
  clusterCtor = pkg.firkin.cluster.Cluster;
  return clusterCtor;
}

class PeerLink {
  queue: { group: string; payload: Buffer }[] = [];
  stream: Duplex | undefined;
  ready = false;
  /** Dials that failed since the link was last up: the next redial waits longer. */
  failedDials = 0;
  retryTimer: NodeJS.Timeout | undefined;
  client: grpc.Client;
  chunkId = 0;
  /** Removed or moved: never redial. */
  closed = false;
  /** The stream's buffer is full: keep messages queued (bounded) until it drains. */
  blocked = false;
  /** The link was up and broke, and no redial has succeeded since. */
  lost = false;
  /** Since when the link has not been up (its creation, or its last break). */
  downSinceMs: number | undefined = Date.now();
  /** Why the last dial since then failed. */
  lastFailure: string | undefined;
  /** Calls by id: written once the link is ready, settled by the peer's Response. */
  calls = new Map<number, PendingCall>();
  unsent: number[] = [];
  callId = 0;
  constructor(
    public peer: NodeId,
    readonly address: string,
  ) {
    const Ctor = clusterService();
    this.client = new Ctor(address, grpc.credentials.createInsecure(), {
      'grpc.keepalive_time_ms': 10_000,
      'grpc.max_receive_message_length': TRANSPORT_LIMITS.frameBytesMax * 2,
      'grpc.max_send_message_length': TRANSPORT_LIMITS.frameBytesMax * 2,
      'grpc.initial_reconnect_backoff_ms': TRANSPORT_LIMITS.backoffMsMin,
      'grpc.max_reconnect_backoff_ms': TRANSPORT_LIMITS.backoffMsMax,
    });
  }
}

export class Transport {
  readonly #o: TransportOptions;
  readonly #server = new grpc.Server({
    'grpc.max_receive_message_length': TRANSPORT_LIMITS.frameBytesMax * 2,
    'grpc.max_send_message_length': TRANSPORT_LIMITS.frameBytesMax * 2,
  });
  readonly #links = new Map<NodeId, PeerLink>();
  readonly #lastSeen = new Map<NodeId, number>();
  /** The shard groups each peer leads, by data kind, from its last heartbeat that said. */
  readonly #peerLeads = new Map<NodeId, Readonly<Record<string, number>>>();
  readonly #inbound = new Set<ServerDuplex>();
  /** Inbound streams past the handshake, by the peer that dialled: heartbeats go back on them too. */
  readonly #inboundPeers = new Map<ServerDuplex, NodeId>();
  #flushScheduled = false;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #started = false;
  port = 0;
  /** Counters for tests and metrics. */
  readonly stats = { batchesSent: 0, messagesSent: 0, messagesDropped: 0, authFailures: 0, reconnects: 0 };

  constructor(o: TransportOptions) {
    this.#o = o;
  }

  async start(): Promise<void> {
    const svc = clusterService();
    this.#server.addService(svc.service, { Link: (call: ServerDuplex) => this.#accept(call) });
    const log = this.#o.log;
    // grpc-js writes its own errors to stderr; a node's go to its log (the last transport
    // started in a process takes them: one in a node).
    if (log !== undefined) grpc.setLogger({ error: (...args: unknown[]) => log(`grpc: ${format(...args)}`) });
    this.port = await new Promise<number>((resolve, reject) =>
      this.#server.bindAsync(this.#o.listen, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(listenFailure(this.#o.listen, err)) : resolve(port))),
    );
    for (const [peer, address] of this.#o.peers) if (peer !== this.#o.nodeId && !this.#links.has(peer)) this.#links.set(peer, new PeerLink(peer, address));
    this.#started = true;
    for (const link of this.#links.values()) this.#dial(link);
    this.#heartbeatTimer = setInterval(() => this.#heartbeat(), this.#o.heartbeatIntervalMs);
  }

  /** Shard groups of a data kind `peer` leads, as its last heartbeat said; undefined: not heard. */
  peerLeads(peer: NodeId, kind: string): number | undefined {
    const leads = this.#peerLeads.get(peer);
    return leads === undefined ? undefined : (leads[kind] ?? 0);
  }

  /** Milliseconds-since-epoch of the last frame received from `peer`, if any. */
  lastSeenMs(peer: NodeId): number | undefined {
    return this.#lastSeen.get(peer);
  }

  isConnected(peer: NodeId): boolean {
    return this.#links.get(peer)?.ready === true;
  }

  /** The link to `peer` is not up and its dials fail: where it dials, why, and since when. */
  dialFailure(peer: NodeId): { address: string; why: string; sinceMs: number } | undefined {
    const link = this.#links.get(peer);
    if (link === undefined || link.ready || link.lastFailure === undefined || link.downSinceMs === undefined) return undefined;
    return { address: link.address, why: link.lastFailure, sinceMs: link.downSinceMs };
  }

  /**
   * The link to `peer` was up and broke, and redialling has not brought it back (a killed
   * process refuses connections at once). A link never up yet (startup) is not lost.
   */
  linkLost(peer: NodeId): boolean {
    return this.#links.get(peer)?.lost === true;
  }

  /**
   * This node's own link to `peer`, as an operator reads it: `up`; `blocked` (up, but the
   * stream's buffer is full, so messages wait); `down` (redialling); `none` (not dialled: no
   * messages go to it).
   */
  linkState(peer: NodeId): { state: LinkState; queued: number } {
    const link = this.#links.get(peer);
    if (link === undefined) return { state: 'none', queued: 0 };
    return { state: !link.ready ? 'down' : link.blocked ? 'blocked' : 'up', queued: link.queue.length };
  }

  /** Whether `peer` has a link (up or redialling). */
  hasPeer(peer: NodeId): boolean {
    return this.#links.has(peer);
  }

  /** Add a peer, or move it to a new address (its link is redialled). */
  setPeer(peer: NodeId, address: string): void {
    if (peer === this.#o.nodeId || this.#closed) return;
    const old = this.#links.get(peer);
    if (old?.address === address) return;
    if (old !== undefined) this.#closeLink(old, 'peer moved');
    const link = new PeerLink(peer, address);
    this.#links.set(peer, link);
    if (this.#started) this.#dial(link);
  }

  /** Drop a peer and its link; false when it was not a peer. */
  removePeer(peer: NodeId): boolean {
    const link = this.#links.get(peer);
    if (link === undefined) return false;
    this.#links.delete(peer);
    this.#closeLink(link, 'peer removed');
    return true;
  }

  peers(): Map<NodeId, string> {
    return new Map([...this.#links].map(([peer, link]) => [peer, link.address]));
  }

  /**
   * Call `method` on a known peer whose link is up (else it fails at once, not sent); a link
   * that breaks fails its calls with `unavailable` (the caller decides whether to retry).
   */
  call(peer: NodeId, method: string, body: Uint8Array, timeoutMs: number): Promise<Buffer> {
    const link = this.#links.get(peer);
    if (link === undefined) return Promise.reject(notSent(peer, 'no address known'));
    if (link.calls.size >= TRANSPORT_LIMITS.callsInFlightMax) return Promise.reject(notSent(peer, 'too many calls in flight'));
    // Fail fast on a link that is down: the caller retries with fresh knowledge (a new leader)
    // instead of waiting on a peer that may be dead.
    if (!link.ready) return Promise.reject(notSent(peer, 'link is down'));
    const id = ++link.callId;
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        link.calls.delete(id);
        const sent = !link.unsent.includes(id);
        reject(sent ? new FirkinError('timeout', `${method} on ${peer} did not answer within ${timeoutMs} ms`) : notSent(peer, 'no link within the timeout'));
      }, timeoutMs);
      link.calls.set(id, { frame: { request: { id, method, body: Buffer.from(body) } }, resolve, reject, timer });
      link.unsent.push(id);
      this.#flushCalls(link);
    });
  }

  /**
   * One call to an address whose node name is not known yet (a seed): dial, authenticate with
   * the cookie, call, hang up. Resolves with the answering node's name and the reply body.
   */
  callAddress(address: string, method: string, body: Uint8Array, timeoutMs: number): Promise<{ node: NodeId; body: Buffer }> {
    const link = new PeerLink('', address);
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (err: unknown, value?: { node: NodeId; body: Buffer }, linger = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const hangUp = () => {
          link.stream?.cancel();
          link.client.close();
        };
        // After a refused challenge, give our (empty) proof a moment to reach the peer's log.
        if (linger) {
          link.stream?.end();
          setTimeout(hangUp, 500).unref();
        } else hangUp();
        if (err !== undefined) reject(err);
        else resolve(value!);
      };
      const timer = setTimeout(() => finish(new FirkinError('timeout', `${address} did not answer ${method} within ${timeoutMs} ms`)), timeoutMs);
      const stream = link.client.makeBidiStreamRequest('/firkin.cluster.Cluster/Link', serialize, deserialize) as unknown as Duplex;
      link.stream = stream;
      const nonce = randomBytes(32);
      stream.on('data', (f: Frame) => {
        if (f.challenge !== undefined) {
          const expect = cookieMac(this.#o.cookie, 'listener', nonce, f.challenge.nonce, f.challenge.node);
          if (!macEqual(f.challenge.mac, expect)) {
            this.stats.authFailures++;
            // An empty proof lets the listener log the mismatch too; it proves nothing.
            stream.write({ proof: { mac: Buffer.alloc(0) } });
            finish(new FirkinError('unauthorized', `${address} failed the cookie challenge: its RELEASE_COOKIE differs from ours`), undefined, true);
            return;
          }
          if (f.challenge.node === this.#o.nodeId) {
            // A seed list that names every node names this one too; asked, it would wait on
            // itself until the call's deadline.
            finish(new FirkinError('conflict', `${address} answers as ${f.challenge.node}, this node's own name: it is this node's own address (or another node runs under this name)`, { details: { self: true } }));
            return;
          }
          link.peer = f.challenge.node;
          stream.write({ proof: { mac: cookieMac(this.#o.cookie, 'dialler', f.challenge.nonce, nonce, this.#o.nodeId) } });
          stream.write({ request: { id: 1, method, body: Buffer.from(body) } });
        } else if (f.response !== undefined) {
          if (f.response.ok) finish(undefined, { node: link.peer, body: f.response.body });
          else finish(responseError(f.response));
        }
      });
      stream.on('error', (err: Error) => finish(new FirkinError('unavailable', `${address}: ${err.message}`)));
      stream.on('end', () => finish(new FirkinError('unavailable', `${address} closed the link (cookie refused?)`)));
      stream.write({ hello: { node: this.#o.nodeId, nonce } });
    });
  }

  /** Queue messages; everything queued in this event-loop turn goes out as one batch per peer. */
  send(messages: readonly Message[]): void {
    for (const m of messages) {
      const link = this.#links.get(m.to);
      if (link === undefined) continue;
      if (link.queue.length >= TRANSPORT_LIMITS.queuedMessagesMax) {
        link.queue.shift();
        this.stats.messagesDropped++;
      }
      link.queue.push({ group: m.group, payload: encodeValue(m) });
    }
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => this.#flush());
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#heartbeatTimer !== undefined) clearInterval(this.#heartbeatTimer);
    for (const link of this.#links.values()) this.#closeLink(link, 'transport closed');
    for (const call of this.#inbound) call.end();
    await new Promise<void>((resolve) => this.#server.tryShutdown(() => resolve()));
    this.#server.forceShutdown();
  }

  // ---- dialling side -----------------------------------------------------------------------

  #closeLink(link: PeerLink, why: string): void {
    link.closed = true;
    if (link.retryTimer !== undefined) clearTimeout(link.retryTimer);
    link.stream?.cancel();
    link.client.close();
    this.#failCalls(link, why);
  }

  #failCalls(link: PeerLink, why: string): void {
    for (const [id, c] of link.calls) {
      clearTimeout(c.timer);
      c.reject(link.unsent.includes(id) ? notSent(link.peer, why) : new FirkinError('unavailable', `link to ${link.peer} broke after the call was sent: ${why}`));
    }
    link.calls.clear();
    link.unsent = [];
  }

  #flushCalls(link: PeerLink): void {
    if (!link.ready || link.stream === undefined) return;
    for (const id of link.unsent.splice(0)) {
      const c = link.calls.get(id);
      if (c !== undefined) link.stream.write(c.frame);
    }
  }

  #dial(link: PeerLink): void {
    if (this.#closed || link.closed) return;
    const stream = link.client.makeBidiStreamRequest('/firkin.cluster.Cluster/Link', serialize, deserialize) as unknown as Duplex;
    link.stream = stream;
    link.ready = false;
    const nonce = randomBytes(32);
    let done = false;
    const fail = (why: string) => {
      if (done) return;
      done = true;
      if (link.ready) link.lost = true;
      link.ready = false;
      link.downSinceMs ??= Date.now();
      link.lastFailure = why;
      link.blocked = false;
      link.stream = undefined;
      stream.cancel();
      this.#failCalls(link, why);
      if (this.#closed || link.closed) return;
      const retryMs = nominalDelayMs(++link.failedDials, REDIAL_BACKOFF);
      this.#o.log?.(`link to ${link.peer} down: ${why}; retry in ${retryMs} ms`);
      link.retryTimer = setTimeout(() => {
        this.stats.reconnects++;
        this.#dial(link);
      }, retryMs);
    };
    const handshakeTimer = setTimeout(() => fail('handshake timeout'), TRANSPORT_LIMITS.handshakeTimeoutMs);
    stream.on('data', (f: Frame) => {
      if (f.challenge !== undefined && !link.ready) {
        const expect = cookieMac(this.#o.cookie, 'listener', nonce, f.challenge.nonce, f.challenge.node);
        if (f.challenge.node !== link.peer || !macEqual(f.challenge.mac, expect)) {
          this.stats.authFailures++;
          clearTimeout(handshakeTimer);
          if (f.challenge.node === link.peer) stream.write({ proof: { mac: Buffer.alloc(0) } }); // let the peer log it too
          fail(f.challenge.node === link.peer ? 'peer failed the cookie challenge: RELEASE_COOKIE differs' : `expected node ${link.peer}, found ${f.challenge.node}`);
          return;
        }
        stream.write({ proof: { mac: cookieMac(this.#o.cookie, 'dialler', f.challenge.nonce, nonce, this.#o.nodeId) } });
        clearTimeout(handshakeTimer);
        link.ready = true;
        link.lost = false;
        link.downSinceMs = undefined;
        link.lastFailure = undefined;
        link.failedDials = 0;
        this.#lastSeen.set(link.peer, Date.now());
        this.#flushLink(link);
        this.#flushCalls(link);
      } else if (f.heartbeat !== undefined && link.ready) {
        // The peer's heartbeat back on the stream this node dialled (see #heartbeat).
        this.#lastSeen.set(link.peer, Date.now());
        if (f.heartbeat.has_leads === true) this.#peerLeads.set(link.peer, { ...f.heartbeat.leads });
      } else if (f.response !== undefined) {
        const id = Number(f.response.id);
        const c = link.calls.get(id);
        if (c === undefined) return;
        link.calls.delete(id);
        clearTimeout(c.timer);
        if (f.response.ok) c.resolve(f.response.body);
        else c.reject(responseError(f.response));
      }
    });
    stream.on('error', (err: Error) => {
      clearTimeout(handshakeTimer);
      fail(err.message);
    });
    stream.on('end', () => {
      clearTimeout(handshakeTimer);
      fail('stream ended');
    });
    stream.write({ hello: { node: this.#o.nodeId, nonce } });
  }

  #flush(): void {
    this.#flushScheduled = false;
    for (const link of this.#links.values()) this.#flushLink(link);
  }

  #flushLink(link: PeerLink): void {
    if (!link.ready || link.blocked || link.stream === undefined || link.queue.length === 0) return;
    const stream = link.stream;
    let batch: { group: string; payload: Buffer }[] = [];
    let bytes = 0;
    const write = (frame: Frame) => {
      if (stream.write(frame) || link.blocked) return;
      link.blocked = true;
      stream.once('drain', () => {
        link.blocked = false;
        this.#flushLink(link);
      });
    };
    const out = () => {
      if (batch.length === 0) return;
      write({ batch: { messages: batch } });
      this.stats.batchesSent++;
      this.stats.messagesSent += batch.length;
      batch = [];
      bytes = 0;
    };
    for (const { group, payload } of link.queue) {
      if (payload.length > TRANSPORT_LIMITS.chunkBytes) {
        out();
        const id = ++link.chunkId;
        for (let off = 0, seq = 0; off < payload.length; off += TRANSPORT_LIMITS.chunkBytes, seq++) {
          const data = payload.subarray(off, off + TRANSPORT_LIMITS.chunkBytes);
          write({ chunk: { group, id, seq, last: off + TRANSPORT_LIMITS.chunkBytes >= payload.length, data } });
        }
        this.stats.messagesSent++;
        continue;
      }
      if (bytes + payload.length > TRANSPORT_LIMITS.frameBytesMax) out();
      batch.push({ group, payload });
      bytes += payload.length;
    }
    out();
    link.queue = [];
  }

  #heartbeat(): void {
    const leads = this.#o.leadCounts?.();
    const heartbeat = { node: this.#o.nodeId, sent_ms: Date.now(), ...(leads === undefined ? {} : { leads, has_leads: true }) };
    for (const link of this.#links.values()) {
      if (link.ready && !link.blocked) link.stream?.write({ heartbeat });
    }
    // Back on the streams peers dialled: a peer hears this node even when this node does not
    // dial it (its copy of the metadata lacks the peer, e.g. a leader that joined while it was
    // away), so the failure detector's verdict does not hang on who knows whom.
    for (const [call, peer] of this.#inboundPeers) {
      if (call.destroyed || call.writableNeedDrain) continue;
      const mine = this.#links.get(peer);
      if (mine?.ready === true) continue; // our own link to it carries them already
      call.write({ heartbeat });
    }
  }

  // ---- listening side ----------------------------------------------------------------------

  #accept(call: ServerDuplex): void {
    this.#inbound.add(call);
    let peer: NodeId | undefined;
    let nonceC: Buffer | undefined;
    const nonceS = randomBytes(32);
    let authed = false;
    const chunks = new Map<string, { parts: Buffer[]; bytes: number }>();
    let hungUpLogged = false; // one line per refused dialler
    const drop = (why: string) => {
      hungUpLogged = true;
      this.#o.log?.(`inbound link from ${peer ?? '?'} dropped: ${why}`);
      call.destroy(new Error(why));
      this.#inbound.delete(call);
      this.#inboundPeers.delete(call);
    };
    const timer = setTimeout(() => {
      if (!authed) drop('handshake timeout');
    }, TRANSPORT_LIMITS.handshakeTimeoutMs);
    call.on('data', (f: Frame) => {
      if (!authed) {
        if (f.hello !== undefined && nonceC === undefined) {
          peer = f.hello.node;
          nonceC = f.hello.nonce;
          call.write({ challenge: { node: this.#o.nodeId, nonce: nonceS, mac: cookieMac(this.#o.cookie, 'listener', nonceC, nonceS, this.#o.nodeId) } });
          return;
        }
        if (f.proof !== undefined && peer !== undefined && nonceC !== undefined) {
          if (!macEqual(f.proof.mac, cookieMac(this.#o.cookie, 'dialler', nonceS, nonceC, peer))) {
            this.stats.authFailures++;
            clearTimeout(timer);
            drop(`bad cookie proof from node ${peer}: its RELEASE_COOKIE differs from ours`);
            return;
          }
          authed = true;
          clearTimeout(timer);
          this.#lastSeen.set(peer, Date.now());
          this.#inboundPeers.set(call, peer);
          return;
        }
        drop('unexpected frame before authentication');
        return;
      }
      this.#lastSeen.set(peer!, Date.now());
      if (f.request !== undefined) {
        void this.#answer(call, peer!, f.request);
      } else if (f.batch !== undefined) {
        const msgs: Message[] = [];
        for (const rm of f.batch.messages) {
          const m = this.#decode(rm.payload, peer!);
          if (m !== undefined) msgs.push(m);
        }
        if (msgs.length > 0) this.#o.onMessages(msgs);
      } else if (f.heartbeat !== undefined) {
        if (f.heartbeat.has_leads === true) this.#peerLeads.set(peer!, { ...f.heartbeat.leads });
      } else if (f.chunk !== undefined) {
        const key = String(f.chunk.id);
        const acc = chunks.get(key) ?? { parts: [], bytes: 0 };
        acc.parts.push(f.chunk.data);
        acc.bytes += f.chunk.data.length;
        if (acc.bytes > TRANSPORT_LIMITS.reassemblyBytesMax) {
          drop('chunked message too large');
          return;
        }
        chunks.set(key, acc);
        if (f.chunk.last) {
          chunks.delete(key);
          const m = this.#decode(Buffer.concat(acc.parts), peer!);
          if (m !== undefined) this.#o.onMessages([m]);
        }
      }
    });
    // A dialler that refused OUR challenge (its cookie differs) hangs up before its proof.
    const hungUp = () => {
      if (authed || peer === undefined || hungUpLogged) return;
      hungUpLogged = true;
      clearTimeout(timer);
      this.stats.authFailures++;
      this.#o.log?.(`inbound link from node ${peer} closed during the cookie handshake: its RELEASE_COOKIE differs from ours?`);
    };
    call.on('error', () => {
      hungUp();
      this.#inbound.delete(call);
      this.#inboundPeers.delete(call);
    });
    call.on('cancelled', hungUp);
    call.on('end', () => {
      hungUp();
      this.#inbound.delete(call);
      this.#inboundPeers.delete(call);
      call.end();
    });
  }

  async #answer(call: ServerDuplex, peer: NodeId, req: NonNullable<Frame['request']>): Promise<void> {
    let response: NonNullable<Frame['response']>;
    try {
      if (this.#o.onRequest === undefined) throw new FirkinError('not_found', `this node takes no calls (${req.method})`);
      const body = await this.#o.onRequest(peer, req.method, req.body);
      response = { id: req.id, ok: true, body: Buffer.from(body), code: '', message: '' };
    } catch (err) {
      const e = isFirkinError(err) ? err : new FirkinError('error', `internal error answering ${req.method}`);
      if (!isFirkinError(err)) this.#o.log?.(`call ${req.method} from ${peer} failed: ${(err as Error).stack ?? String(err)}`);
      response = { id: req.id, ok: false, body: Buffer.alloc(0), code: e.code, message: e.message, details: detailsToWire(e.details) };
    }
    if (!call.destroyed && call.writable) call.write({ response });
  }

  #decode(payload: Buffer, peer: NodeId): Message | undefined {
    try {
      const m = decodeMessage(payload);
      // A peer may only speak for itself.
      if (m.from !== peer || m.to !== this.#o.nodeId) return undefined;
      return m;
    } catch {
      return undefined;
    }
  }
}

// The Frame codec: proto-loader gives us the message type; encode/decode with protobufjs via the
// service definition's serializers.
let frameType: { serialize(v: Frame): Buffer; deserialize(b: Buffer): Frame } | undefined;
function frameCodec() {
  if (frameType !== undefined) return frameType;
  const svc = clusterService().service as unknown as { Link: { requestSerialize(v: Frame): Buffer; responseDeserialize(b: Buffer): Frame } };
  frameType = { serialize: (v) => svc.Link.requestSerialize(v), deserialize: (b) => svc.Link.responseDeserialize(b) };
  return frameType;
}
function serialize(v: Frame): Buffer {
  return frameCodec().serialize(v);
}
function deserialize(b: Buffer): Frame {
  return frameCodec().deserialize(b);
}

/**
 * A listen that failed (the port taken, an address not this host's) as the one line a node
 * prints when it cannot start; grpc-js lists the reasons in brackets after its own sentence.
 */
function listenFailure(listen: string, err: Error): FirkinError {
  const reasons = /errors: \[(.*)\]$/s.exec(err.message)?.[1];
  return new FirkinError('unavailable', `cannot listen for other nodes (gRPC) on ${listen}: ${reasons ?? err.message}`, { cause: err });
}
