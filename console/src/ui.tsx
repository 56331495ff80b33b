import type { ComponentChildren } from 'preact';
import type { Load } from './hooks.js';

export function Loaded<T>({ load, children }: { load: Load<T>; children: (value: T) => ComponentChildren }) {
  if (load.state === 'loading') return <p class="muted" role="status">Loading…</p>;
  if (load.state === 'error') return <ErrorBox message={load.message} />;
  return <>{children(load.value)}</>;
}

export function ErrorBox({ message }: { message: string }) {
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

export type Health = 'ok' | 'degraded' | 'failing';

export function StatusDot({ status, label }: { status: string; label?: string }) {
  const tone = status === 'ok' || status === 'up' || status === 'active' ? 'green' : status === 'degraded' || status === 'suspect' ? 'amber' : 'red';
  return (
    <span class={`dot ${tone}`} role="img" aria-label={label ?? status}>
      ●
    </span>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}
