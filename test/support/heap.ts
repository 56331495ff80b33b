// Heap growth of a piece of work, after full collections on both sides: for tests that a
// structure costs what it should per item (never timed; a generous bound absorbs the noise).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes the heap grew by while `work` ran, measured after a full collection before and after. */
export async function heapGrowth(work: () => Promise<void>): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  await work();
  gc();
  return process.memoryUsage().heapUsed - before;
}
