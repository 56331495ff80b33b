// Whether a cluster call left this node, apart from the gRPC transport that makes them: code
// that only asks (shard hosts, the member) must not load gRPC, which a standalone node never
// starts (cluster/member.ts imports the transport when a cluster starts).
import { FirkinError, isFirkinError } from '../core/errors.js';
import type { NodeId } from '../raft/types.js';

/** A call that never left this node: the caller may safely try again (elsewhere). */
export function notSent(peer: NodeId, why: string): FirkinError {
  return new FirkinError('unavailable', `call not sent to ${peer}: ${why}`, { details: { sent: false } });
}

export function wasNotSent(err: unknown): boolean {
  return isFirkinError(err) && err.code === 'unavailable' && err.details?.sent === false;
}
