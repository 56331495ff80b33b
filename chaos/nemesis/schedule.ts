// The fault schedule of a chaos run, drawn from its seed (pure: no clock, no I/O). Each fault
// is a window [atMs, atMs + durationMs): its first event starts it and its heal ends it
// (kill → start, stop → start, pause → resume, leave → rejoin, kill → readd, net → net-heal),
// inside the run's duration.
//
// Rules: a node has at most one process fault at a time; one network nemesis at a time
// (FaultNetwork.apply replaces the last one). With `keepQuorum`, the nodes that are down or
// paused plus the nodes a network nemesis cuts from the majority never exceed ⌊(N−1)/2⌋, so a
// majority of live, connected nodes exists at every instant.
import type { Nemesis } from '../proxy/plan.js';
import type { Rand } from '../../src/core/rand.js';

export const NEMESIS_KINDS = ['kill', 'restart', 'pause', 'kill-during-startup', 'replace', 'remove', 'partition', 'isolate', 'bridge', 'one-way', 'delay', 'throttle'] as const;
export type NemesisKind = (typeof NEMESIS_KINDS)[number];

export function isNemesisKind(value: unknown): value is NemesisKind {
  return (NEMESIS_KINDS as readonly unknown[]).includes(value);
}

export interface RangeMs {
  readonly min: number;
  readonly max: number;
}

export interface ScheduleOptions {
  readonly seed: number;
  readonly nodes: readonly string[];
  readonly kinds: readonly NemesisKind[];
  /** Every fault starts and heals within [0, durationMs]. */
  readonly durationMs: number;
  /** From one fault's start to the next attempt. */
  readonly gapMs: RangeMs;
  /** How long a fault lasts (a process stays down, a partition stays up). */
  readonly faultMs: RangeMs;
  readonly keepQuorum: boolean;
  /** For `delay` (default 50 ms ± 50 ms). */
  readonly delay?: { readonly ms: number; readonly jitterMs: number };
  /** For `throttle` (default 64 KiB/s). */
  readonly throttleBytesPerSecond?: number;
  /** `kill-during-startup` kills this long after the spawn at most (default 2 s; less in a short fault). */
  readonly startupKillMsMax?: number;
}

/**
 * kill: SIGKILL; stop: clean SIGTERM; start-and-kill: spawn, SIGKILL after durationMs; leave:
 * the node leaves the cluster (its replicas move); rejoin: once it has left, it starts again
 * on an empty data directory and joins as a new member; readd (after a kill): an operator
 * removes the dead node, then it starts on an empty data directory and joins as a new member.
 */
export type ProcessAction = 'kill' | 'stop' | 'start' | 'pause' | 'resume' | 'start-and-kill' | 'leave' | 'rejoin' | 'readd';

interface EventBase {
  readonly atMs: number;
  /** Which fault this event belongs to (0, 1, …): a fault and its heal share it. */
  readonly fault: number;
  readonly kind: NemesisKind;
  readonly durationMs: number;
}
export type ScheduledEvent =
  | (EventBase & { readonly action: ProcessAction; readonly target: string })
  | (EventBase & { readonly action: 'net' | 'net-heal'; readonly target: Nemesis });

const HEALS: readonly ScheduledEvent['action'][] = ['start', 'resume', 'rejoin', 'readd', 'net-heal'];

export function isHeal(e: ScheduledEvent): boolean {
  return HEALS.includes(e.action);
}

interface Active {
  endMs: number;
  /** Nodes down or paused. */
  down: readonly string[];
  /** Nodes a network nemesis keeps out of the majority (0 for delay and throttle). */
  netCost: number;
  net: boolean;
}

