// firkin's argument parsing: options anywhere, flag over env over default, every bad input a
// one-line usage error (never a throw).
import fc from 'fast-check';
import t from 'tap';
import { CLUSTER_COMMANDS, DEFAULT_URL, isSeed, normaliseUrl, parseArgs } from '../../src/cli/args.js';
import { HELP } from '../../src/cli/help.js';
import { fcParams } from '../support/fc.js';

const KEY = 'fk_0123456789abcdef';

t.test('each command parses to its kind with the default target', (t) => {
  t.same(parseArgs(['cluster', 'status'], {}), { kind: 'run', command: { kind: 'status' }, target: { url: DEFAULT_URL, key: undefined, json: false } });
  t.same(parseArgs(['cluster', 'nodes', '--json'], {}), { kind: 'run', command: { kind: 'nodes' }, target: { url: DEFAULT_URL, key: undefined, json: true } });
  t.same(parseArgs(['cluster', 'leave'], {}), { kind: 'run', command: { kind: 'leave' }, target: { url: DEFAULT_URL, key: undefined, json: false } });
  t.same(parseArgs(['cluster', 'join', '--seed', '10.0.0.1:9081', '--key', KEY], {}), {
    kind: 'run',
    command: { kind: 'join', seed: '10.0.0.1:9081' },
    target: { url: DEFAULT_URL, key: KEY, json: false },
  });
  t.same(parseArgs(['cluster', 'remove', 'n3', `--key=${KEY}`], {}), {
    kind: 'run',
    command: { kind: 'remove', node: 'n3' },
    target: { url: DEFAULT_URL, key: KEY, json: false },
  });
  t.same(parseArgs(['cluster', 'remove', '--key', KEY, '--', '-odd-name'], {}), {
    kind: 'run',
    command: { kind: 'remove', node: '-odd-name' },
    target: { url: DEFAULT_URL, key: KEY, json: false },
  });
  t.end();
});

t.test('the URL and key: flag over env over default; empty env is unset', (t) => {
  const env = { FIRKIN_URL: 'http://10.1.1.1:8081/', FIRKIN_KEY: 'from-env' };
  const target = (argv: string[], e: Record<string, string>) => {
    const p = parseArgs(['cluster', 'status', ...argv], e);
    return p.kind === 'run' ? p.target : p;
  };
  t.same(target([], env), { url: 'http://10.1.1.1:8081', key: 'from-env', json: false });
  t.same(target(['--url', 'https://h:1/base/', '--key', 'k'], env), { url: 'https://h:1/base', key: 'k', json: false });
  t.same(target([], { FIRKIN_URL: '', FIRKIN_KEY: '' }), { url: DEFAULT_URL, key: undefined, json: false });
  t.same(target(['--url', 'ftp://h/'], {}), { kind: 'usage_error', message: `the node URL must be an http(s) URL like ${DEFAULT_URL}, got "ftp://h/"` });
  t.end();
});

t.test('FIRKIN_NODES: the other nodes, normalised, without the target or repeats; a bad one is a usage error', (t) => {
  const target = (e: Record<string, string>) => {
    const p = parseArgs(['cluster', 'status'], e);
    return p.kind === 'run' ? p.target : p;
  };
  const nodes = 'http://127.0.0.1:8081, http://127.0.0.1:8082/,http://127.0.0.1:8083,,http://127.0.0.1:8082';
  t.same(target({ FIRKIN_NODES: nodes, FIRKIN_URL: 'http://127.0.0.1:8081' }), {
    url: 'http://127.0.0.1:8081',
    key: undefined,
    json: false,
    fallbacks: ['http://127.0.0.1:8082', 'http://127.0.0.1:8083'],
  });
  t.same(target({ FIRKIN_NODES: 'http://127.0.0.1:8080' }), { url: DEFAULT_URL, key: undefined, json: false }, 'only the target itself: no fallbacks');
  t.same(target({ FIRKIN_NODES: '' }), { url: DEFAULT_URL, key: undefined, json: false }, 'empty is unset');
  t.same(target({ FIRKIN_NODES: 'http://a:1,b:2' }), {
    kind: 'usage_error',
    message: `FIRKIN_NODES must be http(s) URLs separated by commas, like ${DEFAULT_URL},http://127.0.0.1:8081; got "b:2"`,
  });
  t.end();
});

t.test('shards takes a collection', (t) => {
  t.match(parseArgs(['cluster', 'shards', 'c', '--key', KEY], {}), { kind: 'run', command: { kind: 'shards', collection: 'c' } });
  t.end();
});

