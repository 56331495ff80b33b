// `npm test` after the typecheck: the suite in two lanes at once (scripts/test-lanes.ts). The
// cluster lane runs the files of package.json's `tap.serial` one at a time, as before; the
// unit lane runs the rest one at a time beside it. A cluster test waits on elections and
// deadlines with about one core busy, so the other core ran idle while tap ran it alone, and
// two of them at once turn those waits into flakes (test/suite.test.ts). The unit lane's output
// is shown as it comes; the cluster lane's is held until the unit lane ends, then shown (and
// followed live). Last: both lanes' times and one summary line, their sum.
// With arguments (files, tap options) it is one plain tap run: `npm test -- test/x.test.ts`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Counts, lastCounts, splitLanes, summaryLine } from './test-lanes.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const tap = path.join(root, 'node_modules', '.bin', 'tap');
const args = process.argv.slice(2);
const children = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal); // tap passes it to its test processes
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
  const serial = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { tap: { serial: string[] } }).tap.serial;
  const lanes = splitLanes(files, serial);
  const env = { ...process.env, FIRKIN_TEST_BUILT: '1' };

  let held: string[] | undefined = [];
  const show = (text: string, live: boolean) => {
    if (live || held === undefined) process.stdout.write(text);
    else held.push(text);
  };
  const lane = (name: string, laneFiles: string[], live: boolean) =>
    new Promise<{ name: string; files: number; code: number | null; seconds: number; counts: Counts | undefined }>((resolve) => {
      const startedAt = Date.now();
      const child = spawn(tap, ['--jobs=1', ...laneFiles], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let output = '';
      const take = (d: Buffer) => {
        const text = d.toString();
        output += text;
        show(text, live);
      };
      child.stdout!.on('data', take);
      child.stderr!.on('data', take);
      child.once('close', (code) => {
        children.delete(child);
        resolve({ name, files: laneFiles.length, code, seconds: Math.round((Date.now() - startedAt) / 1000), counts: lastCounts(output) });
      });
    });

  const unit = lane('unit', lanes.unit, true).then((result) => {
    for (const text of held ?? []) process.stdout.write(text);
    held = undefined;
    return result;
  });
  const results = await Promise.all([unit, lane('cluster', lanes.cluster, false)]);
  const counts: Counts[] = [];
  for (const r of results) {
    process.stdout.write(`# ${r.name} lane: ${r.files} files in ${r.seconds} s, exit ${r.code}\n`);
    if (r.counts !== undefined) counts.push(r.counts);
    else {
      process.stdout.write(`# the ${r.name} lane ended without a summary: counted as one failure\n`);
      counts.push({ total: 1, fail: 1 });
    }
  }
  process.stdout.write(`${summaryLine(counts)}\n`);
  process.exitCode = results.every((r) => r.code === 0) ? (process.exitCode ?? 0) : 1;
}