export function schedule(o: ScheduleOptions): ScheduledEvent[] {
  checkOptions(o);
  const rand = new SeededRand(o.seed);
  const n = o.nodes.length;
  const outMax = o.keepQuorum ? Math.floor((n - 1) / 2) : n;
  const events: ScheduledEvent[] = [];
  let active: Active[] = [];
  let fault = 0;
  for (let t = range(rand, o.gapMs); t < o.durationMs; t += range(rand, o.gapMs)) {
    active = active.filter((a) => a.endMs > t); // heals come first at equal times
    const kind = o.kinds[rand.int(o.kinds.length)]!;
    const durationMs = Math.min(range(rand, o.faultMs), o.durationMs - t);
    if (durationMs < o.faultMs.min) break; // no room left for a whole fault
    const out = active.reduce((sum, a) => sum + a.down.length + a.netCost, 0);
    const drawn = drawFault(kind, { o, rand, atMs: t, durationMs, fault, active, room: outMax - out });
    if (drawn === undefined) continue;
    events.push(...drawn.events);
    active.push({ endMs: t + durationMs, down: drawn.down, netCost: drawn.netCost, net: drawn.net });
    fault++;
  }
  // Stable order: by time, heals before faults at the same instant, then by fault.
  return events
    .map((e, i) => ({ e, i }))
    .sort((x, y) => x.e.atMs - y.e.atMs || Number(isHeal(y.e)) - Number(isHeal(x.e)) || x.i - y.i)
    .map(({ e }) => e);
}

interface DrawContext {
  o: ScheduleOptions;
  rand: SeededRand;
  atMs: number;
  durationMs: number;
  fault: number;
  active: readonly Active[];
  /** How many more nodes may be down, paused or cut off. */
  room: number;
}

/** The events of one fault of this kind, or undefined when none fits the rules right now. */
function drawFault(kind: NemesisKind, c: DrawContext): { events: ScheduledEvent[]; down: string[]; netCost: number; net: boolean } | undefined {
  const { o, rand, atMs, durationMs, fault } = c;
  const base = { atMs, fault, kind, durationMs };
  const heal = { atMs: atMs + durationMs, fault, kind, durationMs: 0 };
  switch (kind) {
    case 'kill':
    case 'restart':
    case 'pause':
    case 'replace':
    case 'remove':
    case 'kill-during-startup': {
      const busy = new Set(c.active.flatMap((a) => a.down));
      const free = o.nodes.filter((x) => !busy.has(x));
      if (free.length === 0 || c.room < 1) return undefined;
      if (kind === 'kill-during-startup' && durationMs < 2) return undefined; // no room for a start inside the window
      const target = free[rand.int(free.length)]!;
      const first = kind === 'pause' ? 'pause' : kind === 'restart' ? 'stop' : kind === 'replace' ? 'leave' : 'kill';
      const events: ScheduledEvent[] = [{ ...base, action: first, target }];
      if (kind === 'kill-during-startup') {
        // down for a while, a start killed part-way, then a start left alone
        const spawnAfterMs = 1 + rand.int(Math.max(1, Math.floor(durationMs / 2)));
        const killAfterMs = rand.int(Math.max(1, Math.min(o.startupKillMsMax ?? 2_000, durationMs - spawnAfterMs)));
        events.push({ ...base, atMs: atMs + spawnAfterMs, action: 'start-and-kill', target, durationMs: killAfterMs });
      }
      events.push({ ...heal, action: kind === 'pause' ? 'resume' : kind === 'replace' ? 'rejoin' : kind === 'remove' ? 'readd' : 'start', target });
      return { events, down: [target], netCost: 0, net: false };
    }
    default: {
      if (c.active.some((a) => a.net)) return undefined;
      const drawn = drawNet(kind, o, rand, c.room);
      if (drawn === undefined) return undefined;
      const events: ScheduledEvent[] = [
        { ...base, action: 'net', target: drawn.nemesis },
        { ...heal, action: 'net-heal', target: drawn.nemesis },
      ];
      return { events, down: [], netCost: drawn.cost, net: true };
    }
  }
}

