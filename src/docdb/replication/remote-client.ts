// HTTP client for one remote database (`http(s)://host:port[/prefix]/db/<name>`): the calls
// replication makes, with auth, per-request timeouts and the HLC exchange (our clock goes out
// in `x-service-hlc`, theirs is merged on the way back). Every failure is a FirkinError:
// unreachable or a 5xx -> bad_gateway, a timeout -> timeout, the remote's own 4xx kept.
import http from 'node:http';
import https from 'node:https';
import { FirkinError, type ErrorCode } from '../../core/errors.js';
import { type Hlc, type HybridClock, hlcToBase64, parseHlc } from '../../core/hlc.js';
import { type RemoteAuth, authHeader } from './endpoint-spec.js';

const HLC_HEADER = 'x-service-hlc';
/** Remote bodies are read whole: cap them so a hostile peer cannot exhaust memory. */
const RESPONSE_BYTES_MAX = 256 * 1024 * 1024;

export interface RemoteOptions {
  readonly url: string;
  readonly auth: RemoteAuth;
  readonly hlc: HybridClock;
  readonly timeoutMs: number;
  /** Aborts every call in flight (task stop, shutdown). */
  readonly signal?: AbortSignal;
}

export interface RemoteReply {
  readonly status: number;
  readonly body: unknown;
}

// A remote 401/403 is not the caller's fault here: it stays a bad_gateway (with remote_status).
const REMOTE_CODES: Record<number, ErrorCode> = { 404: 'not_found', 409: 'conflict', 412: 'precondition_failed' };

// node:http(s) rather than fetch: undici's WHATWG layer (streams, header objects, its parser)
// cost the replicating node ~9 µs of CPU a replicated document, more than the JSON itself
// (docs/benchmarks.md, "The replicator's HTTP client"). Connections are kept alive per process.
const AGENTS = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

interface RawReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

/** One request; the body as text, refusing more than RESPONSE_BYTES_MAX whatever the headers say. */
function send(url: string, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal, where: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return reject(new Error('invalid URL'));
    }
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') return reject(new Error(`unsupported protocol ${target.protocol}`));
    const withLength = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = (secure ? https : http).request(target, { method, headers: withLength, agent: secure ? AGENTS.https : AGENTS.http, signal }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > RESPONSE_BYTES_MAX) {
          res.destroy();
          reject(new FirkinError('bad_gateway', `${where}: the response is larger than ${RESPONSE_BYTES_MAX} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
      // A body cut short (the remote died mid-answer) ends in 'close' without 'end'.
      res.on('close', () => {
        if (!res.complete) reject(new Error('the answer was cut short'));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A response header as one string (the first, if the remote repeated it). */
function header(headers: http.IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export class RemoteDb {
  readonly #o: RemoteOptions;

  constructor(options: RemoteOptions) {
    this.#o = options;
  }

  get url(): string {
    return this.#o.url;
  }

  /** One call; `accept` lists statuses returned rather than thrown. `sendHlc` overrides our clock header. */
  async call(method: string, path: string, options: { body?: unknown; accept?: readonly number[]; sendHlc?: Hlc; timeoutMs?: number } = {}): Promise<RemoteReply> {
    const headers: Record<string, string> = { accept: 'application/json', [HLC_HEADER]: hlcToBase64(options.sendHlc ?? this.#o.hlc.now()) };
    const auth = authHeader(this.#o.auth);
    if (auth !== undefined) headers.authorization = auth;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.#o.timeoutMs);
    const signal = this.#o.signal === undefined ? timeout : AbortSignal.any([this.#o.signal, timeout]);
    const where = `${method} ${this.#o.url}${path.split('?', 1)[0]}`;
    let res: RawReply;
    try {
      res = await send(this.#o.url + path, method, headers, body, signal, where);
    } catch (err) {
      if (err instanceof FirkinError) throw err;
      if (timeout.aborted) throw new FirkinError('timeout', `${where}: no answer within ${options.timeoutMs ?? this.#o.timeoutMs} ms`);
      if (this.#o.signal?.aborted) throw new FirkinError('unavailable', `${where}: replication stopped`);
      throw new FirkinError('bad_gateway', `${where}: cannot reach the remote (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    const text = res.text;
    const remoteClock = header(res.headers, HLC_HEADER);
    if (remoteClock !== undefined) {
      const parsed = parseHlc(remoteClock);
      if (parsed !== undefined) this.#o.hlc.update(parsed);
    }
    let parsed: unknown = text;
    if (text !== '' && (header(res.headers, 'content-type') ?? '').includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new FirkinError('bad_gateway', `${where}: the remote answered ${res.status} with invalid JSON`);
      }
    }
    if ((res.status >= 200 && res.status < 300) || options.accept?.includes(res.status)) return { status: res.status, body: parsed };
    const message = typeof parsed === 'object' && parsed !== null ? ((parsed as { message?: string; reason?: string }).message ?? (parsed as { reason?: string }).reason) : undefined;
    const code = REMOTE_CODES[res.status] ?? 'bad_gateway';
    throw new FirkinError(code, `${where}: the remote answered ${res.status}${message === undefined ? '' : `: ${message}`}`, { details: { remote_status: res.status } });
  }
}
