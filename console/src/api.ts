// The console's only door to the node: every call carries the signed-in key, and every
// failure becomes an ApiError with the node's own {error, message}.
const KEY_STORAGE = 'firkin.apiKey';
// The gateway's admin secret: asked for on the Gateway page, kept like the API key (this tab only).
const MASTER_KEY_STORAGE = 'firkin.gatewayMasterKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, key);
}

export function storedMasterKey(): string | null {
  return sessionStorage.getItem(MASTER_KEY_STORAGE);
}

export function storeMasterKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(MASTER_KEY_STORAGE);
  else sessionStorage.setItem(MASTER_KEY_STORAGE, key);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** What to tell the user: refused keys get a sentence of their own. */
  describe(): string {
    if (this.status === 401 && this.code === 'invalid_master_key') return `The gateway master key was refused (401): ${this.message}.`;
    if (this.status === 401) return `The API key was refused (401): ${this.message}. Sign out and paste a valid key.`;
    if (this.status === 403) return `This API key may not read this (403): ${this.message}.`;
    return `${this.status} ${this.code}: ${this.message}`;
  }
}

export interface Timed<T> {
  body: T;
  latencyMs: number;
}

export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const key = storedKey();
  return key === null ? extra : { ...extra, authorization: `Bearer ${key}` };
}

/** Headers a call sends: the signed-in key (as Bearer) unless `auth` says otherwise. */
export interface CallOptions {
  /** The gateway's /admin routes take the master key in X-Api-Key, not the API key. */
  auth?: { kind: 'bearer' } | { kind: 'gateway-master'; key: string };
}

export async function timedApi<T>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Timed<T>> {
  const started = performance.now();
  const extra: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) extra['content-type'] = 'application/json';
  const auth = options.auth ?? { kind: 'bearer' };
  const init: RequestInit = { method, headers: auth.kind === 'bearer' ? headers(extra) : { ...extra, 'x-api-key': auth.key } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  const text = await res.text();
  const latencyMs = performance.now() - started;
  const parsed: unknown = text === '' ? null : res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  if (!res.ok) {
    const err = (parsed ?? {}) as { error?: string; message?: string };
    throw new ApiError(res.status, err.error ?? 'error', err.message ?? res.statusText);
  }
  return { body: parsed as T, latencyMs };
}

/** The node's `{error, message}` of a failed response read as a stream or bytes (not through `api`). */
export async function responseError(res: Response, fallback = res.statusText): Promise<ApiError> {
  const err = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
  return new ApiError(res.status, err.error ?? 'error', err.message ?? fallback);
}

export async function api<T>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<T> {
  return (await timedApi<T>(method, path, body, options)).body;
}

export function describeError(err: unknown): string {
  return err instanceof ApiError ? err.describe() : String((err as Error).message ?? err);
}

export const enc = encodeURIComponent;
