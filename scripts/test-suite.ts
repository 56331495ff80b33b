// `npm test` after the typecheck: the suite in two lanes at once (scripts/test-lanes.ts). The
// cluster lane runs the files of package.json's `tap.serial` one at a time, as before; the
// unit lane runs the rest one at a time beside it. A cluster test waits on elections and
// deadlines with about one core busy, so the other core ran idle while tap ran it alone, and
// two of them at once turn those waits into flakes (test/suite.test.ts). The unit lane's output
// is shown as it comes; the cluster lane's is held until the unit lane ends, then shown (and
// followed live), each file nested as tap nests a subtest. Last: both lanes' times and one
// summary line, their sum.
// With arguments (files, tap options) it is one plain tap run: `npm test -- test/x.test.ts`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Counts, fileCounts, lineIndenter, splitLanes, sumCounts, summaryLine } from './test-lanes.js';

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

if (args.length > 0) {
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
    new Promise<Counts>((resolve) => {
      const startedAt = Date.now();
      write(`# Subtest: ${file}\n`);
      const child = spawn(process.execPath, ['--enable-source-maps', '--import=tsx', file], { cwd: root, env: { ...env, TAP_TIMEOUT: String(timeoutS) }, stdio: ['ignore', 'pipe', 'pipe'] });
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
        indented.flush();
        const { counts, ok } = fileCounts(output, code);
        const why = code === 0 ? '' : ` (exit ${code ?? signal})`;
        write(`${ok ? 'ok' : 'not ok'} ${index + 1} - ${file}${why} # time=${Date.now() - startedAt}ms\n\n`);
        resolve(counts);
      });
    });
  const lane = async (name: string, laneFiles: string[], live: boolean) => {
    const startedAt = Date.now();
    const write = (text: string) => show(text, live);
    write('TAP version 14\n');
    const perFile: Counts[] = [];
    for (const [i, file] of laneFiles.entries()) {
      if (stopping) break;
      perFile.push(await runFile(file, i, write));
    }
    const counts = sumCounts(perFile);
    write(`1..${perFile.length}\n${summaryLine([counts])}\n`);
    return { name, files: perFile.length, code: (counts.fail ?? 0) > 0 || stopping ? 1 : 0, seconds: Math.round((Date.now() - startedAt) / 1000), counts };
  };

  const unit = lane('unit', lanes.unit, true).then((result) => {
    for (const text of held ?? []) process.stdout.write(text);
    held = undefined;
    return result;
  });
  const results = await Promise.all([unit, lane('cluster', lanes.cluster, false)]);
  for (const r of results) process.stdout.write(`# ${r.name} lane: ${r.files} files in ${r.seconds} s, exit ${r.code}\n`);
  process.stdout.write(`${summaryLine(results.map((r) => r.counts))}\n`);
  process.exitCode = results.every((r) => r.code === 0) ? (process.exitCode ?? 0) : 1;
}