/** A network nemesis of this kind whose cost (nodes cut from the majority) fits in `room`. */
function drawNet(kind: Exclude<NemesisKind, 'kill' | 'restart' | 'pause' | 'kill-during-startup' | 'replace' | 'remove'>, o: ScheduleOptions, rand: SeededRand, room: number): { nemesis: Nemesis; cost: number } | undefined {
  const nodes = o.nodes;
  const n = nodes.length;
  switch (kind) {
    case 'partition': {
      // a random minority against the rest; without keepQuorum any proper split
      const sizeMax = o.keepQuorum ? Math.min(room, Math.floor((n - 1) / 2)) : n - 1;
      if (sizeMax < 1) return undefined;
      const size = 1 + rand.int(sizeMax);
      const minority = shuffled(nodes, rand).slice(0, size);
      return { nemesis: { kind: 'partition', sides: [minority, nodes.filter((x) => !minority.includes(x))] }, cost: Math.min(size, n - size) };
    }
    case 'isolate':
      if (room < 1 || n < 2) return undefined;
      return { nemesis: { kind: 'isolate', node: nodes[rand.int(n)]! }, cost: 1 };
    case 'bridge': {
      if (n < 3) return undefined;
      const [hub, ...rest] = shuffled(nodes, rand) as [string, ...string[]];
      const aSize = 1 + rand.int(rest.length - 1);
      const a = rest.slice(0, aSize);
      const b = rest.slice(aSize);
      const cost = Math.min(a.length, b.length);
      if (cost > room) return undefined;
      return { nemesis: { kind: 'bridge', a, b, hub }, cost };
    }
    case 'one-way': {
      if (room < 1 || n < 2) return undefined;
      const [from, to] = shuffled(nodes, rand) as [string, string];
      return { nemesis: { kind: 'one-way', from, to }, cost: 1 };
    }
    case 'delay':
      return { nemesis: { kind: 'delay', ms: o.delay?.ms ?? 50, jitterMs: o.delay?.jitterMs ?? 50 }, cost: 0 };
    case 'throttle':
      return { nemesis: { kind: 'throttle', bytesPerSecond: o.throttleBytesPerSecond ?? 64 * 1024 }, cost: 0 };
  }
}

function range(rand: Rand, r: RangeMs): number {
  return r.min + rand.int(r.max - r.min + 1);
}

/** Fisher–Yates on a copy. */
function shuffled<T>(items: readonly T[], rand: Rand): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rand.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function checkOptions(o: ScheduleOptions): void {
  const fail = (what: string, got: unknown) => {
    throw new Error(`schedule: ${what}, got ${JSON.stringify(got)}`);
  };
  if (!Number.isSafeInteger(o.seed)) fail('seed must be an integer', o.seed);
  if (o.nodes.length === 0 || new Set(o.nodes).size !== o.nodes.length) fail('nodes must be distinct and non-empty', o.nodes);
  for (const k of o.kinds) if (!isNemesisKind(k)) fail(`kinds must be among ${NEMESIS_KINDS.join(',')}`, k);
  if (o.kinds.length === 0) fail('kinds must not be empty', o.kinds);
  if (!(o.durationMs >= 0)) fail('durationMs must be non-negative', o.durationMs);
  for (const [name, r] of [['gapMs', o.gapMs], ['faultMs', o.faultMs]] as const) {
    if (!Number.isSafeInteger(r.min) || !Number.isSafeInteger(r.max) || r.min < 1 || r.max < r.min) fail(`${name} must be whole milliseconds with 1 <= min <= max`, r);
  }
}

/** mulberry32: small, fast, and the same sequence for the same seed on every platform. */
export class SeededRand implements Rand {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  int(maxExclusive: number): number {
    let s = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    s = Math.imul(s ^ (s >>> 15), s | 1);
    s ^= s + Math.imul(s ^ (s >>> 7), s | 61);
    return Math.floor((((s ^ (s >>> 14)) >>> 0) / 4294967296) * maxExclusive);
  }
}
