// Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by where the code
// lives (a package, node's internals, Firkin's own modules, native and GC), so a profile reads
// as "where does a request's time go" without opening DevTools.
// Usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [top=25] [per=N requests]
import { readFileSync } from 'node:fs';
import type { ChildNode } from '../test/support/process.js';
import { waitFor } from '../test/support/wait.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: a package name, node:internal, src/<dir>, or a V8 pseudo-frame. */
export function placeOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return `(${functionName || 'anonymous'})`; // (garbage collector), (program), (idle), native
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return pkg[1]!;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const src = /\/(src|bench|test)\/(.+?)(\.ts|\.js)$/.exec(url);
  if (src !== null) return `${src[1]}/${src[2]}`;
  return url;
}

export function summarise(profile: CpuProfile): { totalMs: number; byFunction: Map<string, number>; byPlace: Map<string, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    let frame = byId.get(id)!.callFrame;
    // A native function shows as an anonymous frame without a URL: name it by its caller.
    const parent = parentOf.get(id);
    if (frame.url === '' && frame.functionName === '' && parent !== undefined) {
      const caller = byId.get(parent)!.callFrame;
      frame = { ...caller, functionName: `${caller.functionName || '(anonymous)'} [native]` };
    }
    const place = placeOf(frame);
    const fn = `${frame.functionName || '(anonymous)'} ${place}${frame.url === '' ? '' : `:${frame.lineNumber + 1}`}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us / 1000);
    byPlace.set(place, (byPlace.get(place) ?? 0) + us / 1000);
    totalUs += us;
  }
  return { totalMs: totalUs / 1000, byFunction, byPlace };
}

/** Prints the `top` rows by share of `totalMs`, and per request when `per` requests were sampled. */
export function table(title: string, rows: Map<string, number>, totalMs: number, top: number, per: number): void {
  console.log(`\n${title}`);
  const sorted = [...rows].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, ms] of sorted) {
    const share = ((100 * ms) / totalMs).toFixed(1).padStart(5);
    const each = per > 0 ? `${((1000 * ms) / per).toFixed(1).padStart(7)} µs/req` : '';
    console.log(`${share}%  ${ms.toFixed(0).padStart(7)} ms ${each}  ${name}`);
  }
}

/**
 * Runs `measured` with the profiler of a node started by bench/profiled-node.ts switched on
 * (SIGUSR2 starts it; the second one stops it and writes the profile), so the profile holds
 * only that window.
 */
export async function profileWindow<T>(node: ChildNode, measured: () => Promise<T>): Promise<T> {
  node.proc.kill('SIGUSR2');
  await waitFor(() => node.output().includes('profile started') || undefined, { timeoutMs: 10_000, what: 'the server profiler to start' });
  const result = await measured();
  node.proc.kill('SIGUSR2');
  await waitFor(() => node.output().includes('profile written') || undefined, { timeoutMs: 30_000, what: 'the server profile' });
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (file === undefined) throw new Error('usage: profile-summary.ts FILE.cpuprofile [top] [requests]');
  const top = Number(process.argv[3] ?? 25);
  const per = Number(process.argv[4] ?? 0);
  const { totalMs, byFunction, byPlace } = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  console.log(`${file}: ${totalMs.toFixed(0)} ms sampled${per > 0 ? `, ${per} requests` : ''}`);
  table('by place', byPlace, totalMs, top, per);
  table('by function (self time)', byFunction, totalMs, top, per);
}
