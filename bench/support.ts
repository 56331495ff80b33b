// Shared bench helpers: percentiles, printing, a node in a child process.
import { compiledMainArgs } from '../test/support/built-node.js';
import { type ChildNode, spawnNode } from '../test/support/process.js';

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return 0;
  const i = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[i]!;
}

export interface BenchResult {
  bench: string;
  [metric: string]: string | number;
}

export function report(results: BenchResult[]): void {
  for (const r of results) console.log(JSON.stringify({ ...r, node: process.version }));
  const keys = [...new Set(results.flatMap((r) => Object.keys(r)))];
  console.log('\n' + keys.join('\t'));
  for (const r of results) console.log(keys.map((k) => (typeof r[k] === 'number' ? Number((r[k] as number).toFixed(2)) : (r[k] ?? ''))).join('\t'));
}

/** Only the cases whose name contains the first CLI argument run. */
export function selected(name: string): boolean {
  const filter = process.argv[2] ?? '';
  return name.includes(filter);
}

/** The document body the document benches write (about 150 bytes as JSON); callers add the `_id`. */
export function benchDoc(i: number) {
  return { type: 'bench', n: i, name: `user ${i}`, tags: ['a', 'b', String(i % 10)], nested: { score: i % 1000, ok: i % 2 === 0 } };
}

/** A node for a bench: the product as it ships, compiled (built-node.ts, `compiledMainArgs`), with the product's defaults. */
export function spawnBenchNode(env: Record<string, string>, args: string[] = []): Promise<ChildNode> {
  return spawnNode(env, args, compiledMainArgs());
}
