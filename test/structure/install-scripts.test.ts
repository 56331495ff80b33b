// Every dependency with an install script is approved in package.json's `allowScripts`: npm 12
// runs none it was not told about, and a package that compiles or checks its binary there
// (re2 builds from source) would install broken, with nothing failing until it is loaded.
import { readFileSync } from 'node:fs';
import t from 'tap';

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { allowScripts?: Record<string, boolean | string> };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };

/** `node_modules/a/node_modules/@s/b` -> `@s/b`. */
const nameOf = (lockPath: string): string => lockPath.slice(lockPath.lastIndexOf('node_modules/') + 'node_modules/'.length);

t.test('the lock file\'s packages with install scripts are each approved, and nothing else is', async (t) => {
  const withScripts = [...new Set(Object.entries(lock.packages).filter(([p, info]) => p !== '' && info.hasInstallScript === true).map(([p]) => nameOf(p)))].sort();
  t.ok(withScripts.length > 0, 'the lock names some (the native modules)');
  const approved = pkg.allowScripts ?? {};
  for (const name of withScripts) t.equal(approved[name], true, `${name} may run its install script`);
  t.same(Object.keys(approved).sort(), withScripts, 'no approval for a package that is gone');
});