t.test('usage errors', (t) => {
  const cases: [string[], string][] = [
    [[], 'missing command (try firkin --help)'],
    [['clusters'], 'unknown command "clusters" (try firkin --help)'],
    [['cluster'], 'missing cluster command: one of status, nodes, health, join, leave, remove, shards, jobs'],
    [['cluster', 'stat'], 'unknown cluster command "stat": one of status, nodes, health, join, leave, remove, shards, jobs'],
    [['cluster', 'status', 'extra'], 'unexpected argument "extra" for cluster status'],
    [['cluster', 'status', '--verbose'], 'unknown option --verbose'],
    [['cluster', 'status', '-v'], 'unknown option -v'],
    [['cluster', 'status', '--url'], '--url needs a value'],
    [['cluster', 'status', '--seed', 'h:1'], '--seed only applies to cluster join'],
    [['cluster', 'join', '--key', KEY], 'cluster join needs --seed host:port'],
    [['cluster', 'join', '--seed', 'h:0', '--key', KEY], '--seed must be host:port with a port from 1 to 65535, got "h:0"'],
    [['cluster', 'join', '--seed', 'h:1'], 'cluster join needs the admin key: --key KEY or FIRKIN_KEY'],
    [['cluster', 'remove', '--key', KEY], 'cluster remove needs a NODE name'],
    [['cluster', 'remove', 'n1', 'n2', '--key', KEY], 'unexpected argument "n2" for cluster remove'],
    [['cluster', 'remove', 'n1'], 'cluster remove needs the admin key: --key KEY or FIRKIN_KEY'],
    [['cluster', 'shards', '--key', KEY], 'cluster shards needs a COLLECTION name'],
    [['cluster', 'shards', 'c'], 'cluster shards needs the admin key: --key KEY or FIRKIN_KEY'],
  ];
  for (const [argv, message] of cases) t.same(parseArgs(argv, {}), { kind: 'usage_error', message }, argv.join(' '));
  t.end();
});

t.test('--help anywhere shows the most specific help', (t) => {
  t.same(parseArgs(['--help'], {}), { kind: 'help', text: HELP.firkin });
  t.same(parseArgs(['-h', 'bogus'], {}), { kind: 'help', text: HELP.firkin });
  t.same(parseArgs(['cluster', '--help'], {}), { kind: 'help', text: HELP.cluster });
  t.same(parseArgs(['cluster', 'nope', '-h'], {}), { kind: 'help', text: HELP.cluster });
  for (const c of CLUSTER_COMMANDS) {
    t.same(parseArgs(['cluster', c, '--help'], {}), { kind: 'help', text: HELP[c] }, c);
    t.match(HELP[c], new RegExp(`^Usage: firkin cluster ${c}`), c);
  }
  t.same(parseArgs(['--help', 'cluster', 'remove'], {}), { kind: 'help', text: HELP.remove }, 'a missing NODE does not hide the help');
  t.end();
});

t.test('options may stand anywhere among the words', (t) => {
  const arbCase = fc.record({
    command: fc.constantFrom(...CLUSTER_COMMANDS),
    port: fc.integer({ min: 1, max: 65535 }),
    key: fc.string({ minLength: 1 }),
    json: fc.boolean(),
    equals: fc.boolean(),
    order: fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
  });
  fc.assert(
    fc.property(arbCase, ({ command, port, key, json, equals, order }) => {
      const words = ['cluster', command, ...(command === 'remove' ? ['n7'] : command === 'shards' ? ['coll'] : [])];
      const opt = (name: string, value: string) => (equals ? [`--${name}=${value}`] : [`--${name}`, value]);
      const options: string[][] = [opt('url', `http://127.0.0.1:${port}`), opt('key', key)];
      if (json) options.push(['--json']);
      if (command === 'join') options.push(opt('seed', `node-a:${port}`));
      // Insert each option group before a word chosen by `order` (the words keep their order).
      const slots: string[][] = words.map(() => []);
      slots.push([]);
      options.forEach((o, i) => slots[order[i]! % slots.length]!.push(...o));
      const argv = slots.flatMap((s, i) => (i < words.length ? [...s, words[i]!] : s));
      const expectedCommand =
        command === 'join'
          ? { kind: 'join', seed: `node-a:${port}` }
          : command === 'remove'
            ? { kind: 'remove', node: 'n7' }
            : command === 'shards'
              ? { kind: 'shards', collection: 'coll' }
              : { kind: command };
      const parsed = parseArgs(argv, { FIRKIN_URL: 'http://elsewhere:1', FIRKIN_KEY: 'env-key' });
      return (
        JSON.stringify(parsed) ===
        JSON.stringify({ kind: 'run', command: expectedCommand, target: { url: `http://127.0.0.1:${port}`, key, json } })
      );
    }),
    fcParams(),
  );
  t.end();
});

