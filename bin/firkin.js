#!/usr/bin/env node
// `npx firkin …`: the built CLI when there is one (the Docker image, after `npm run build`),
// else the TypeScript source under tsx (a clone after `npm ci`, no build needed).
import { existsSync } from 'node:fs';

const built = new URL('../dist/src/cli/firkin.js', import.meta.url);
let cli;
if (existsSync(built)) cli = await import(built.href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  cli = await import('../src/cli/firkin.ts');
}
process.exitCode = await cli.runCli(process.argv.slice(2), process.env, cli.processIo());
