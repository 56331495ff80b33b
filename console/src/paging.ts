// Page arithmetic for tables paged in the browser (lists the node answers whole: tasks,
// policies, tenants, keys, collections, databases). Pages are numbered from 0; an empty list
// still has one (empty) page, so "page 1 of 1" is always a true sentence.
export interface PageView<T> {
  /** The page actually shown: `requested` clamped into [0, pageCount). */
  readonly page: number;
  readonly pageCount: number;
  readonly rows: readonly T[];
  /** Index of the first row of this page in the whole list. */
  readonly offset: number;
}

export function pageCount(total: number, pageSize: number): number {
  return Math.max(1, Math.ceil(total / pageSize));
}

export function pageOf<T>(items: readonly T[], requested: number, pageSize: number): PageView<T> {
  const count = pageCount(items.length, pageSize);
  // A list that shrank (a row deleted on the last page) moves the view back, not to nothing.
  const page = Math.min(Math.max(0, Math.trunc(requested)), count - 1);
  const offset = page * pageSize;
  return { page, pageCount: count, rows: items.slice(offset, offset + pageSize), offset };
}
