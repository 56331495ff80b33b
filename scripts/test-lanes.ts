// The suite's two lanes (scripts/test-suite.ts): pure parts. The files that start clusters of
// processes, the chaos runner or a browser (package.json's `tap.serial`) run one at a time in
// the cluster lane; everything else runs one at a time in the unit lane, beside it. Each
// lane runs its files one after another, each the node program a tap test is, and ends with its
// own `# { total: …, pass: … }`, the sum of its files'; the suite prints one more, the sum of
// the lanes', last (what .ci/run reads).

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

/** The sum of several runs' counts (total first, then pass, fail, …). */
export function sumCounts(runs: readonly Counts[]): Counts {
  const sum: Counts = { total: 0, pass: 0 };
  for (const counts of runs) for (const [key, value] of Object.entries(counts)) sum[key] = (sum[key] ?? 0) + value;
  return sum;
}

/** The sum of the lanes' counts, as one tap summary line. */
export function summaryLine(lanes: readonly Counts[]): string {
  return `# { ${Object.entries(sumCounts(lanes)).map(([k, v]) => `${k}: ${v}`).join(', ')} }`;
}

/**
 * One test file's counts from its own output and exit: its closing line, plus one failure when
 * it has none (it crashed or was killed) or exited non-zero with no failure counted.
 */
export function fileCounts(output: string, exitCode: number | null): { counts: Counts; ok: boolean } {
  const closing = lastCounts(output);
  const counts: Counts = { ...(closing ?? { total: 0, pass: 0 }) };
  if ((counts.fail ?? 0) === 0 && (exitCode !== 0 || closing === undefined)) {
    counts.total = (counts.total ?? 0) + 1;
    counts.fail = 1;
  }
  return { counts, ok: (counts.fail ?? 0) === 0 };
}

/** Indents a child's output as tap nests a subtest, line by line as it streams (`flush` ends it). */
export function lineIndenter(write: (text: string) => void): { push: (chunk: string) => void; flush: () => void } {
  let partial = '';
  return {
    push(chunk) {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      if (lines.length > 0) write(lines.map((l) => (l === '' ? '\n' : `    ${l}\n`)).join(''));
    },
    flush() {
      if (partial !== '') write(`    ${partial}\n`);
      partial = '';
    },
  };
}
