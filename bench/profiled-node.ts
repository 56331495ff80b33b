// The node, compiled, with a CPU profiler a bench switches by signal: the first SIGUSR2 starts it, the
// next one stops it and writes the profile to FIRKIN_PROFILE_OUT (then logs "profile written").
// So a profile holds only the window the bench measures (node forbids --cpu-prof in NODE_OPTIONS,
// and a whole-run profile would mix start-up and loading into it).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { pathToFileURL } from 'node:url';
import { compiledMainArgs } from '../test/support/built-node.js';

const out = process.env.FIRKIN_PROFILE_OUT;
if (out === undefined) throw new Error('FIRKIN_PROFILE_OUT is required');
const session = new Session();
session.connect();
let running = false;
process.on('SIGUSR2', () => {
  if (!running) {
    session.post('Profiler.enable', () => session.post('Profiler.start', () => console.log('profile started')));
  } else {
    session.post('Profiler.stop', (err, result) => {
      if (err !== null) throw err;
      writeFileSync(out, JSON.stringify(result.profile));
      console.log('profile written');
    });
  }
  running = !running;
});
// The node as it ships, compiled (built-node.ts): tsx's transform would be in the profile.
// tsx leaves the build's plain JavaScript as it is.
await import(pathToFileURL(compiledMainArgs()[0]!).href);
