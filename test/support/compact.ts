// Compaction from tests: ask for it, then wait (with a deadline, no fixed sleep) until
// `compact_running` is false again.
import type { TestNode } from './node.js';

/** Wait for a condition with a deadline: polls on the event loop. */
export async function until(what: string, check: () => Promise<boolean>, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export async function compactAndWait(node: TestNode, db: string): Promise<void> {
  const r = await node.request('POST', `/db/${db}/_compact`);
  if (r.status !== 202) throw new Error(`_compact ${r.status}: ${r.text}`);
  await until(`compaction of ${db}`, async () => (await node.request('GET', `/db/${db}`)).body.compact_running === false);
}
