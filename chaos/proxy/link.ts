// A userspace TCP fault proxy for one directed link (loopback only): the dialler connects to
// `port`, the proxy connects to the target and copies bytes both ways through a `Pipe` per
// direction that applies that direction's faults. Faults can change at any time and apply
// to live connections: gRPC streams live for the whole run.
//
// Blackhole HOLDS bytes, it does not drop them. A real partition drops packets, but TCP
// retransmits them, so the byte stream an application sees is never missing a piece: either
// everything arrives, in order, once the network heals, or the connection dies (a keepalive
// or a timeout gives up). A proxy that dropped bytes from the middle of a stream would hand
// gRPC a stream with a hole, something no network can produce, and could decode garbage as
// frames. So held bytes (and a FIN behind them) are delivered on heal; past
// `holdBytesMax` per connection and direction the proxy stops reading, which is the back
// pressure a full TCP window gives the sender. The "connection dies" case is `cut()`.
//
// `cut()` resets every connection now (RST) and resets new ones as soon as they arrive (the
// dialler sees ECONNRESET rather than ECONNREFUSED: the listening port stays ours).
import net from 'node:net';
import type { Rand } from '../../src/core/rand.js';
import { type DirFaults, type LinkFaults, PASS, PASS_LINK } from './plan.js';

export const LINK_LIMITS = {
  /** Bytes read but not yet delivered, per connection and direction, before reading pauses. */
  holdBytesMax: 4 * 1024 * 1024,
  /** Token bucket depth of a throttle, as this many milliseconds of its rate (at least 1 byte). */
  throttleBurstMs: 50,
} as const;

export type Direction = 'a2b' | 'b2a';

export interface DirStats {
  /** Bytes read from the sender. */
  bytesIn: number;
  /** Bytes written to the receiver. */
  bytesOut: number;
  /** Bytes held when their sender reset the connection: never delivered. */
  bytesDiscarded: number;
  /** Connections whose sender is not being read: held bytes reached `holdBytesMax`. */
  readsPaused: number;
}

export interface LinkStats {
  connectionsAccepted: number;
  connectionsOpen: number;
  /** Connections reset by cut(), live or new. */
  connectionsReset: number;
  a2b: DirStats;
  b2a: DirStats;
}

export interface LinkOptions {
  /** Port to listen on, on 127.0.0.1 (0 picks one). */
  port: number;
  /** Where the listener really is (a loopback port). */
  targetPort: number;
  /** Jitter draws: inject a seeded one so a run replays. */
  rand: Rand;
  holdBytesMax?: number;
  name?: string;
}

type Item = { kind: 'data'; data: Buffer; readyAtMs: number } | { kind: 'end'; readyAtMs: number } | { kind: 'reset'; readyAtMs: number };

/** One direction of one connection: an ordered queue between a reader and a writer. */
class Pipe {
  readonly #queue: Item[] = [];
  #queuedBytes = 0;
  #lastReadyAtMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #waitingDrain = false;
  #tokens = 0;
  #refilledAtMs = 0;
  #done = false;
  /** Reading paused by the hold bound. */
  #paused = false;

