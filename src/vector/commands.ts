// Shard commands: the one form a write takes on its way into a shard, standalone or through a
// shard's Raft log. Everything nondeterministic is decided before a command exists: ids are
// chosen, vectors embedded (an embedder runs once, before proposing, never at apply), so
// every replica that applies the same commands in the same order holds the same data.
//
// The codec is CBOR (vectors as float32 little-endian bytes) with a shape check on decode: a
// log entry from another node is input like any other.
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { FirkinError } from '../core/errors.js';
import type { DocInput } from './shard.js';
import { isPlainObject } from '../core/values.js';

/**
 * `rid`: a request id chosen once by the router of a replicated write, the same on every retry
 * of it. A retry may reach a new leader after the first attempt already committed; the shard
 * applies a request id once (`Shard.apply`), so a retry can never undo a later write.
 */
export type ShardCommand =
  | { readonly kind: 'upsert'; readonly docs: readonly DocInput[]; readonly rid?: string }
  | { readonly kind: 'delete'; readonly ids: readonly string[]; readonly rid?: string };

/** Longest request id a command may carry. */
export const REQUEST_ID_CHARS_MAX = 64;

/** What applying a command did: for a delete, which ids were there to delete. */
export type ApplyOutcome = { readonly kind: 'upsert'; readonly written: number } | { readonly kind: 'delete'; readonly deleted: readonly boolean[] };

/**
 * The other entries a shard's log carries: the fence a reshard puts in each old shard before
 * it switches the collection to the new ones (every write after it is refused, `fenced`, on
 * every replica alike, so nothing lands in a shard the collection is leaving), and the lift
 * that ends a fence when the switch is rolled back (`fence.ts`). Both name the switch attempt;
 * `FENCE_ENTRY`, the fence of the builds before lifts (cluster protocol 7), is attempt 0.
 */
export const FENCE_ENTRY = encodeCbor({ k: 'f' });
export type { FenceOutcome, LiftOutcome } from './fence.js';

export const fenceEntry = (attempt: number): Buffer => encodeCbor({ k: 'f', n: attempt });
export const liftEntry = (attempt: number): Buffer => encodeCbor({ k: 'lift', n: attempt });

export type FenceEntry = { readonly kind: 'fence'; readonly attempt: number } | { readonly kind: 'lift'; readonly attempt: number };

/** A log entry of a vector shard: a command, a fence or a lift. */
export function decodeShardEntry(bytes: Uint8Array): ShardCommand | FenceEntry {
  if (bytes.length === FENCE_ENTRY.length && Buffer.compare(Buffer.from(bytes), FENCE_ENTRY) === 0) return { kind: 'fence', attempt: 0 };
  // Fences and lifts are a few bytes; a command is never that short.
  if (bytes.length <= 32) {
    let raw: unknown;
    try {
      raw = decodeCbor(bytes);
    } catch {
      raw = undefined;
    }
    if (isPlainObject(raw) && (raw.k === 'f' || raw.k === 'lift')) {
      if (!Number.isSafeInteger(raw.n) || (raw.n as number) < 0) throw corrupt('a fence without its attempt');
      return { kind: raw.k === 'f' ? 'fence' : 'lift', attempt: raw.n as number };
    }
  }
  return decodeShardCommand(bytes);
}

interface WireDoc {
  i: string;
  t: string;
  m: Record<string, unknown>;
  v: Uint8Array;
}

export function encodeShardCommand(command: ShardCommand): Buffer {
  const r = command.rid === undefined ? {} : { r: command.rid };
  if (command.kind === 'delete') return encodeCbor({ k: 'd', ids: command.ids, ...r });
  const docs: WireDoc[] = command.docs.map((d) => ({ i: d.id, t: d.text, m: d.metadata, v: new Uint8Array(d.vector.buffer, d.vector.byteOffset, d.vector.byteLength) }));
  return encodeCbor({ k: 'u', docs, ...r });
}


