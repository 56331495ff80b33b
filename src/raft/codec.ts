// CBOR encoding of Raft values for the raft column family and the wire. Decoding checks the
// shape of what it returns (pair assertion: checked on write by the types, on read here).
import { decodeCbor, encodeCbor } from '../core/codec.js';
import type { Entry, HardState, Message, Snapshot } from './types.js';

const MESSAGE_KINDS = new Set<Message['kind']>([
  'preVote', 'vote', 'preVoteResp', 'voteResp', 'append', 'appendResp', 'heartbeat', 'heartbeatResp', 'snapshot', 'timeoutNow', 'readIndex', 'readIndexResp',
]);

export function encodeValue(value: Message | Entry | HardState | Snapshot | Record<string, unknown>): Buffer {
  return encodeCbor(value);
}

function decodeObject(buf: Uint8Array, what: string): Record<string, unknown> {
  const v = decodeCbor(buf) as unknown;
  if (typeof v !== 'object' || v === null) throw new Error(`raft codec: ${what} is not an object`);
  return v as Record<string, unknown>;
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

export function decodeEntry(buf: Uint8Array): Entry {
  const e = decodeObject(buf, 'entry');
  if (!isNum(e.index) || !isNum(e.term)) throw new Error('raft codec: entry without index/term');
  if (e.kind === 'normal') return { index: e.index, term: e.term, kind: 'normal', data: toBytes(e.data) };
  if (e.kind === 'noop') return { index: e.index, term: e.term, kind: 'noop' };
  if (e.kind === 'conf') return e as unknown as Entry;
  if (e.kind === 'vouch' && typeof e.node === 'string' && typeof e.incarnation === 'string') return { index: e.index, term: e.term, kind: 'vouch', node: e.node, incarnation: e.incarnation };
  throw new Error(`raft codec: unknown entry kind ${String(e.kind)}`);
}

export function decodeHardState(buf: Uint8Array): HardState {
  const h = decodeObject(buf, 'hard state');
  if (!isNum(h.term) || !isNum(h.commit) || !(h.vote === null || typeof h.vote === 'string')) throw new Error('raft codec: bad hard state');
  return { term: h.term, vote: h.vote, commit: h.commit };
}

/** The last compacted entry's {index, term}. */
export function decodeOffset(buf: Uint8Array): { index: number; term: number } {
  const o = decodeObject(buf, 'offset');
  if (!isNum(o.index) || !isNum(o.term)) throw new Error('raft codec: bad offset record');
  return { index: o.index, term: o.term };
}

export function decodeSnapshot(buf: Uint8Array): Snapshot {
  const s = decodeObject(buf, 'snapshot');
  const meta = s.meta as Snapshot['meta'] | undefined;
  if (meta === undefined || !isNum(meta.index) || !isNum(meta.term)) throw new Error('raft codec: bad snapshot');
  return { meta, data: toBytes(s.data) };
}

export function decodeMessage(buf: Uint8Array): Message {
  const m = decodeObject(buf, 'message');
  if (!MESSAGE_KINDS.has(m.kind as Message['kind']) || typeof m.group !== 'string' || typeof m.from !== 'string' || typeof m.to !== 'string' || !isNum(m.term)) {
    throw new Error('raft codec: bad message');
  }
  if (m.kind === 'append') {
    const entries = (m.entries as Record<string, unknown>[]).map((e) => (e.kind === 'normal' ? { ...e, data: toBytes(e.data) } : e));
    return { ...m, entries } as unknown as Message;
  }
  if (m.kind === 'snapshot') {
    const snap = m.snapshot as Record<string, unknown>;
    return { ...m, snapshot: { meta: snap.meta, data: toBytes(snap.data) } } as unknown as Message;
  }
  return m as unknown as Message;
}

function toBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v;
  throw new Error('raft codec: expected bytes');
}
