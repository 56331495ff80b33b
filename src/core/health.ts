// The shape of /health, shared by every subsystem that reports into it (engines, the gateway,
// the cluster) without depending on the HTTP layer that serves it.

export type HealthState = 'ok' | 'degraded' | 'failing';

export interface HealthReport {
  status: HealthState;
  /** What is wrong, in words an operator can act on. */
  problems?: string[];
  [detail: string]: unknown;
}

/** Each subsystem reports its own part of /health. */
export type HealthCheck = () => HealthReport | Promise<HealthReport>;
