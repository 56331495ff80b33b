// Where a replication reads or writes: a local database name, or a remote database URL
// `http(s)://host[:port][/prefix]/db/<name>` (or `/vdb/<name>`: a virtual database speaks the
// same protocol) with optional credentials. Parsing, the SSRF allow-list and the
// credential-free display form live here. Pure.
import { FirkinError } from '../../core/errors.js';
import { checkDbName, isDbName } from '../names.js';
import { isVdbName } from '../vdb/catalog.js';
import { type OutboundPolicy, outboundAllowed } from '../../core/outbound.js';
import { isPlainObject } from '../../core/values.js';

export type RemoteAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'bearer'; readonly token: string }
  | { readonly kind: 'basic'; readonly username: string; readonly password: string };

export type EndpointSpec =
  | { readonly kind: 'local'; readonly db: string }
  /** `db`: the remote database's name (a virtual database's when `vdb`). */
  | { readonly kind: 'remote'; readonly url: string; readonly host: string; readonly db: string; readonly vdb?: true; readonly auth: RemoteAuth };

const bad = (message: string) => new FirkinError('bad_request', message);
const CREDENTIAL_BYTES_MAX = 4096;

function credential(value: unknown, where: string, allowEmpty = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value === '') || Buffer.byteLength(value) > CREDENTIAL_BYTES_MAX || /[\r\n]/.test(value)) {
    throw bad(`${where} must be a non-empty string without line breaks`);
  }
  return value;
}

/** `{bearer_token}` or `{basic_auth: {username, password}}`; undefined means none. */
export function parseAuth(raw: unknown): RemoteAuth {
  if (raw === undefined || raw === null) return { kind: 'none' };
  if (!isPlainObject(raw)) throw bad('auth must be {bearer_token: <token>} or {basic_auth: {username, password}}');
  const keys = Object.keys(raw);
  if (keys.length === 1 && keys[0] === 'bearer_token') return { kind: 'bearer', token: credential(raw.bearer_token, 'auth.bearer_token') };
  if (keys.length === 1 && keys[0] === 'basic_auth' && isPlainObject(raw.basic_auth)) {
    const b = raw.basic_auth;
    const username = credential(b.username, 'auth.basic_auth.username');
    if (username.includes(':')) throw bad('auth.basic_auth.username may not contain ":"');
    return { kind: 'basic', username, password: credential(b.password, 'auth.basic_auth.password', true) };
  }
  throw bad('auth must be {bearer_token: <token>} or {basic_auth: {username, password}}');
}

export function authHeader(auth: RemoteAuth): string | undefined {
  switch (auth.kind) {
    case 'none':
      return undefined;
    case 'bearer':
      return `Bearer ${auth.token}`;
    case 'basic':
      return `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  }
}

/** A local name or a remote database URL; `auth` applies only to remote endpoints. */
export function parseEndpoint(raw: unknown, auth: RemoteAuth, where: string): EndpointSpec {
  if (typeof raw !== 'string' || raw === '') throw bad(`${where} must be a local database name or an http(s)://host:port/db/<name> URL`);
  if (!/^https?:\/\//i.test(raw)) {
    checkDbName(raw);
    return { kind: 'local', db: raw };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad(`${where} ${JSON.stringify(raw)} is not a valid URL`);
  }
  if (url.username !== '' || url.password !== '') throw bad(`${where}: put credentials in auth, not in the URL`);
  if (url.search !== '' || url.hash !== '') throw bad(`${where}: a database URL has no query or fragment`);
  const m = /^((?:\/[^/]+)*)\/(db|vdb)\/([^/]+)\/?$/.exec(url.pathname);
  const db = m === null ? undefined : decodeURIComponent(m[3]!);
  const vdb = m?.[2] === 'vdb';
  if (m === null || db === undefined || !(vdb ? isVdbName(db) : isDbName(db))) throw bad(`${where} ${JSON.stringify(raw)} must look like http(s)://host:port/db/<name> (or /vdb/<name>)`);
  const normal = `${url.protocol}//${url.host}${m[1]}/${m[2]}/${encodeURIComponent(db)}`;
  return { kind: 'remote', url: normal, host: url.host, db, ...(vdb ? { vdb: true as const } : {}), auth };
}

/** The endpoint as shown in listings and logs: never with credentials. */
export function displayEndpoint(spec: EndpointSpec): string {
  return spec.kind === 'local' ? spec.db : spec.url;
}

/** The local database a displayed endpoint names (a remote one is a URL, never a database name). */
export function localDbOfDisplayed(displayed: string): string | undefined {
  return isDbName(displayed) ? displayed : undefined;
}

/** Local names plus remote URLs, for persisting a spec (credentials included, server-side only). */
export interface StoredEndpoint {
  readonly endpoint: string;
  readonly auth?: unknown;
}

export function storeEndpoint(spec: EndpointSpec): StoredEndpoint {
  if (spec.kind === 'local') return { endpoint: spec.db };
  const a = spec.auth;
  const auth = a.kind === 'bearer' ? { bearer_token: a.token } : a.kind === 'basic' ? { basic_auth: { username: a.username, password: a.password } } : undefined;
  return auth === undefined ? { endpoint: spec.url } : { endpoint: spec.url, auth };
}

export function loadEndpoint(stored: StoredEndpoint): EndpointSpec {
  return parseEndpoint(stored.endpoint, parseAuth(stored.auth), 'stored endpoint');
}

/** Outbound replication is an SSRF risk: see core/outbound.ts. */
export function checkOutbound(spec: EndpointSpec, policy: OutboundPolicy): void {
  if (spec.kind === 'local') return;
  const url = new URL(spec.url);
  if (!outboundAllowed(url, policy)) {
    throw new FirkinError('forbidden', `replication to ${JSON.stringify(url.host)} is not allowed: add the host to SERVICE_REPLICATION_ALLOW`);
  }
}