t.test('parsing is total: any argv gives a command, a help or a one-line usage error', (t) => {
  const arbArg = fc.oneof(
    fc.constantFrom('cluster', ...CLUSTER_COMMANDS, '--url', '--key', '--seed', '--json', '--help', '--', '-', '--url=', '--seed=a:1', 'recover', 'list', 'force', '--data-dir', '--node', '--group', '--all', '--group='),
    fc.string(),
  );
  fc.assert(
    fc.property(fc.array(arbArg, { maxLength: 8 }), fc.dictionary(fc.constantFrom('FIRKIN_URL', 'FIRKIN_KEY', 'FIRKIN_NODES'), fc.string()), (argv, env) => {
      const p = parseArgs(argv, env);
      if (p.kind === 'usage_error') return p.message !== '' && !/[\n\r]/.test(p.message);
      return p.kind === 'help' || p.kind === 'run' || p.kind === 'offline';
    }),
    fcParams(),
  );
  t.end();
});

t.test('seeds and URLs', (t) => {
  fc.assert(
    fc.property(fc.domain(), fc.integer({ min: 1, max: 65535 }), (host, port) => isSeed(`${host}:${port}`)),
    fcParams(),
  );
  fc.assert(
    fc.property(fc.domain(), fc.oneof(fc.constant(0), fc.integer({ min: 65536, max: 99999 })), (host, port) => !isSeed(`${host}:${port}`)),
    fcParams(),
  );
  t.ok(isSeed('[::1]:9081'));
  for (const bad of ['', 'host', ':9081', 'host:', 'a b:1', 'http://h:1', 'h:1:2', 'u@h:1']) t.notOk(isSeed(bad), bad);
  t.equal(normaliseUrl('http://h:8081//'), 'http://h:8081');
  t.equal(normaliseUrl('HTTP://H:8081'), 'http://h:8081');
  for (const bad of ['h:8081', 'ftp://h', 'http://h/?q=1', 'http://h/#x', 'http://u:p@h/']) t.equal(normaliseUrl(bad), undefined, bad);
  t.end();
});

t.test('collection reshard', async (t) => {
  t.same(parseArgs(['collection', 'reshard', 'docs', '5'], {}), { kind: 'run', command: { kind: 'reshard', collection: 'docs', shards: 5, wait: false }, target: { url: DEFAULT_URL, key: undefined, json: false } });
  t.same(parseArgs(['collection', 'reshard', 'docs', '3', '--wait', '--url', 'http://n2:8080/'], {}), { kind: 'run', command: { kind: 'reshard', collection: 'docs', shards: 3, wait: true }, target: { url: 'http://n2:8080', key: undefined, json: false } });
  for (const [argv, message] of [
    [['collection'], /unknown collection command ""/],
    [['collection', 'shrink', 'c', '2'], /unknown collection command "shrink"/],
    [['collection', 'reshard'], /needs a COLLECTION name/],
    [['collection', 'reshard', 'c'], /shard count from 1 to 9999, got ""/],
    [['collection', 'reshard', 'c', '0'], /got "0"/],
    [['collection', 'reshard', 'c', 'x'], /got "x"/],
    [['collection', 'reshard', 'c', '2', 'extra'], /unexpected argument "extra"/],
    [['cluster', 'status', '--wait'], /--wait only applies to collection reshard/],
  ] as const) {
    const parsed = parseArgs(argv, {});
    t.equal(parsed.kind, 'usage_error', argv.join(' '));
    if (parsed.kind === 'usage_error') t.match(parsed.message, message);
  }
  const help = parseArgs(['collection', 'reshard', '--help'], {});
  t.match(help.kind === 'help' ? help.text : '', /^Usage: firkin collection reshard COLLECTION N/);
});

t.test('collection reshard --cancel', async (t) => {
  t.same(parseArgs(['collection', 'reshard', 'docs', '--cancel'], {}), { kind: 'run', command: { kind: 'reshard-cancel', collection: 'docs' }, target: { url: DEFAULT_URL, key: undefined, json: false } });
  for (const [argv, message] of [
    [['collection', 'reshard', 'docs', '3', '--cancel'], 'unexpected argument "3" for collection reshard --cancel'],
    [['collection', 'reshard', 'docs', '--cancel', '--wait'], '--cancel and --wait do not go together (a cancel answers once the job ended)'],
    [['cluster', 'status', '--cancel'], '--cancel only applies to collection reshard'],
  ] as const) {
    t.same(parseArgs(argv, {}), { kind: 'usage_error', message }, argv.join(' '));
  }
});

