// Checker of the `keys` workload (metadata through consensus): API keys created, revoked and
// used on every node while faults run. Pure: a recorded history in, anomalies out.
//
// Rules (what the cluster promises; docs/cluster.md):
// - revoked-accepted: once a revoke of K was acknowledged, no request invoked after that
//   acknowledgement may authenticate with K, on any node;
// - phantom-accepted: a key nobody created never authenticates;
// - lost-key: a key whose creation was acknowledged, and that nobody tried to revoke, works on
//   every node at the end (after healing and convergence);
// - revoked-present: a key whose revoke was acknowledged does not work at the end.
// Operations whose outcome is unknown (timeouts, 503 that "may still commit") may go either way.

import { type KeyOp, type OutcomeCounts, countOutcomes } from './history.js';

export type { KeyOp, Outcome } from './history.js';

export interface KeyAnomaly {
  readonly type: 'revoked-accepted' | 'phantom-accepted' | 'lost-key' | 'revoked-present' | 'final-unavailable';
  readonly keyId: string;
  readonly node: string;
  readonly detail: string;
}

export interface KeyCheck {
  readonly anomalies: KeyAnomaly[];
  readonly counts: OutcomeCounts;
}

export function checkKeys(history: readonly KeyOp[]): KeyCheck {
  const anomalies: KeyAnomaly[] = [];
  const counts = countOutcomes(history.filter((op): op is Exclude<KeyOp, { kind: 'final' }> => op.kind !== 'final'));
  const revokeAckMs = new Map<string, number>(); // earliest acknowledged revoke per key
  const revokeTried = new Set<string>();
  const createdOk = new Set<string>();
  for (const op of history) {
    if (op.kind === 'final') continue;
    if (op.kind === 'create' && op.outcome === 'ok' && op.keyId !== undefined) createdOk.add(op.keyId);
    if (op.kind === 'revoke') {
      revokeTried.add(op.keyId);
      if (op.outcome === 'ok') revokeAckMs.set(op.keyId, Math.min(revokeAckMs.get(op.keyId) ?? Infinity, op.completeMs));
    }
  }
  for (const op of history) {
    if (op.kind === 'check' && op.result === 'valid') {
      if (op.phantom) {
        anomalies.push({ type: 'phantom-accepted', keyId: op.keyId, node: op.node, detail: `a key nobody created authenticated at ${op.invokeMs} ms` });
        continue;
      }
      const ack = revokeAckMs.get(op.keyId);
      if (ack !== undefined && op.invokeMs > ack) {
        anomalies.push({ type: 'revoked-accepted', keyId: op.keyId, node: op.node, detail: `authenticated at ${op.invokeMs} ms, ${op.invokeMs - ack} ms after its revoke was acknowledged` });
      }
    }
    if (op.kind === 'final') {
      if (op.result === 'unavailable') {
        anomalies.push({ type: 'final-unavailable', keyId: op.keyId, node: op.node, detail: 'after healing and convergence the node still could not check keys' });
      } else if (revokeAckMs.has(op.keyId) && op.result === 'valid') {
        anomalies.push({ type: 'revoked-present', keyId: op.keyId, node: op.node, detail: 'a key whose revoke was acknowledged still works at the end' });
      } else if (createdOk.has(op.keyId) && !revokeTried.has(op.keyId) && op.result === 'invalid') {
        anomalies.push({ type: 'lost-key', keyId: op.keyId, node: op.node, detail: 'an acknowledged key, never revoked, does not work at the end' });
      }
    }
  }
  return { anomalies, counts };
}