  constructor(
    readonly src: net.Socket,
    readonly dst: net.Socket,
    readonly faults: () => DirFaults,
    readonly rand: Rand,
    readonly stats: DirStats,
    readonly holdBytesMax: number,
  ) {
    let ended = false;
    src.on('data', (data: Buffer) => {
      stats.bytesIn += data.length;
      this.#push({ kind: 'data', data, readyAtMs: this.#readyAt() });
    });
    src.on('end', () => {
      ended = true;
      this.#push({ kind: 'end', readyAtMs: this.#readyAt() });
    });
    // A sender that vanished without a FIN (a reset): its kernel would have thrown away what
    // it had not delivered yet, so held bytes go too; the peer sees the reset once the
    // direction is not held.
    src.on('close', () => {
      if (ended || this.#done) return;
      this.#discardHeld();
      this.#push({ kind: 'reset', readyAtMs: this.#readyAt() });
    });
    src.on('error', () => {});
  }

  /** Re-run after the faults changed: a heal delivers what was held. */
  pump(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#done || this.#waitingDrain) return;
    if (this.dst.destroyed) {
      this.#finish();
      return;
    }
    const f = this.faults();
    if (f.blackhole) return this.#updatePause();
    const nowMs = Date.now();
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      if ((f.delayMs > 0 || f.jitterMs > 0) && head.readyAtMs > nowMs) {
        this.#wakeIn(head.readyAtMs - nowMs);
        break;
      }
      if (head.kind !== 'data') {
        this.#queue.shift();
        if (head.kind === 'end') this.dst.end();
        else this.dst.resetAndDestroy();
        this.#finish();
        return;
      }
      let chunk = head.data;
      if (f.bytesPerSecond !== null) {
        const capacity = Math.max(1, Math.floor((f.bytesPerSecond * LINK_LIMITS.throttleBurstMs) / 1000));
        this.#tokens = Math.min(capacity, this.#tokens + ((nowMs - this.#refilledAtMs) * f.bytesPerSecond) / 1000);
        this.#refilledAtMs = nowMs;
        const want = Math.min(chunk.length, capacity);
        if (this.#tokens < want) {
          this.#wakeIn(Math.max(1, Math.ceil(((want - this.#tokens) * 1000) / f.bytesPerSecond)));
          break;
        }
        chunk = chunk.subarray(0, Math.floor(this.#tokens));
        this.#tokens -= chunk.length;
      }
      if (chunk.length === head.data.length) this.#queue.shift();
      else head.data = head.data.subarray(chunk.length);
      this.#queuedBytes -= chunk.length;
      this.stats.bytesOut += chunk.length;
      if (!this.dst.write(chunk)) {
        this.#waitingDrain = true;
        this.dst.once('drain', () => {
          this.#waitingDrain = false;
          this.pump();
        });
        break;
      }
    }
    this.#updatePause();
  }

  /** Stop everything (the connection is gone or cut). */
  stop(): void {
    this.#finish();
  }

  #push(item: Item): void {
    if (this.#done) return;
    this.#queue.push(item);
    if (item.kind === 'data') this.#queuedBytes += item.data.length;
    if (this.#timer === undefined) this.pump();
    else this.#updatePause();
  }

  /** Delivery time of a chunk read now: never before the one ahead of it (order per connection). */
  #readyAt(): number {
    const f = this.faults();
    const extraMs = f.delayMs + (f.jitterMs > 0 ? this.rand.int(Math.floor(f.jitterMs) + 1) : 0);
    this.#lastReadyAtMs = Math.max(this.#lastReadyAtMs, Date.now() + extraMs);
    return this.#lastReadyAtMs;
  }

  #discardHeld(): void {
    for (const item of this.#queue) if (item.kind === 'data') this.stats.bytesDiscarded += item.data.length;
    this.#queue.length = 0;
    this.#queuedBytes = 0;
  }

  #wakeIn(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.pump();
    }, ms);
  }

  #updatePause(): void {
    if (this.#done) return;
    const pause = this.#queuedBytes >= this.holdBytesMax;
    if (pause === this.#paused) return;
    this.#paused = pause;
    this.stats.readsPaused += pause ? 1 : -1;
    if (pause) this.src.pause();
    else this.src.resume();
  }

  #finish(): void {
    if (this.#paused) this.stats.readsPaused--;
    this.#paused = false;
    this.#done = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue.length = 0;
    this.#queuedBytes = 0;
  }
}

interface Connection {
  a: net.Socket;
  b: net.Socket;
  pipes: Pipe[];
}

export class Link {
  readonly name: string;
  #faults: { a2b: DirFaults; b2a: DirFaults } = { a2b: PASS, b2a: PASS };
  #cut = false;
  #targetPort: number;
  readonly #server: net.Server;
  readonly #conns = new Set<Connection>();
  readonly #o: LinkOptions;
  readonly #stats: LinkStats = { connectionsAccepted: 0, connectionsOpen: 0, connectionsReset: 0, a2b: { bytesIn: 0, bytesOut: 0, bytesDiscarded: 0, readsPaused: 0 }, b2a: { bytesIn: 0, bytesOut: 0, bytesDiscarded: 0, readsPaused: 0 } };
  #port = 0;

