// The suite's two lanes (scripts/test-suite.ts): pure parts. The files that start clusters of
// processes, the chaos runner or a browser (package.json's `tap.serial`) run one at a time in
// the cluster lane; everything else runs one at a time in the unit lane, beside it. Each
// lane is a tap run that ends with its own `# { total: …, pass: … }`; the suite prints one
// more, their sum, last (what .ci/run reads).

export interface Lanes {
  cluster: string[];
  unit: string[];
}

/** Split the test files (as `tap list` names them) by the serial list, keeping their order. */
export function splitLanes(files: readonly string[], serial: readonly string[]): Lanes {
  const alone = new Set(serial);
  return { cluster: files.filter((f) => alone.has(f)), unit: files.filter((f) => !alone.has(f)) };
}

/** tap's closing counts, e.g. `# { total: 12, pass: 11, fail: 1 }`. */
export type Counts = Record<string, number>;

/** The last summary line of a tap run's output, or undefined when it has none (a crash). */
export function lastCounts(output: string): Counts | undefined {
  let found: Counts | undefined;
  for (const [, body] of output.matchAll(/^# \{ (total: \d+[^}]*) \}$/gm)) {
    const counts: Counts = {};
    for (const [, key, value] of body!.matchAll(/(\w+): (\d+)/g)) counts[key!] = Number(value);
    found = counts;
  }
  return found;
}

/** The sum of the lanes' counts, as one tap summary line (total first, then pass, fail, …). */
export function summaryLine(lanes: readonly Counts[]): string {
  const sum: Counts = { total: 0, pass: 0 };
  for (const counts of lanes) for (const [key, value] of Object.entries(counts)) sum[key] = (sum[key] ?? 0) + value;
  return `# { ${Object.entries(sum).map(([k, v]) => `${k}: ${v}`).join(', ')} }`;
}
