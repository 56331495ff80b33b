// The automatic path index, plugged into the document engine's write path: postings change
// in the same atomic batch as the document whose winner changed.
import type { BatchOp } from '../../storage/db.js';
import type { WinnerChange } from '../engine.js';
import { postingsDiff } from './postings.js';

const EMPTY = Buffer.alloc(0);

export function pathIndexer(change: WinnerChange, ops: BatchOp[]): void {
  const { del, put } = postingsDiff(change.db, change.docId, change.before, change.after);
  for (const key of del) ops.push({ type: 'del', cf: 'paths', key });
  for (const key of put) ops.push({ type: 'put', cf: 'paths', key, value: EMPTY });
}
