// The shape of /health, shared by every subsystem that reports into it (engines, the gateway,
// the cluster) without depending on the HTTP layer that serves it.

export type HealthState = 'ok' | 'degraded' | 'failing';

export interface HealthReport {
  status: HealthState;
  /** What is wrong, in words an operator can act on. */
  problems?: string[];
  [detail: string]: unknown;
}

/**
 * Who asks for /health. The route is open (load balancers call it without a key), so a part
 * that names databases lists only those the caller's key may read: none without a key.
 */
export interface HealthViewer {
  mayRead(db: string): boolean;
  /** Whether the caller presented an admin key (or auth is off): it may see where the data lives. */
  readonly admin: boolean;
}

/** Each subsystem reports its own part of /health. */
export type HealthCheck = (viewer: HealthViewer) => HealthReport | Promise<HealthReport>;

const SEVERITY: Record<HealthState, number> = { ok: 0, degraded: 1, failing: 2 };

/** The worse of two states. */
export function worseHealth(a: HealthState, b: HealthState): HealthState {
  return SEVERITY[b] > SEVERITY[a] ? b : a;
}

/** One report for several parts of a subsystem: the worst status, the problems of each. */
export function mergeHealth(parts: readonly (HealthReport | undefined)[]): HealthReport {
  let status: HealthState = 'ok';
  const problems: string[] = [];
  for (const p of parts) {
    if (p === undefined) continue;
    status = worseHealth(status, p.status);
    problems.push(...(p.problems ?? []));
  }
  return problems.length > 0 ? { status, problems } : { status };
}
