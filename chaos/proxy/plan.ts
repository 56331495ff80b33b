// Network nemeses as data, and the pure plan that turns them into per-link faults.
//
// A cluster of N nodes has N·(N−1) directed links: the link `from->to` carries the TCP
// connections that `from` dials to `to` (gRPC streams). Each link has two directions:
// `a2b` (bytes from the dialler to the listener) and `b2a` (the replies). "x reaches y" means
// bytes written by x arrive at y, whoever dialled: they travel on `x->y` a2b and on `y->x` b2a.
//
// The plan is a function of the node list and the descriptions only (no time, no randomness):
// the runner draws descriptions from its seed, the plan is replayable by construction.
import { unreachable } from '../../src/core/unreachable.js';

export interface DirFaults {
  /** Hold every byte (and the FIN or reset behind it) until healed; the connection stays open. */
  readonly blackhole: boolean;
  /** Each chunk waits delayMs plus a uniform draw in [0, jitterMs], in order. */
  readonly delayMs: number;
  readonly jitterMs: number;
  /** Token bucket; null: unlimited. */
  readonly bytesPerSecond: number | null;
}

export interface LinkFaults {
  readonly a2b: DirFaults;
  readonly b2a: DirFaults;
}

export const PASS: DirFaults = Object.freeze({ blackhole: false, delayMs: 0, jitterMs: 0, bytesPerSecond: null });
export const PASS_LINK: LinkFaults = Object.freeze({ a2b: PASS, b2a: PASS });

export type Nemesis =
  | { readonly kind: 'heal' }
  /** Links between different sides are blackholed both ways; nodes named in no side form one more side. */
  | { readonly kind: 'partition'; readonly sides: readonly (readonly string[])[] }
  | { readonly kind: 'isolate'; readonly node: string }
  /** The minority (default: the last ⌊(N−1)/2⌋ nodes of the list) against the rest. */
  | { readonly kind: 'majority-minority'; readonly minority?: readonly string[] }
  /** `a` and `b` do not reach each other; `hub` reaches and is reached by everyone. Nodes in none of them form one more side. */
  | { readonly kind: 'bridge'; readonly a: readonly string[]; readonly b: readonly string[]; readonly hub: string }
  /** Bytes from `from` to `to` are held; `to` still reaches `from` (an asymmetric partition). */
  | { readonly kind: 'one-way'; readonly from: string; readonly to: string }
  | { readonly kind: 'delay'; readonly ms: number; readonly jitterMs: number }
  | { readonly kind: 'throttle'; readonly bytesPerSecond: number };

export type NetworkPlan = ReadonlyMap<string, LinkFaults>;

export function linkKey(from: string, to: string): string {
  return `${from}->${to}`;
}

/** Every ordered pair of distinct nodes, in list order. */
export function orderedPairs(nodes: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (const from of nodes) for (const to of nodes) if (from !== to) pairs.push([from, to]);
  return pairs;
}

/**
 * The faults of every link under all `nemeses` at once (an empty list, or only `heal`: every
 * link passes). Several nemeses combine: blackholes add up, the longest delay and the
 * tightest throttle win.
 */
