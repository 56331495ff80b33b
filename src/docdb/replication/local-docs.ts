// `_local/<id>` documents: per-database, never replicated, never in the changes feed. They
// hold replication checkpoints (ours and CouchDB clients'). Stored in the `system` column
// family under ['repl.local', db, id] as CBOR {r: revision number, b: body}; revisions are
// CouchDB's `0-<n>` form and a write must name the current one (409 otherwise).
import { decodeCbor, encodeCbor } from '../../core/codec.js';
import { FirkinError } from '../../core/errors.js';
import { decodeKey, encodeKey, prefixRange } from '../../core/keys.js';
import { jsonValueProblem } from '../../core/values.js';
import { pageKeys } from '../names.js';
import type { Store } from '../../storage/db.js';


const LOCAL_LIMITS = { idBytesMax: 512, bodyBytesMax: 1024 * 1024, depthMax: 64 } as const;

const key = (db: string, id: string) => encodeKey(['repl.local', db, id]);

interface Stored {
  readonly r: number;
  readonly b: Record<string, unknown>;
}

export function checkLocalId(id: unknown): string {
  if (typeof id !== 'string' || id === '' || Buffer.byteLength(id) > LOCAL_LIMITS.idBytesMax) {
    throw new FirkinError('bad_request', `local document id must be 1 to ${LOCAL_LIMITS.idBytesMax} bytes`);
  }
  return id;
}

/** A local document's `_rev` (`0-<n>`) as its number; undefined when none is given; 400 when malformed. */
export function parseLocalRev(raw: unknown): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  const m = typeof raw === 'string' ? /^0-(\d{1,15})$/.exec(raw) : null;
  if (m === null) throw new FirkinError('bad_request', `_rev of a local document looks like 0-<n>, got ${JSON.stringify(raw)}`);
  return Number(m[1]);
}

/** Whether `value` is a local document as stored (a split's or merge's carry comes from another node). */
export function isStoredLocal(value: Uint8Array): boolean {
  try {
    const s = decodeCbor(value) as Partial<Stored> | null;
    return typeof s === 'object' && s !== null && Number.isSafeInteger(s.r) && typeof s.b === 'object' && s.b !== null && !Array.isArray(s.b);
  } catch {
    return false;
  }
}

/** A stored local document as its readers see it. */
export function renderLocal(id: string, stored: Uint8Array): Record<string, unknown> {
  const s = decodeCbor(stored) as Stored;
  return { ...s.b, _id: `_local/${id}`, _rev: `0-${s.r}` };
}

/**
 * A write of `_local/<id>` over what is stored (`current`): the value to store and its
 * revision, or a conflict. `rev` (from `?rev=`, else the body's `_rev`) must name the current
 * revision when one exists; `force` skips the check (the replicator owns its checkpoint ids).
 * Pure: a replicated VDB shard decides it at the same log index on every replica.
 */
export function localWrite(id: string, current: Uint8Array | undefined, body: unknown, options: { rev?: unknown; force?: boolean } = {}): { value: Buffer; rev: string } {
  checkLocalId(id);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new FirkinError('bad_request', 'a local document must be a JSON object');
  const raw = body as Record<string, unknown>;
  const given = parseLocalRev(options.rev ?? raw._rev);
  const currentRev = current === undefined ? undefined : (decodeCbor(current) as Stored).r;
  if (options.force !== true && currentRev !== given) {
    if (!(currentRev === undefined && given === 0)) {
      throw new FirkinError('conflict', `local document update conflict: _local/${id} is at ${currentRev === undefined ? 'no revision' : `0-${currentRev}`}`);
    }
  }
  const stored: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (!k.startsWith('_')) stored[k] = v;
  // Encoding is recursive: a body nested thousands deep would overflow the stack (a 500).
  const problem = jsonValueProblem(stored, LOCAL_LIMITS.depthMax, 'local document');
  if (problem !== undefined) throw new FirkinError('bad_request', problem);
  const value = encodeCbor({ r: (currentRev ?? 0) + 1, b: stored });
  if (value.length > LOCAL_LIMITS.bodyBytesMax) throw new FirkinError('too_large', `a local document may hold at most ${LOCAL_LIMITS.bodyBytesMax} bytes`);
  return { value, rev: `0-${(currentRev ?? 0) + 1}` };
}

/** A delete of `_local/<id>` over what is stored: refused when missing, or when `rev` names another revision. */
export function localDelete(id: string, current: Uint8Array | undefined, rev: unknown): void {
  checkLocalId(id);
  if (current === undefined) throw new FirkinError('not_found', `local document _local/${id} not found`);
  const given = parseLocalRev(rev);
  const currentRev = (decodeCbor(current) as Stored).r;
  if (given !== undefined && given !== currentRev) throw new FirkinError('conflict', `local document update conflict: _local/${id} is at 0-${currentRev}`);
}

