// RocksDB keeps every table file open (the binding sets no `max_open_files`), so a node's data
// size is bounded by its file-descriptor limit: when RocksDB cannot open a file it stops
// writing. /health says so before that happens. Pure: the shell reads /proc/self/limits and
// counts the files.

/** The soft "Max open files" limit in the text of /proc/<pid>/limits; undefined when absent or unlimited. */
export function openFilesSoftLimit(limits: string): number | undefined {
  const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits);
  if (line === null) return undefined;
  const soft = Number(line[1]);
  return Number.isSafeInteger(soft) && soft > 0 ? soft : undefined;
}

/** Descriptors kept free for everything else a node opens: sockets, WAL, manifest, logs. */
export const DESCRIPTORS_RESERVED = 512;

/**
 * The problem to report when the table files come within a quarter of the limit (or within
 * DESCRIPTORS_RESERVED of it, whichever is more), else undefined.
 */
export function descriptorsProblem(tableFiles: number, softLimit: number | undefined): string | undefined {
  if (softLimit === undefined) return undefined;
  const headroom = Math.max(DESCRIPTORS_RESERVED, Math.floor(softLimit / 4));
  if (tableFiles + headroom <= softLimit) return undefined;
  return (
    `RocksDB keeps its ${tableFiles} table files open and this process may open ${softLimit} files (ulimit -n): ` +
    'raise the limit (LimitNOFILE= under systemd, --ulimit nofile= in Docker) before writes fail; ' +
    'the data needs about 130 more a GB'
  );
}
