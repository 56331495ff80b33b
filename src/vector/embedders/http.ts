// HTTP embedders: Ollama (`POST {url}/api/embed`) and OpenAI-compatible
// (`POST {url}/v1/embeddings`). Texts go in chunks of `batch_size`; each request has a
// timeout; timeouts, network errors, 429 and 5xx are retried with exponential backoff; any
// final failure is a `bad_gateway` naming the embedder and the cause.
import { type Backoff, nominalDelayMs } from '../../core/backoff.js';
import { FirkinError } from '../../core/errors.js';
import { type OutboundPolicy, outboundAllowed } from '../../core/outbound.js';
import type { EmbedderConfig } from '../collection-config.js';
import type { Embedder } from './embedder.js';

type HttpEmbedderConfig = Extract<EmbedderConfig, { type: 'ollama' | 'openai' }>;

export interface HttpEmbedderDeps {
  fetch: typeof fetch;
  sleep: (ms: number) => Promise<void>;
  /** OpenAI API key (SERVICE_EMBEDDER_OPENAI_API_KEY). */
  openaiApiKey?: string;
  /**
   * The key is sent only to this origin (SERVICE_EMBEDDER_OPENAI_URL): the standard API is
   * unauthenticated, so anyone could otherwise create a collection pointing at their own
   * server and receive the node's key.
   */
  openaiKeyOrigin: string;
  /** Hosts an embedder may call (SERVICE_EMBEDDER_ALLOW / _ALLOW_LOOPBACK). */
  outbound: OutboundPolicy;
}

/** 403 unless the policy lets the node call this embedder URL (checked on create and on every call). */
export function checkEmbedderUrl(url: string, policy: OutboundPolicy): void {
  const parsed = new URL(url);
  if (!outboundAllowed(parsed, policy)) {
    throw new FirkinError('forbidden', `embedder host ${JSON.stringify(parsed.host)} is not allowed: add it to SERVICE_EMBEDDER_ALLOW`);
  }
}

/**
 * Retries of one embedding request: 100 ms doubling to 5 s, no jitter (one caller waits on
 * one request; there is no fleet to spread out, and tests pin the delays).
 */
const EMBEDDER_BACKOFF: Backoff = { baseMs: 100, capMs: 5_000 };

class Retryable extends Error {}

function endpoint(config: HttpEmbedderConfig): string {
  if (config.type === 'ollama') return `${config.url}/api/embed`;
  return config.url.endsWith('/v1') ? `${config.url}/embeddings` : `${config.url}/v1/embeddings`;
}

function toVectors(config: HttpEmbedderConfig, body: unknown, count: number): Float32Array[] {
  const rows: unknown[] = [];
  if (config.type === 'ollama') {
    const embeddings = (body as { embeddings?: unknown } | null)?.embeddings;
    if (!Array.isArray(embeddings)) throw new Error('the reply has no "embeddings" array');
    rows.push(...embeddings);
  } else {
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw new Error('the reply has no "data" array');
    const sorted = [...data].sort((a, b) => Number((a as { index?: number }).index ?? 0) - Number((b as { index?: number }).index ?? 0));
    rows.push(...sorted.map((d) => (d as { embedding?: unknown } | null)?.embedding));
  }
  if (rows.length !== count) throw new Error(`asked for ${count} embeddings, got ${rows.length}`);
  return rows.map((row, i) => {
    if (!Array.isArray(row) || !row.every((x) => typeof x === 'number')) throw new Error(`embedding ${i} is not an array of numbers`);
    return Float32Array.from(row as number[]);
  });
}

export function httpEmbedder(config: HttpEmbedderConfig, deps: HttpEmbedderDeps): Embedder {
  const url = endpoint(config);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (config.type === 'openai' && deps.openaiApiKey !== undefined && new URL(url).origin === new URL(deps.openaiKeyOrigin).origin) {
    headers.authorization = `Bearer ${deps.openaiApiKey}`;
  }

  async function once(texts: readonly string[]): Promise<Float32Array[]> {
    let res: Response;
    try {
      res = await deps.fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: config.model, input: texts }),
        signal: AbortSignal.timeout(config.timeout_ms),
        redirect: 'error', // a redirect could lead past the allow-list
      });
    } catch (err) {
      const e = err as Error;
      const why = e.name === 'TimeoutError' ? `no reply within ${config.timeout_ms} ms` : `${e.message}${e.cause ? ` (${(e.cause as Error).message})` : ''}`;
      throw new Retryable(why);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new Retryable(`reading the reply failed: ${(err as Error).message}`);
    }
    if (!res.ok) {
      const why = `HTTP ${res.status}: ${text.slice(0, 200)}`;
      if (res.status === 429 || res.status >= 500) throw new Retryable(why);
      throw new Error(why);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`the reply is not JSON: ${text.slice(0, 200)}`);
    }
    return toVectors(config, body, texts.length);
  }

  async function withRetries(texts: readonly string[]): Promise<Float32Array[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await once(texts);
      } catch (err) {
        if (err instanceof Retryable && attempt < config.retries) {
          await deps.sleep(nominalDelayMs(attempt + 1, EMBEDDER_BACKOFF));
          continue;
        }
        const tries = attempt + 1;
        throw new FirkinError(
          'bad_gateway',
          `embedder ${config.type} (${url}, model ${config.model}) failed after ${tries} attempt${tries === 1 ? '' : 's'}: ${(err as Error).message}`,
        );
      }
    }
  }

  return {
    type: config.type,
    async embed(texts) {
      checkEmbedderUrl(url, deps.outbound); // the policy may have changed since the collection was made
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += config.batch_size) out.push(...(await withRetries(texts.slice(i, i + config.batch_size))));
      return out;
    },
  };
}
