// Files of the package itself (package.json, proto/, dist/console): one way to find them, from
// src/ under tsx and from dist/src/ once built (the Docker image runs the latter, one
// directory deeper, so a path relative to a module is right in one place only).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('no package.json above src/core/package-root.ts');
    dir = parent;
  }
  return dir;
}

/** The directory holding the package's package.json. */
export const PACKAGE_ROOT = findRoot();

/** A path inside the package: `packagePath('proto', 'cluster.proto')`. */
export function packagePath(...parts: string[]): string {
  return path.join(PACKAGE_ROOT, ...parts);
}
