// `npm test`: the suite in two lanes at once (scripts/test-lanes.ts). The cluster lane runs the
// files of package.json's `tap.serial` one at a time, as before; the unit lane starts with the
// type check (counted as one test) and runs the rest one at a time beside it, and the cluster
// lane takes unit files too once its own are done, so the lanes end together. A cluster test
// waits on elections and deadlines with about one core busy, so the other core ran idle while
// tap ran it alone, and two of them at once turn those waits into flakes (test/suite.test.ts).
// The unit lane's output is shown as it comes; the cluster lane's is held until the unit lane
// ends, then shown (and followed live), each file nested as tap nests a subtest. Last: both
// lanes' times and one summary line, their sum.
// With arguments (files, tap options) it is the type check, then one plain tap run:
// `npm test -- test/x.test.ts`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandCounts, type Counts, fileCounts, LaneQueue, type Lanes, lineIndenter, splitLanes, sumCounts, summaryLine } from './test-lanes.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const tap = path.join(root, 'node_modules', '.bin', 'tap');
const args = process.argv.slice(2);
const children = new Set<ChildProcess>();
/** A signal came: the lanes start no further file. */
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true;
    for (const child of children) child.kill(signal); // a test file, or a tap run that passes it on to its own
    process.exitCode = 1;
  });
}

const TYPECHECK = ['run', '--silent', 'typecheck'];

if (args.length > 0) {
  const checked = spawnSync('npm', TYPECHECK, { cwd: root, stdio: 'inherit' });
  if (checked.status !== 0) process.exit(checked.status ?? 1);
  const child = spawn(tap, args, { cwd: root, stdio: 'inherit' });
  children.add(child);
  child.once('exit', (code) => process.exit(code ?? 1));
} else {
  await runLanes();
}

async function runLanes(): Promise<void> {
  // One build of the nodes' JavaScript for both lanes (each tap run's `before` then finds it fresh).
  const built = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/build-node.ts'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error(`building the test nodes failed (status ${built.status})`);
  const listed = spawnSync(tap, ['list'], { cwd: root, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`tap list failed: ${listed.stderr}`);
  const files = listed.stdout.split('\n').filter((f) => f.endsWith('.test.ts'));
  const { serial, timeout: timeoutS } = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { tap: { serial: string[]; timeout: number } }).tap;
  const lanes = splitLanes(files, serial);
  const env = { ...process.env, FIRKIN_TEST_BUILT: '1' };

  let held: string[] | undefined = [];
  const show = (text: string, live: boolean) => {
    if (live || held === undefined) process.stdout.write(text);
    else held.push(text);
  };
  // Each file runs as the plain node program a tap test is, not through tap's runner: the
  // runner puts @tapjs/processinfo in front of every test process and, through NODE_OPTIONS,
  // of every node process a test starts (~0.6 s each on this machine kind, for coverage this
  // suite does not collect). tap's own timeout still runs inside each file (TAP_TIMEOUT); the
  // lane kills a file that outlives it by a minute.
  const runFile = (file: string, index: number, write: (text: string) => void) =>
    runChild(file, process.execPath, ['--enable-source-maps', '--import=tsx', file], index, write, fileCounts);
  // The type check (package.json's `typecheck`) as one test of the unit lane.
  const runTypecheck = (index: number, write: (text: string) => void) =>
    runChild('typecheck (npm run typecheck)', 'npm', TYPECHECK, index, write, commandCounts);
  // Each child gets a temp dir of its own (TMPDIR, which os.tmpdir() reads), removed once it
  // ends: a file killed by its timeout, or a node it left behind, leaves nothing in /tmp (a test
  // removes its dirs when its process exits, so a killed one never did).
  // tsx keeps its transform cache in tmpdir()/tsx-<uid>: each child's dir links to the shared one.
  const suiteTmp = mkdtempSync(path.join(tmpdir(), 'firkin-suite-'));
  process.on('exit', () => removeDir(suiteTmp));
  const tsxCache = `tsx-${process.geteuid?.() ?? userInfo().username}`;
  mkdirSync(path.join(tmpdir(), tsxCache), { recursive: true });
  const runChild = (name: string, command: string, argv: string[], index: number, write: (text: string) => void, count: typeof fileCounts) =>
    new Promise<Counts>((resolve) => {
      const startedAt = Date.now();
      write(`# Subtest: ${name}\n`);
      const childTmp = mkdtempSync(path.join(suiteTmp, 't-'));
      symlinkSync(path.join(tmpdir(), tsxCache), path.join(childTmp, tsxCache));
      const child = spawn(command, argv, { cwd: root, env: { ...env, TAP_TIMEOUT: String(timeoutS), TMPDIR: childTmp }, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      const killer = setTimeout(() => child.kill('SIGKILL'), (timeoutS + 60) * 1000);
      let output = '';
      const indented = lineIndenter(write);
      const take = (d: Buffer) => {
        const text = d.toString();
        output += text;
        indented.push(text);
      };
      child.stdout!.on('data', take);
      child.stderr!.on('data', take);
      child.once('close', (code, signal) => {
        clearTimeout(killer);
        children.delete(child);
        removeDir(childTmp);
        indented.flush();
        const { counts, ok } = count(output, code);
        const why = code === 0 ? '' : ` (exit ${code ?? signal})`;
        write(`${ok ? 'ok' : 'not ok'} ${index + 1} - ${name}${why} # time=${Date.now() - startedAt}ms\n\n`);
        resolve(counts);
      });
    });
  const queue = new LaneQueue(lanes);
  const lane = async (name: keyof Lanes, live: boolean) => {
    const startedAt = Date.now();
    const write = (text: string) => show(text, live);
    write('TAP version 14\n');
    const perFile: Counts[] = [];
    if (name === 'unit') perFile.push(await runTypecheck(0, write));
    for (let file = queue.next(name); file !== undefined && !stopping; file = queue.next(name)) {
      perFile.push(await runFile(file, perFile.length, write));
    }
    const counts = sumCounts(perFile);
    write(`1..${perFile.length}\n${summaryLine([counts])}\n`);
    return { name, files: perFile.length, code: (counts.fail ?? 0) > 0 || stopping ? 1 : 0, seconds: Math.round((Date.now() - startedAt) / 1000), counts };
  };

  const unit = lane('unit', true).then((result) => {
    for (const text of held ?? []) process.stdout.write(text);
    held = undefined;
    return result;
  });
  const results = await Promise.all([unit, lane('cluster', false)]);
  for (const r of results) process.stdout.write(`# ${r.name} lane: ${r.files} files in ${r.seconds} s, exit ${r.code}\n`);
  process.stdout.write(`${summaryLine(results.map((r) => r.counts))}\n`);
  process.exitCode = results.every((r) => r.code === 0) ? (process.exitCode ?? 0) : 1;
}

/** Remove a test's temp dir; a failure (a process still writing in it) is said, not fatal. */
function removeDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    process.stdout.write(`# could not remove ${dir}: ${(err as Error).message}\n`);
  }
}