export function planNetwork(nodes: readonly string[], nemeses: readonly Nemesis[]): NetworkPlan {
  checkNodes(nodes);
  const plan = new Map<string, { a2b: DirFaults; b2a: DirFaults }>();
  for (const [from, to] of orderedPairs(nodes)) plan.set(linkKey(from, to), { a2b: PASS, b2a: PASS });
  const edit = (from: string, to: string, f: (d: DirFaults) => DirFaults) => {
    // x reaches y over x->y (a2b) and y->x (b2a)
    const there = plan.get(linkKey(from, to))!;
    there.a2b = f(there.a2b);
    const back = plan.get(linkKey(to, from))!;
    back.b2a = f(back.b2a);
  };
  const hold = (d: DirFaults): DirFaults => ({ ...d, blackhole: true });
  for (const n of nemeses) {
    for (const name of namesIn(n)) if (!nodes.includes(name)) throw new Error(`nemesis ${n.kind} names ${JSON.stringify(name)}, not one of ${nodes.join(',')}`);
    switch (n.kind) {
      case 'heal':
        break;
      case 'partition':
      case 'isolate':
      case 'majority-minority':
      case 'bridge': {
        const group = groups(nodes, n);
        for (const [from, to] of orderedPairs(nodes)) if (group(from, to)) edit(from, to, hold);
        break;
      }
      case 'one-way':
        if (n.from === n.to) throw new Error(`one-way needs two nodes, got ${n.from} twice`);
        edit(n.from, n.to, hold);
        break;
      case 'delay':
        checkNonNegative('delay ms', n.ms);
        checkNonNegative('delay jitterMs', n.jitterMs);
        for (const [from, to] of orderedPairs(nodes)) edit(from, to, (d) => (d.delayMs + d.jitterMs >= n.ms + n.jitterMs ? d : { ...d, delayMs: n.ms, jitterMs: n.jitterMs }));
        break;
      case 'throttle':
        if (!(n.bytesPerSecond > 0)) throw new Error(`throttle bytesPerSecond must be positive, got ${n.bytesPerSecond}`);
        for (const [from, to] of orderedPairs(nodes)) edit(from, to, (d) => (d.bytesPerSecond !== null && d.bytesPerSecond <= n.bytesPerSecond ? d : { ...d, bytesPerSecond: n.bytesPerSecond }));
        break;
      default:
        unreachable(n);
    }
  }
  return plan;
}

/** Whether bytes written by `from` arrive at `to` under the plan (no blackhole on the way). */
export function reaches(plan: NetworkPlan, from: string, to: string): boolean {
  return !plan.get(linkKey(from, to))!.a2b.blackhole && !plan.get(linkKey(to, from))!.b2a.blackhole;
}

/** Which nodes a partition-like nemesis keeps apart: true when from and to are blocked. */
function groups(nodes: readonly string[], n: Extract<Nemesis, { kind: 'partition' | 'isolate' | 'majority-minority' | 'bridge' }>): (from: string, to: string) => boolean {
  const sideOf = (sides: readonly (readonly string[])[]) => (x: string) => {
    const i = sides.findIndex((s) => s.includes(x));
    return i === -1 ? sides.length : i;
  };
  switch (n.kind) {
    case 'partition': {
      const side = sideOf(n.sides);
      return (x, y) => side(x) !== side(y);
    }
    case 'isolate':
      return (x, y) => (x === n.node) !== (y === n.node);
    case 'majority-minority': {
      const minority = n.minority ?? nodes.slice(nodes.length - Math.floor((nodes.length - 1) / 2));
      return (x, y) => minority.includes(x) !== minority.includes(y);
    }
    case 'bridge': {
      const side = sideOf([n.a.filter((x) => x !== n.hub), n.b.filter((x) => x !== n.hub)]);
      return (x, y) => x !== n.hub && y !== n.hub && side(x) !== side(y);
    }
    default:
      return unreachable(n);
  }
}

function namesIn(n: Nemesis): string[] {
  switch (n.kind) {
    case 'partition':
      return n.sides.flat();
    case 'isolate':
      return [n.node];
    case 'majority-minority':
      return [...(n.minority ?? [])];
    case 'bridge':
      return [...n.a, ...n.b, n.hub];
    case 'one-way':
      return [n.from, n.to];
    case 'heal':
    case 'delay':
    case 'throttle':
      return [];
    default:
      return unreachable(n);
  }
}

function checkNodes(nodes: readonly string[]): void {
  if (new Set(nodes).size !== nodes.length) throw new Error(`node names must be distinct, got ${nodes.join(',')}`);
}

function checkNonNegative(what: string, v: number): void {
  if (!(v >= 0) || !Number.isFinite(v)) throw new Error(`${what} must be a non-negative number, got ${v}`);
}

