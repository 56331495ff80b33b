import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { type Load, useAction } from './hooks.js';
import { type PageView, pageOf } from './paging.js';
import { rowWindow } from './windowing.js';

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
  const tone = status === 'ok' || status === 'up' || status === 'active' || status === 'completed' ? 'green' : status === 'degraded' || status === 'suspect' || status === 'leaving' || status === 'stopped' ? 'amber' : 'red';
  return (
    <span class={`dot ${tone}`} role="img" aria-label={label ?? status}>
      ●
    </span>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** A bar for a known fraction (0..1), or an indeterminate one (null): the step is known, how far it got is not. */
export function ProgressBar({ label, fraction, text, tone = 'ok' }: { label: string; fraction: number | null; text: string; tone?: 'ok' | 'warn' | 'full' }) {
  const percent = fraction === null ? null : Math.round(fraction * 100);
  return (
    <div class="progress-row">
      <div
        class={`bar ${tone}${percent === null ? ' indeterminate' : ''}`}
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent ?? undefined}
        aria-valuetext={text}
      >
        <span style={{ width: `${percent ?? 100}%` }} />
      </div>
      <span class="bar-text">{text}</span>
    </div>
  );
}

const PAGE_ROWS_DEFAULT = 10;

/** Browser-side paging of a list the node answers whole; the page is kept across reloads of the list. */
export function usePaged<T>(items: readonly T[], pageSize = PAGE_ROWS_DEFAULT): [PageView<T>, (page: number) => void] {
  const [requested, setRequested] = useState(0);
  return [pageOf(items, requested, pageSize), setRequested];
}

/** Nothing for a list that fits one page. */
export function Pager<T>({ view, total, onPage, label }: { view: PageView<T>; total: number; onPage: (page: number) => void; label: string }) {
  if (view.pageCount <= 1) return null;
  const first = total === 0 ? 0 : view.offset + 1;
  return (
    <nav class="row pager" aria-label={`${label} pages`}>
      <button type="button" disabled={view.page === 0} onClick={() => onPage(view.page - 1)}>Previous page</button>
      <span role="status">Page {view.page + 1} of {view.pageCount} ({first}–{view.offset + view.rows.length} of {total})</span>
      <button type="button" disabled={view.page >= view.pageCount - 1} onClick={() => onPage(view.page + 1)}>Next page</button>
    </nav>
  );
}

/** An action asked twice: the first click names what will happen, the second does it. */
export function ConfirmButton({
  label,
  ariaLabel,
  question,
  confirmLabel,
  danger = false,
  onConfirm,
  onDone,
}: {
  label: string;
  ariaLabel: string;
  question: string;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<unknown>;
  onDone: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const { busy, error, clearError, run: runAction } = useAction();
  if (!confirming) {
    return <button type="button" class={danger ? 'danger' : undefined} onClick={() => setConfirming(true)} aria-label={ariaLabel}>{label}</button>;
  }
  const run = () =>
    runAction(onConfirm, () => {
      setConfirming(false);
      onDone();
    });
  return (
    <span class="confirm" role="group" aria-label={`Confirm: ${question}`}>
      {question}{' '}
      <button type="button" class={danger ? 'danger' : undefined} disabled={busy} onClick={run}>{confirmLabel}</button>{' '}
      <button type="button" onClick={() => { setConfirming(false); clearError(); }}>Cancel</button>
      {error !== null && <ErrorBox message={error} />}
    </span>
  );
}

// Rows rendered beyond each edge of the viewport.
const OVERSCAN_ROWS = 6;

interface VirtualProps<T> {
  items: readonly T[];
  /** Fixed row height: the CSS of the row must not make it taller (rows do not wrap). */
  rowPx: number;
  heightPx: number;
  label: string;
}

function useWindow(count: number, rowPx: number, heightPx: number) {
  const [scrollTopPx, setScrollTopPx] = useState(0);
  const w = rowWindow({ count, rowPx, viewportPx: heightPx, scrollTopPx, overscanRows: OVERSCAN_ROWS });
  const onScroll = (e: JSX.TargetedEvent<HTMLElement, Event>) => setScrollTopPx(e.currentTarget.scrollTop);
  return { w, onScroll };
}

/** A long list with only the rows in view rendered; the list itself scrolls (and takes focus to scroll by keyboard). */
export function VirtualList<T>({ items, rowPx, heightPx, label, row }: VirtualProps<T> & { row: (item: T, index: number) => { key: string; attrs?: Record<string, string>; content: ComponentChildren } }) {
  const { w, onScroll } = useWindow(items.length, rowPx, heightPx);
  return (
    <ol
      class="vlist"
      aria-label={label}
      tabIndex={0}
      onScroll={onScroll}
      style={{ maxHeight: `${heightPx}px`, paddingTop: `${w.padTopPx}px`, paddingBottom: `${w.padBottomPx}px` }}
    >
      {items.slice(w.start, w.end).map((item, i) => {
        const r = row(item, w.start + i);
        return (
          <li key={r.key} {...r.attrs} aria-setsize={items.length} aria-posinset={w.start + i + 1} style={{ height: `${rowPx}px` }}>
            {r.content}
          </li>
        );
      })}
    </ol>
  );
}

/** A long table with only the rows in view rendered, between two spacer rows. */
export function VirtualTable<T>({ items, rowPx, heightPx, label, head, row }: VirtualProps<T> & { head: string[]; row: (item: T, index: number) => { key: string; cells: ComponentChildren[] } }) {
  const { w, onScroll } = useWindow(items.length, rowPx, heightPx);
  const spacer = (px: number) =>
    px > 0 && (
      <tr aria-hidden="true" class="spacer">
        <td colSpan={head.length} style={{ height: `${px}px` }} />
      </tr>
    );
  return (
    <div class="vscroll" tabIndex={0} role="region" aria-label={`${label} (scrolls)`} onScroll={onScroll} style={{ maxHeight: `${heightPx}px` }}>
      <table class="vtable" aria-label={label} aria-rowcount={items.length + 1}>
        <thead>
          <tr aria-rowindex={1}>{head.map((h) => <th>{h}</th>)}</tr>
        </thead>
        <tbody>
          {spacer(w.padTopPx)}
          {items.slice(w.start, w.end).map((item, i) => {
            const r = row(item, w.start + i);
            return (
              <tr key={r.key} aria-rowindex={w.start + i + 2} style={{ height: `${rowPx}px` }}>
                {r.cells.map((c) => <td>{c}</td>)}
              </tr>
            );
          })}
          {spacer(w.padBottomPx)}
        </tbody>
      </table>
    </div>
  );
}
