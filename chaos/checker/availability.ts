// Availability figures of a run: how many operations succeeded while each kind of fault was
// active and while none was, and the windows in which no write succeeded (failover and
// unavailability). Pure: the history and the fault windows in, figures out. These are
// measurements, not anomalies: unavailability under faults is allowed.
import type { Outcome } from './history.js';
import type { NemesisKind, ScheduledEvent } from '../nemesis/schedule.js';

/** A fault active over [startMs, endMs), in ms from the workload's start. */
export interface FaultWindow {
  readonly kind: NemesisKind;
  readonly startMs: number;
  readonly endMs: number;
}

/** The operations these figures read (every workload's timed ops fit); an op is served when `ok` or `absent`. */
export interface TimedOp {
  readonly kind: string;
  readonly invokeMs: number;
  readonly completeMs: number;
  readonly outcome: Outcome;
  /** A `fail` the service answered by the workload's own rule (a set delete of an absent element, a revoke of a revoked key): served, not refused. */
  readonly absent?: boolean;
}

export interface Share {
  readonly ok: number;
  readonly total: number;
  /** ok / total; null when there was no operation. */
  readonly share: number | null;
}

export interface Gap {
  readonly startMs: number;
  readonly endMs: number;
  readonly ms: number;
  /** Kinds of the faults active at some point of the gap. */
  readonly faults: readonly NemesisKind[];
}

export interface Availability {
  /** Operations invoked outside every fault window. */
  readonly calm: Share;
  /** Per fault kind: operations invoked inside a window of that kind. */
  readonly duringFaults: Partial<Record<NemesisKind, Share>>;
  /** The longest time without an acknowledged write (from the start, between two, or to the end). */
  readonly longestGap: Gap;
  /** Every gap of at least `gapMsMin`, in order. */
  readonly gaps: readonly Gap[];
}

export interface AvailabilityOptions {
  /** Operation kinds that are writes (e.g. create, revoke; write, cas; add, delete). */
  readonly writeKinds: readonly string[];
  /** The span the gaps are measured over: the workload's start and end. */
  readonly startMs: number;
  readonly endMs: number;
  /** Gaps shorter than this are not listed (the longest always is). */
  readonly gapMsMin: number;
}

/** The planned fault windows of a schedule: each fault from its first event to its heal. */
export function faultWindows(events: readonly ScheduledEvent[]): FaultWindow[] {
  const byFault = new Map<number, { kind: NemesisKind; startMs: number; endMs: number }>();
  for (const e of events) {
    const w = byFault.get(e.fault);
    if (w === undefined) byFault.set(e.fault, { kind: e.kind, startMs: e.atMs, endMs: e.atMs });
    else {
      w.startMs = Math.min(w.startMs, e.atMs);
      w.endMs = Math.max(w.endMs, e.atMs);
    }
  }
  return [...byFault.values()].sort((a, b) => a.startMs - b.startMs);
}

export function availability(history: readonly TimedOp[], windows: readonly FaultWindow[], o: AvailabilityOptions): Availability {
  if (!(o.endMs >= o.startMs)) throw new Error(`availability: endMs (${o.endMs}) before startMs (${o.startMs})`);
  const inside = (op: TimedOp, w: FaultWindow) => op.invokeMs >= w.startMs && op.invokeMs < w.endMs;
  const share = (ops: readonly TimedOp[]): Share => {
    const ok = ops.filter((op) => op.outcome === 'ok' || op.absent === true).length;
    return { ok, total: ops.length, share: ops.length === 0 ? null : ok / ops.length };
  };
  const duringFaults: Partial<Record<NemesisKind, Share>> = {};
  for (const kind of new Set(windows.map((w) => w.kind))) {
    const ws = windows.filter((w) => w.kind === kind);
    duringFaults[kind] = share(history.filter((op) => ws.some((w) => inside(op, w))));
  }
  const calm = share(history.filter((op) => !windows.some((w) => inside(op, w))));

  // Gaps between acknowledged writes, by completion (when the client learned of it).
  const writes = new Set(o.writeKinds);
  const points = history
    .filter((op) => writes.has(op.kind) && op.outcome === 'ok' && op.completeMs >= o.startMs && op.completeMs <= o.endMs)
    .map((op) => op.completeMs)
    .sort((a, b) => a - b);
  const edges = [o.startMs, ...points, o.endMs];
  const gap = (startMs: number, endMs: number): Gap => ({
    startMs,
    endMs,
    ms: endMs - startMs,
    faults: [...new Set(windows.filter((w) => w.startMs < endMs && w.endMs > startMs).map((w) => w.kind))],
  });
  let longestGap = gap(o.startMs, o.startMs);
  const gaps: Gap[] = [];
  for (let i = 1; i < edges.length; i++) {
    const ms = edges[i]! - edges[i - 1]!;
    if (ms > longestGap.ms) longestGap = gap(edges[i - 1]!, edges[i]!);
    if (ms >= o.gapMsMin && ms > 0) gaps.push(gap(edges[i - 1]!, edges[i]!));
  }
  return { calm, duringFaults, longestGap, gaps };
}