t.test('vdb shards, split, merge, cancel and cancel-import', async (t) => {
  const target = { url: DEFAULT_URL, key: KEY, json: false };
  t.same(parseArgs(['vdb', 'split', 'v1', '0', '--key', KEY], {}), { kind: 'run', command: { kind: 'vdb-split', vdb: 'v1', shard: 0 }, target });
  t.same(parseArgs(['vdb', 'merge', 'v1', '2', '--into', '1', '--key', KEY], {}), { kind: 'run', command: { kind: 'vdb-merge', vdb: 'v1', shard: 2, into: 1 }, target });
  t.same(parseArgs(['--into=0', 'vdb', 'merge', 'v1', '1'], { FIRKIN_KEY: KEY }), { kind: 'run', command: { kind: 'vdb-merge', vdb: 'v1', shard: 1, into: 0 }, target });
  t.same(parseArgs(['vdb', 'cancel', 'v1', '--key', KEY, '--json'], {}), { kind: 'run', command: { kind: 'vdb-cancel', vdb: 'v1' }, target: { ...target, json: true } });
  t.same(parseArgs(['vdb', 'cancel-import', 'v1', '--key', KEY], {}), { kind: 'run', command: { kind: 'vdb-cancel-import', vdb: 'v1' }, target });
  t.same(parseArgs(['vdb', 'cancel-import', 'v1'], {}), { kind: 'run', command: { kind: 'vdb-cancel-import', vdb: 'v1' }, target: { ...target, key: undefined } }, 'no admin key needed: a key that may write the VDB, or none on a node without auth');
  t.same(parseArgs(['vdb', 'shards', 'v1'], {}), { kind: 'run', command: { kind: 'vdb-shards', vdb: 'v1' }, target: { ...target, key: undefined } }, 'no admin key needed: a key that may read the VDB');
  const cases: [string[], string][] = [
    [['vdb'], 'unknown vdb command "": one of shards, split, merge, cancel, cancel-import'],
    [['vdb', 'shrink', 'v1'], 'unknown vdb command "shrink": one of shards, split, merge, cancel, cancel-import'],
    [['vdb', 'shards'], 'vdb shards needs a VDB name'],
    [['vdb', 'shards', 'v1', '0'], 'unexpected argument "0" for vdb shards'],
    [['vdb', 'cancel-import', '--key', KEY], 'vdb cancel-import needs a VDB name'],
    [['vdb', 'cancel-import', 'v1', 'x', '--key', KEY], 'unexpected argument "x" for vdb cancel-import'],
    [['vdb', 'split', '--key', KEY], 'vdb split needs a VDB name'],
    [['vdb', 'split', 'v1', '--key', KEY], 'vdb split needs a SHARD id (0, 1, ...), got ""'],
    [['vdb', 'split', 'v1', '01', '--key', KEY], 'vdb split needs a SHARD id (0, 1, ...), got "01"'],
    [['vdb', 'split', 'v1', '-1', '--key', KEY], 'unknown option -1'],
    [['vdb', 'split', 'v1', '0', 'x', '--key', KEY], 'unexpected argument "x" for vdb split'],
    [['vdb', 'split', 'v1', '0'], 'vdb split needs the admin key: --key KEY or FIRKIN_KEY'],
    [['vdb', 'split', 'v1', '0', '--into', '1', '--key', KEY], '--into only applies to vdb merge'],
    [['vdb', 'merge', 'v1', '0', '--key', KEY], 'vdb merge needs --into TARGET, the adjacent shard id to merge into, got ""'],
    [['vdb', 'merge', 'v1', '0', '--into', 'next', '--key', KEY], 'vdb merge needs --into TARGET, the adjacent shard id to merge into, got "next"'],
    [['vdb', 'cancel', 'v1', '0', '--key', KEY], 'unexpected argument "0" for vdb cancel'],
    [['vdb', 'cancel', 'v1'], 'vdb cancel needs the admin key: --key KEY or FIRKIN_KEY'],
    [['cluster', 'jobs'], 'cluster jobs needs the admin key: --key KEY or FIRKIN_KEY'],
    [['cluster', 'status', '--into', '1'], '--into only applies to vdb merge'],
    [['collection', 'reshard', 'c', '2', '--into', '1'], '--into only applies to vdb merge'],
  ];
  for (const [argv, message] of cases) t.same(parseArgs(argv, {}), { kind: 'usage_error', message }, argv.join(' '));
  for (const sub of ['split', 'merge', 'cancel'] as const) {
    const help = parseArgs(['vdb', sub, '--help'], {});
    t.match(help.kind === 'help' ? help.text : '', new RegExp(`^Usage: firkin vdb ${sub} VDB`), sub);
  }
  t.same(parseArgs(['vdb', '-h'], {}), { kind: 'help', text: HELP.vdb });
});

