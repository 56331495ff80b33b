// The state machine of one replication task. Pure: time and randomness come in.
//
//   active ──failure──▶ error(attempt n, retry at t) ──retry──▶ active
//     │  ▲                    │
//     │  └──── success ───────┘ (attempt counter resets on the next successful batch)
//     ├──one-shot done──▶ completed
//     └──stop (any state)──▶ stopped ──start──▶ active
import type { Rand } from '../../core/rand.js';
import { type Backoff, jitteredDelayMs } from '../../core/backoff.js';

export const TASK_STATUSES = ['active', 'error', 'stopped', 'completed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export type TaskState =
  | { readonly kind: 'active' }
  | { readonly kind: 'error'; readonly attempt: number; readonly error: string; readonly retryAtMs: number }
  | { readonly kind: 'stopped'; readonly lastError: string | undefined }
  | { readonly kind: 'completed' };

export type TaskEvent =
  | { readonly kind: 'failure'; readonly error: string; readonly nowMs: number }
  | { readonly kind: 'retry' }
  | { readonly kind: 'progress' }
  | { readonly kind: 'done' }
  | { readonly kind: 'stop' }
  | { readonly kind: 'start' };

/** `failures` counts consecutive failures; it survives the error -> active retry and resets on progress. */
export interface TaskMachine {
  readonly state: TaskState;
  readonly failures: number;
}

export const INITIAL: TaskMachine = { state: { kind: 'active' }, failures: 0 };

/**
 * Retry delays of a failing task: 1 s doubling to 60 s, equal jitter (tasks that failed
 * together, e.g. when a remote went down, do not retry together). Settings may override.
 */
export const REPLICATION_BACKOFF: Backoff = { baseMs: 1_000, capMs: 60_000 };

export function step(m: TaskMachine, event: TaskEvent, rand: Rand, backoff: Backoff = REPLICATION_BACKOFF): TaskMachine {
  const s = m.state;
  switch (event.kind) {
    case 'failure': {
      if (s.kind !== 'active') return m;
      const attempt = m.failures + 1;
      return { state: { kind: 'error', attempt, error: event.error, retryAtMs: event.nowMs + jitteredDelayMs(attempt, backoff, rand) }, failures: attempt };
    }
    case 'retry':
      return s.kind === 'error' ? { state: { kind: 'active' }, failures: m.failures } : m;
    case 'progress':
      return s.kind === 'active' ? { state: s, failures: 0 } : m;
    case 'done':
      return s.kind === 'active' ? { state: { kind: 'completed' }, failures: 0 } : m;
    case 'stop':
      return s.kind === 'stopped' ? m : { state: { kind: 'stopped', lastError: s.kind === 'error' ? s.error : undefined }, failures: m.failures };
    case 'start':
      return s.kind === 'stopped' || s.kind === 'completed' ? { state: { kind: 'active' }, failures: 0 } : m;
  }
}

export function lastError(state: TaskState): string | null {
  if (state.kind === 'error') return state.error;
  if (state.kind === 'stopped') return state.lastError ?? null;
  return null;
}
