// What a durable write costs on this disk, below RocksDB: every Raft append and every
// acknowledged document write waits for one. A 256-byte write then `fdatasync`, N times:
//   append     the file grows with each write (a write-ahead log: the size changes each time)
//   overwrite  the same preallocated bytes again (a recycled log: only data to flush)
// etcd asks its operators for a 99th percentile under 10 ms; the Raft rows of
// docs/benchmarks.md read against this one. Run it on the disk the node's data goes to.
// Usage: npx tsx bench/fsync.ts [case] (FSYNC_DIR, default the OS temp dir; FSYNC_N, default 1000)
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchResult, percentile, report, selected } from './support.js';

const N = Number(process.env.FSYNC_N ?? 1_000);
const dir = mkdtempSync(join(process.env.FSYNC_DIR ?? tmpdir(), 'firkin-fsync-'));
const block = Buffer.alloc(256, 7);

function timed(name: string, file: string, prepare: (fd: number) => void, write: (fd: number, i: number) => void): BenchResult {
  const fd = openSync(join(dir, file), 'w');
  try {
    prepare(fd);
    const ms: number[] = [];
    for (let i = 0; i < N; i++) {
      const t0 = process.hrtime.bigint();
      write(fd, i);
      fdatasyncSync(fd);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((a, b) => a - b);
    const slow = ms.filter((x) => x >= 2).length;
    return { bench: `fsync-${name}`, n: N, p50_ms: percentile(ms, 50), p90_ms: percentile(ms, 90), p99_ms: percentile(ms, 99), max_ms: ms[ms.length - 1]!, over_2ms_share: slow / N, per_sec: 1000 / (ms.reduce((a, b) => a + b, 0) / N) };
  } finally {
    closeSync(fd);
  }
}

const results: BenchResult[] = [];
try {
  if (selected('append')) results.push(timed('append', 'append', () => undefined, (fd) => writeSync(fd, block)));
  if (selected('overwrite')) {
    results.push(
      timed(
        'overwrite',
        'overwrite',
        (fd) => {
          writeSync(fd, Buffer.alloc(256 * N));
          fdatasyncSync(fd);
        },
        (fd, i) => writeSync(fd, block, 0, block.length, i * 256),
      ),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
report(results);