  private constructor(o: LinkOptions) {
    this.#o = o;
    this.name = o.name ?? `link:${o.targetPort}`;
    this.#targetPort = o.targetPort;
    // allowHalfOpen: a FIN in one direction must not end the other (it travels as held data).
    this.#server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, (a) => this.#accept(a));
  }

  static async open(o: LinkOptions): Promise<Link> {
    const link = new Link(o);
    await new Promise<void>((resolve, reject) => {
      link.#server.once('error', reject);
      link.#server.listen(o.port, '127.0.0.1', () => {
        link.#server.off('error', reject);
        resolve();
      });
    });
    link.#port = (link.#server.address() as net.AddressInfo).port;
    return link;
  }

  /** The port diallers connect to. */
  get port(): number {
    return this.#port;
  }

  get address(): string {
    return `127.0.0.1:${this.#port}`;
  }

  /** Where new connections go (a restarted node may listen elsewhere); live ones stay. */
  retarget(targetPort: number): void {
    this.#targetPort = targetPort;
  }

  faults(): LinkFaults & { cut: boolean } {
    return { ...this.#faults, cut: this.#cut };
  }

  /** Set the faults of both directions; live connections follow at once. Clears a cut. */
  set(faults: LinkFaults): void {
    this.#faults = { a2b: faults.a2b, b2a: faults.b2a };
    this.#cut = false;
    this.#pumpAll();
  }

  setDirection(dir: Direction, faults: DirFaults): void {
    this.#faults = { ...this.#faults, [dir]: faults };
    this.#pumpAll();
  }

  /** Reset every connection now and every new one until healed (or `set`). */
  cut(): void {
    this.#cut = true;
    for (const c of [...this.#conns]) this.#reset(c);
  }

  /** Back to pass in both directions: held bytes are delivered, new connections accepted. */
  heal(): void {
    this.set(PASS_LINK);
  }

  stats(): LinkStats {
    return { ...this.#stats, a2b: { ...this.#stats.a2b }, b2a: { ...this.#stats.b2a } };
  }

  /** Stop listening and destroy every connection. */
  async close(): Promise<void> {
    const closed: Promise<void>[] = [new Promise<void>((resolve) => this.#server.close(() => resolve()))];
    for (const c of [...this.#conns]) {
      for (const p of c.pipes) p.stop();
      for (const s of [c.a, c.b]) {
        if (!s.closed) closed.push(new Promise<void>((resolve) => s.once('close', () => resolve())));
        s.destroy();
      }
    }
    await Promise.all(closed);
  }

  #accept(a: net.Socket): void {
    this.#stats.connectionsAccepted++;
    if (this.#cut) {
      this.#stats.connectionsReset++;
      a.on('error', () => {});
      a.resetAndDestroy();
      return;
    }
    // The target sees a connection at once, whatever the faults; its bytes are what is held.
    const b = net.connect({ host: '127.0.0.1', port: this.#targetPort, allowHalfOpen: true });
    a.setNoDelay(true);
    b.setNoDelay(true);
    const holdBytesMax = this.#o.holdBytesMax ?? LINK_LIMITS.holdBytesMax;
    const conn: Connection = {
      a,
      b,
      pipes: [
        new Pipe(a, b, () => this.#faults.a2b, this.#o.rand, this.#stats.a2b, holdBytesMax),
        new Pipe(b, a, () => this.#faults.b2a, this.#o.rand, this.#stats.b2a, holdBytesMax),
      ],
    };
    this.#conns.add(conn);
    this.#stats.connectionsOpen++;
    let open = 2;
    const gone = () => {
      if (--open > 0) return;
      this.#conns.delete(conn);
      this.#stats.connectionsOpen--;
    };
    a.once('close', gone);
    b.once('close', gone);
  }

  #reset(c: Connection): void {
    this.#stats.connectionsReset++;
    for (const p of c.pipes) p.stop();
    c.a.resetAndDestroy();
    c.b.resetAndDestroy();
  }

  #pumpAll(): void {
    for (const c of this.#conns) for (const p of c.pipes) p.pump();
  }
}
