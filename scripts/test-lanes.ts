// The suite's two lanes (scripts/test-suite.ts): pure parts. The files that start clusters of
// processes, the chaos runner or a browser (package.json's `tap.serial`) run one at a time in
// the cluster lane; everything else runs one at a time in the unit lane, beside it, and in the
// cluster lane once its own files are done (`LaneQueue`). Each lane runs its files one after
// another, each the node program a tap test is, and ends with its own `# { total: …, pass: … }`,
// the sum of its files'; the suite prints one more, the sum of the lanes', last (what .ci/run
// reads).

export interface Lanes {
  cluster: string[];
  unit: string[];
}

/** Split the test files (as `tap list` names them) by the serial list, keeping their order. */
export function splitLanes(files: readonly string[], serial: readonly string[]): Lanes {
  const alone = new Set(serial);
  return { cluster: files.filter((f) => alone.has(f)), unit: files.filter((f) => !alone.has(f)) };
}

/**
 * The lanes' files as one queue, so the lanes end together: the unit lane takes unit files
 * from the front; the cluster lane takes its own files in order, then unit files from the
 * back (two unit files at once are what a unit file beside a cluster test already is). A
 * serial file only ever goes to the cluster lane, so no two of them run at once.
 */
export class LaneQueue {
  readonly #cluster: string[];
  readonly #unit: string[];
  constructor(lanes: Lanes) {
    this.#cluster = [...lanes.cluster];
    this.#unit = [...lanes.unit];
  }

  /** The next file for `lane`, or undefined: nothing left for it. */
  next(lane: keyof Lanes): string | undefined {
    if (lane === 'unit') return this.#unit.shift();
    return this.#cluster.shift() ?? this.#unit.pop();
  }
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

/** A command run as one test (the type check): passed when it exits 0, whatever it prints. */
export function commandCounts(_output: string, exitCode: number | null): { counts: Counts; ok: boolean } {
  return exitCode === 0 ? { counts: { total: 1, pass: 1 }, ok: true } : { counts: { total: 1, pass: 0, fail: 1 }, ok: false };
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
