// Bundles the web console (console/src, Preact + uPlot) into dist/console, which the node
// serves at /_console/. Asset names carry a content hash so they can be cached forever;
// index.html is written last, naming them, and is never cached.
// Run by `npm run build`; tests call it too (test/support/console.ts), so a fresh clone
// needs no build step before `npm test`. Test files run in parallel and may build at the
// same time as another serves: every file is written to a temporary name and renamed, and
// the directory is never emptied first (same sources, same hashed names, same bytes).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(root, 'dist', 'console');
const started = performance.now();

mkdirSync(outDir, { recursive: true });
function writeAtomically(name, contents) {
  const temporary = path.join(outDir, `.${name}.${process.pid}.tmp`);
  writeFileSync(temporary, contents);
  renameSync(temporary, path.join(outDir, name));
}

const result = await build({
  entryPoints: [path.join(root, 'console', 'src', 'main.tsx')],
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: outDir,
  entryNames: '[name]-[hash]',
  write: false,
  logLevel: 'warning',
});

const outputs = result.outputFiles.map((file) => path.basename(file.path));
for (const file of result.outputFiles) writeAtomically(path.basename(file.path), file.contents);
const script = outputs.find((f) => f.endsWith('.js'));
const style = outputs.find((f) => f.endsWith('.css'));
if (script === undefined || style === undefined) throw new Error(`console build produced ${outputs.join(', ')}`);
const html = readFileSync(path.join(root, 'console', 'index.html'), 'utf8')
  .replace('%SCRIPT%', script)
  .replace('%STYLE%', style);
writeAtomically('index.html', html);
// Assets of earlier builds: nothing names them any more.
for (const name of readdirSync(outDir)) {
  if (name !== 'index.html' && !outputs.includes(name) && !name.endsWith('.tmp')) rmSync(path.join(outDir, name), { force: true });
}
const ms = Math.round(performance.now() - started);
console.log(`console built into dist/console (${outputs.join(', ')}) in ${ms} ms`);
