// Layering rules read from the source text: the rules the issue tracker asked for stay true
// when someone adds a module (issue 15 items 4 and 8).
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';

const SRC = new URL('../../src/', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}
const files = sources(SRC).map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));
const importsOf = (text: string) => [...text.matchAll(/from '([^']+)'/g)].map((m) => m[1]!);

t.test('documents are read through the engine: no module outside it touches their column families', async (t) => {
  const touch = /\.(get|getMany|getManySync|entries|entriesSync|keys|keyBatches|keyStringBatches|count|cursor|put|del)\(\s*'(docs|revs|seq|att)'/;
  const offenders = files.filter((f) => !f.path.startsWith('storage/') && f.path !== 'docdb/engine.ts' && touch.test(f.text)).map((f) => f.path);
  t.same(offenders, [], 'only docdb/engine.ts reads docs, revs, seq and att');
  t.ok(files.some((f) => f.path === 'docdb/engine.ts' && touch.test(f.text)), 'the rule can see a match (the engine itself)');
});

t.test('the domain does not import the HTTP layer', async (t) => {
  const offenders = files.filter((f) => /^(gateway|docdb|vector|cluster|raft|core)\//.test(f.path) && importsOf(f.text).some((i) => /(^|\/)http\//.test(i))).map((f) => f.path);
  t.same(offenders, []);
});

t.test('embedders do not import each other in a cycle', async (t) => {
  const embedder = files.find((f) => f.path === 'vector/embedders/embedder.ts')!;
  t.notOk(importsOf(embedder.text).some((i) => i.endsWith('/http.js') || i === './http.js'), 'embedder.ts does not import http.ts');
});