/** `_local_docs` lists at most this many documents (they are checkpoints: a database holds few). */
export const LOCAL_DOCS_LIST_MAX = 100_000;

/** A row of `_local_docs`: CouchDB's `_all_docs` row over the full ids (`_local/<id>`). */
export interface LocalDocsRow {
  readonly id?: string;
  readonly key: string;
  readonly value?: { readonly rev: string };
  readonly doc?: Record<string, unknown>;
  readonly error?: 'not_found';
}

/**
 * CouchDB's `_local_docs` over stored local documents (`[id, value]`, any order): by `keys`
 * (full ids, in their order; a missing one `not_found`), else the range, skip and limit of
 * `_all_docs` over the full ids (`pageKeys`). Pure.
 */
export function localDocsRows(
  stored: Iterable<readonly [string, Uint8Array]>,
  range: { startkey?: string; endkey?: string; inclusiveEnd: boolean; limit?: number; skip: number; descending: boolean; includeDocs: boolean },
  keys?: readonly string[],
): LocalDocsRow[] {
  const row = (id: string, value: Uint8Array): LocalDocsRow => {
    const doc = renderLocal(id, value);
    return { id: `_local/${id}`, key: `_local/${id}`, value: { rev: doc._rev as string }, ...(range.includeDocs ? { doc } : {}) };
  };
  const byId = new Map<string, Uint8Array>();
  for (const [id, value] of stored) byId.set(id, value);
  if (keys !== undefined) {
    return keys.map((key) => {
      const value = key.startsWith('_local/') ? byId.get(key.slice('_local/'.length)) : undefined;
      return value === undefined ? { key, error: 'not_found' as const } : row(key.slice('_local/'.length), value);
    });
  }
  return pageKeys([...byId.keys()].map((id) => `_local/${id}`), range).map((full) => row(full.slice('_local/'.length), byId.get(full.slice('_local/'.length))!));
}

/** Add what `source` yields to `into`, refused (413) past LOCAL_DOCS_LIST_MAX in all. */
export async function collectLocals(source: AsyncIterable<readonly [string, Uint8Array]> | Iterable<readonly [string, Uint8Array]>, into: [string, Uint8Array][] = []): Promise<[string, Uint8Array][]> {
  for await (const [id, value] of source) {
    if (into.length >= LOCAL_DOCS_LIST_MAX) throw new FirkinError('too_large', `_local_docs lists at most ${LOCAL_DOCS_LIST_MAX} local documents; read one by its id (GET _local/<id>)`);
    into.push([id, value]);
  }
  return into;
}

export class LocalDocs {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  async get(db: string, id: string): Promise<Record<string, unknown> | undefined> {
    const buf = await this.#store.get('system', key(db, checkLocalId(id)));
    return buf === undefined ? undefined : renderLocal(id, buf);
  }

  /** Write a local document (`localWrite` says how `rev` and `force` are checked). */
  async put(db: string, id: string, body: unknown, options: { rev?: unknown; force?: boolean } = {}): Promise<{ ok: true; id: string; rev: string }> {
    checkLocalId(id);
    const { value, rev } = localWrite(id, await this.#store.get('system', key(db, id)), body, options);
    // Not synced: a lost checkpoint only makes the next run start earlier, and `_revs_diff`
    // keeps that from writing anything twice. A process crash loses nothing (the WAL is written).
    await this.#store.put('system', key(db, id), value, { sync: false });
    return { ok: true, id: `_local/${id}`, rev };
  }

  async delete(db: string, id: string, rev: unknown): Promise<{ ok: true; id: string; rev: string }> {
    checkLocalId(id);
    localDelete(id, await this.#store.get('system', key(db, id)), rev);
    await this.#store.del('system', key(db, id), { sync: true });
    return { ok: true, id: `_local/${id}`, rev: '0-0' };
  }

  /** Every local document of `db` as stored, `[id, value]` in id order: what a VDB split or merge carries verbatim. */
  async *stored(db: string): AsyncGenerator<[string, Buffer]> {
    for await (const [k, v] of this.#store.entries('system', prefixRange(['repl.local', db]))) yield [decodeKey(k)[2] as string, v];
  }

  /** Put stored values as they are (their revisions kept) and remove `drop`, in one synced write. */
  async writeStored(db: string, put: readonly (readonly [string, Buffer])[], drop: readonly string[] = []): Promise<void> {
    if (put.length === 0 && drop.length === 0) return;
    await this.#store.batch([...put.map(([id, value]) => ({ type: 'put' as const, cf: 'system' as const, key: key(db, id), value })), ...drop.map((id) => ({ type: 'del' as const, cf: 'system' as const, key: key(db, id) }))], { sync: true });
  }

  /** Called when a database is dropped. */
  async dropDb(db: string): Promise<void> {
    await this.#store.clearRange('system', prefixRange(['repl.local', db]));
  }
}
