// The failure detector's decisions, pure: from when each peer was last heard (the transport's
// node heartbeats) to the status changes the metadata leader should propose.
//
// - `suspect` after `suspectAfterMs` of silence, `down` after `downAfterMs`;
// - back to `up` only after being heard continuously for `recoverAfterMs` (hysteresis), and a
//   node flips between `up` and `suspect` at most once per `minDwellMs`, so a flapping link
//   does not flood the log; `down` is never delayed.
// - A leader that just took over has heard nobody yet: silence is counted from when it started
//   watching, so it does not declare everybody down at once; likewise for a node that just joined.
import type { HealthStatus, NodeRecord } from './meta-state.js';

export interface DetectorOptions {
  readonly suspectAfterMs: number;
  readonly downAfterMs: number;
  readonly recoverAfterMs: number;
  readonly minDwellMs: number;
}

export const DEFAULT_DETECTOR: DetectorOptions = { suspectAfterMs: 1_500, downAfterMs: 4_000, recoverAfterMs: 1_000, minDwellMs: 3_000 };

/** What the leader has observed of one peer. */
export interface Observation {
  /** Last frame received (ms), if any since watching began. */
  readonly lastSeenMs: number | undefined;
  /** Start of the current unbroken run of being heard (undefined while silent). */
  readonly aliveSinceMs: number | undefined;
}

/** Fold one sample into the observation (called on every detector round). */
export function observe(prev: Observation | undefined, lastSeenMs: number | undefined, nowMs: number, o: DetectorOptions): Observation {
  const heard = lastSeenMs !== undefined && nowMs - lastSeenMs < o.suspectAfterMs;
  const aliveSinceMs = heard ? (prev?.aliveSinceMs ?? lastSeenMs) : undefined;
  return { lastSeenMs, aliveSinceMs };
}

export function healthOf(node: NodeRecord, obs: Observation | undefined, nowMs: number, watchingSinceMs: number, o: DetectorOptions): HealthStatus {
  const current = node.status === 'up' || node.status === 'suspect' || node.status === 'down' ? node.status : 'up';
  // Silence counts from the latest of: last heard, start of watching, and (for an up node) when
  // it became up: a node that just joined has not dialled us yet.
  const floorMs = Math.max(watchingSinceMs, current === 'up' ? node.statusSinceMs : 0);
  const heardMs = Math.max(obs?.lastSeenMs ?? floorMs, floorMs);
  const silenceMs = nowMs - heardMs;
  if (silenceMs >= o.downAfterMs) return 'down';
  const dwelt = nowMs - node.statusSinceMs >= o.minDwellMs;
  if (silenceMs >= o.suspectAfterMs) return current === 'up' && !dwelt ? 'up' : current === 'down' ? 'down' : 'suspect';
  if (current === 'up') return 'up';
  const recovered = obs?.aliveSinceMs !== undefined && nowMs - obs.aliveSinceMs >= o.recoverAfterMs;
  if (!recovered) return current;
  return current === 'suspect' && !dwelt ? 'suspect' : 'up';
}

/** Status changes to propose: nodes whose health differs from their recorded status. */
export function statusChanges(
  nodes: readonly NodeRecord[],
  observations: ReadonlyMap<string, Observation>,
  self: string,
  nowMs: number,
  watchingSinceMs: number,
  o: DetectorOptions,
): { name: string; status: HealthStatus }[] {
  const out: { name: string; status: HealthStatus }[] = [];
  for (const node of nodes) {
    if (node.status === 'leaving' || node.status === 'left') continue;
    const status = node.name === self ? 'up' : healthOf(node, observations.get(node.name), nowMs, watchingSinceMs, o);
    if (status !== node.status) out.push({ name: node.name, status });
  }
  return out;
}
