// Every launcher of a node passes NODE_FLAGS (src/core/node-flags.ts): the TypeScript ones
// import the list; the three that cannot (npm start, the Dockerfile, scripts/cluster.sh) spell
// it out and are checked here. And the flag does what its comment says: V8 grows the young
// generation past its default when allowed to.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { NODE_FLAGS } from '../../src/core/node-flags.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

t.test('npm start, the Dockerfile and cluster.sh start nodes with NODE_FLAGS', (t) => {
  const launchers: [string, string][] = [
    ['package.json start', (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start!],
    ['Dockerfile CMD', (JSON.parse(/^CMD (\[.*\])$/m.exec(read('Dockerfile'))![1]!) as string[]).join(' ')],
    ['cluster.sh NODE_CMD', /^NODE_CMD=\$\{FIRKIN_NODE_CMD:-([^}]*)\}/m.exec(read('scripts/cluster.sh'))![1]!],
  ];
  for (const [name, command] of launchers) {
    const words = command.split(/\s+/);
    t.equal(words[0], 'node', `${name} runs node`);
    const script = words.findIndex((w) => /main\.(js|ts)$/.test(w));
    t.ok(script > 0, `${name} names the main script`);
    for (const flag of NODE_FLAGS) t.ok(words.slice(1, script).includes(flag), `${name} passes ${flag} to node: ${command}`);
  }
  t.end();
});

t.test('with NODE_FLAGS the young generation grows past V8 default', (t) => {
  // Keeps ~200k small objects alive at a time: enough survivors for V8 to grow new space to its maximum.
  const probe = `let keep=[];for(let i=0;i<3e6;i++){keep.push({a:i,b:'x'+i});if(keep.length>2e5)keep=[]}
process.stdout.write(String(require('v8').getHeapSpaceStatistics().find((s)=>s.space_name==='new_space').space_size))`;
  const size = (flags: readonly string[]) => Number(execFileSync(process.execPath, [...flags, '-e', probe], { encoding: 'utf8' }));
  const byDefault = size([]);
  const withFlags = size(NODE_FLAGS);
  t.ok(withFlags > byDefault, `new space ${withFlags} bytes with NODE_FLAGS, ${byDefault} without`);
  t.end();
});