function corrupt(why: string): FirkinError {
  return new FirkinError('error', `shard command does not decode: ${why}`);
}

export function decodeShardCommand(bytes: Uint8Array): ShardCommand {
  let raw: unknown;
  try {
    raw = decodeCbor(bytes);
  } catch (err) {
    throw corrupt((err as Error).message);
  }
  if (!isPlainObject(raw)) throw corrupt('not a map');
  if (raw.r !== undefined && (typeof raw.r !== 'string' || raw.r.length === 0 || raw.r.length > REQUEST_ID_CHARS_MAX)) throw corrupt('bad request id');
  const r = raw.r === undefined ? {} : { rid: raw.r };
  if (raw.k === 'd') {
    if (!Array.isArray(raw.ids) || !raw.ids.every((id) => typeof id === 'string')) throw corrupt('delete without a list of ids');
    return { kind: 'delete', ids: raw.ids as string[], ...r };
  }
  if (raw.k !== 'u' || !Array.isArray(raw.docs)) throw corrupt(`unknown kind ${JSON.stringify(raw.k)}`);
  const docs = raw.docs.map((d: unknown, n: number): DocInput => {
    if (!isPlainObject(d) || typeof d.i !== 'string' || typeof d.t !== 'string' || !isPlainObject(d.m) || !(d.v instanceof Uint8Array) || d.v.byteLength % 4 !== 0) {
      throw corrupt(`document ${n} has the wrong shape`);
    }
    // Copy: the decoded bytes may sit at an offset that is not 4-aligned.
    const copy = new Uint8Array(d.v.byteLength);
    copy.set(d.v);
    return { id: d.i, text: d.t, metadata: d.m, vector: new Float32Array(copy.buffer) };
  });
  return { kind: 'upsert', docs, ...r };
}

/**
 * Replayed commands (a reshard's tail of an old shard's log) split by the new shard each
 * document routes to (`shardOf`), each shard's part in log order. A command whose documents
 * land in several shards becomes one command per shard, all with its request id (`newRid`
 * chooses one when it had none), so each part applies once. Each shard taking its part in this
 * order, every document gets its writes in the order the log had them.
 */
export function splitCommands(commands: readonly ShardCommand[], shardOf: (id: string) => number, newRid: () => string): Map<number, ShardCommand[]> {
  const out = new Map<number, ShardCommand[]>();
  for (const command of commands) {
    const rid = command.rid ?? newRid();
    const parts = new Map<number, string[] | DocInput[]>();
    if (command.kind === 'upsert') {
      for (const d of command.docs) {
        const t = shardOf(d.id);
        const part = (parts.get(t) as DocInput[] | undefined) ?? [];
        part.push(d);
        parts.set(t, part);
      }
    } else {
      for (const id of command.ids) {
        const t = shardOf(id);
        const part = (parts.get(t) as string[] | undefined) ?? [];
        part.push(id);
        parts.set(t, part);
      }
    }
    for (const [t, part] of parts) {
      const sub: ShardCommand = command.kind === 'upsert' ? { kind: 'upsert', docs: part as DocInput[], rid } : { kind: 'delete', ids: part as string[], rid };
      const list = out.get(t) ?? [];
      list.push(sub);
      out.set(t, list);
    }
  }
  return out;
}

/** A replay's commands travel to a new group's leader in runs of at most this many, and about this many bytes. */
export const REPLAY_RUN = { count: 256, bytes: 512 * 1024 } as const;

/** Encoded commands in runs of at most `maxCount` and about `maxBytes` (a larger command alone), in order. */
export function commandRuns(encoded: readonly Uint8Array[], maxCount: number, maxBytes: number): Uint8Array[][] {
  const runs: Uint8Array[][] = [];
  let run: Uint8Array[] = [];
  let bytes = 0;
  for (const c of encoded) {
    if (run.length > 0 && (run.length >= maxCount || bytes + c.byteLength > maxBytes)) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(c);
    bytes += c.byteLength;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}
