// Tests build the console themselves (esbuild takes well under a second), so a fresh clone
// runs `npm test` without `npm run build` first. Once per test process.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let built = false;

export function ensureConsoleBuilt(): void {
  if (built) return;
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build-console.mjs')], { stdio: 'pipe' });
  built = true;
}
