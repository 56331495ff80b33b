#!/usr/bin/env node
// `npx firkin …` in a clone after `npm ci`, with no build: run the TypeScript source under tsx.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/firkin.ts');
process.exitCode = await runCli(process.argv.slice(2), process.env, {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  fetch: globalThis.fetch,
});