t.test('tasks', async (t) => {
  const target = { url: DEFAULT_URL, key: KEY, json: false };
  t.same(parseArgs(['tasks', '--key', KEY], {}), { kind: 'run', command: { kind: 'tasks' }, target });
  t.same(parseArgs(['tasks', '--json'], { FIRKIN_KEY: KEY }), { kind: 'run', command: { kind: 'tasks' }, target: { ...target, json: true } });
  t.same(parseArgs(['tasks'], {}), { kind: 'usage_error', message: 'tasks needs the admin key: --key KEY or FIRKIN_KEY' });
  t.same(parseArgs(['tasks', 'all', '--key', KEY], {}), { kind: 'usage_error', message: 'unexpected argument "all" for tasks' });
  t.same(parseArgs(['tasks', '--help'], {}), { kind: 'help', text: HELP.tasks });
  t.match(HELP.firkin, /\n {2}tasks {2,}what the node works on now/, 'listed in the overview');
});

t.test('cluster remove --force', (t) => {
  t.same(parseArgs(['cluster', 'remove', 'n3', '--force', `--key=${KEY}`], {}), { kind: 'run', command: { kind: 'remove', node: 'n3', force: true }, target: { url: DEFAULT_URL, key: KEY, json: false } });
  const p = parseArgs(['cluster', 'leave', '--force'], {});
  t.same(p, { kind: 'usage_error', message: '--force only applies to cluster remove' });
  t.end();
});

t.test('recover: offline commands on a data directory, with their own options', (t) => {
  t.same(parseArgs(['recover', 'list', '--data-dir', '/d'], {}), { kind: 'offline', command: { kind: 'recover-list', dataDir: '/d' } });
  t.same(parseArgs(['recover', 'force', '--data-dir=/d', '--node', 'n1', '--group', 'meta', '--group', 'vs3'], {}), { kind: 'offline', command: { kind: 'recover-force', dataDir: '/d', node: 'n1', groups: ['meta', 'vs3'] } });
  t.same(parseArgs(['recover', '--all', 'force', '--node=n1', '--data-dir', '/d'], {}), { kind: 'offline', command: { kind: 'recover-force', dataDir: '/d', node: 'n1', groups: 'all' } });
  t.same(parseArgs(['recover', 'force', '--help'], {}), { kind: 'help', text: HELP.recover });
  t.same(parseArgs(['--help', 'recover'], {}), { kind: 'help', text: HELP.recover });
  const usage = (argv: string[]) => {
    const p = parseArgs(argv, {});
    return p.kind === 'usage_error' ? p.message : `not a usage error: ${JSON.stringify(p)}`;
  };
  t.equal(usage(['recover']), 'unknown recover command "": list or force');
  t.equal(usage(['recover', 'list']), "recover list needs --data-dir DIR, the stopped node's data directory");
  t.equal(usage(['recover', 'list', '--data-dir', '/d', '--node', 'n1']), 'recover list takes only --data-dir');
  t.equal(usage(['recover', 'force', '--data-dir', '/d', '--group', 'meta']), "recover force needs --node NAME, the stopped node's name (SERVICE_NODE_NAME)");
  t.equal(usage(['recover', 'force', '--data-dir', '/d', '--node', 'n1']), 'recover force needs either --group GROUP (repeatable) or --all');
  t.equal(usage(['recover', 'force', '--data-dir', '/d', '--node', 'n1', '--all', '--group', 'meta']), 'recover force needs either --group GROUP (repeatable) or --all');
  t.equal(usage(['recover', 'list', '--url', 'http://x']), 'unknown option --url for recover (it takes --data-dir, --node, --group, --all)');
  t.equal(usage(['recover', 'list', '--data-dir']), '--data-dir needs a value');
  t.equal(usage(['recover', 'list', 'extra', '--data-dir', '/d']), 'unexpected argument "extra" for recover list');
  t.end();
});
