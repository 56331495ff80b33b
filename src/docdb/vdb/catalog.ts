// Virtual-database metadata: config, hash ranges, shard assignments and the one rebalance
// job that may be in progress. One JSON record per VDB in the `system` column family,
// written with sync: a rebalance changes ranges in one atomic write.
import { Catalog } from '../../core/catalog.js';
import { ARRAY, NUMBER, OBJECT, STRING, STRING_ARRAY, jsonRecordCodec, objectSchema } from '../../core/codec.js';
import { FirkinError } from '../../core/errors.js';
import type { Store } from '../../storage/db.js';
import { LIMITS } from '../names.js';
import { type HashFunction, type HashRange, hashId, shardFor } from '../../core/shard-hash.js';

export const SHARD_STATUSES = ['active', 'splitting', 'merging', 'migrating', 'readonly'] as const;
export type ShardStatus = (typeof SHARD_STATUSES)[number];

export interface ShardAssignment {
  readonly shardId: number;
  readonly primary: string | null;
  readonly replicas: readonly string[];
  readonly status: ShardStatus;
}

/**
 * A rebalance in progress. `copy`: documents are being copied, ranges unchanged (a crash
 * rolls back). `cleanup`: ranges switched, the source copies are being removed (a crash
 * finishes the job).
 */
export type RebalanceJob =
  | { readonly kind: 'split'; readonly phase: 'copy' | 'cleanup'; readonly source: number; readonly target: number; readonly batchSize: number }
  | { readonly kind: 'merge'; readonly phase: 'copy' | 'cleanup'; readonly source: number; readonly target: number; readonly batchSize: number };

export interface VdbRecord {
  readonly name: string;
  readonly hashFunction: HashFunction;
  readonly replicaFactor: number;
  readonly zones: readonly string[];
  readonly createdMs: number;
  readonly ranges: readonly HashRange[];
  readonly shards: readonly ShardAssignment[];
  readonly job: RebalanceJob | undefined;
}

/** `_s<id>` must still fit in a database name. */
export const VDB_NAME_CHARS_MAX = LIMITS.dbNameChars - 6;
const VDB_NAME = /^[a-z][a-z0-9_$()+-]*$/;

export function isVdbName(name: string): boolean {
  return name.length <= VDB_NAME_CHARS_MAX && VDB_NAME.test(name);
}

export function checkVdbName(name: string): void {
  if (!isVdbName(name)) {
    throw new FirkinError(
      'bad_request',
      `invalid VDB name ${JSON.stringify(name)}: 1 to ${VDB_NAME_CHARS_MAX} characters, a lowercase letter first, then a-z 0-9 _ $ ( ) + -`,
    );
  }
}

export function shardDb(vdb: string, shardId: number): string {
  return `${vdb}_s${shardId}`;
}

/**
 * The VDB and shard whose replica a database of this name would be (`shardDb`'s form, the VDB
 * part a valid VDB name), or undefined: on a cluster node such a name belongs to the VDB's
 * shards once the VDB exists, whatever its shard count (a split adds the next number).
 */
export function shardOfDbName(db: string): { vdb: string; shard: number } | undefined {
  const m = /^(.+)_s(0|[1-9][0-9]*)$/.exec(db);
  if (m === null || !isVdbName(m[1]!)) return undefined;
  return { vdb: m[1]!, shard: Number(m[2]) };
}

export function routeId(record: VdbRecord, id: string): number {
  return shardFor(record.ranges, hashId(id, record.hashFunction));
}

const KIND = 'vdb';
const vdbCodec = jsonRecordCodec<VdbRecord>(
  'VDB record',
  objectSchema(
    { name: STRING, hashFunction: STRING, replicaFactor: NUMBER, zones: STRING_ARRAY, createdMs: NUMBER, ranges: ARRAY, shards: ARRAY },
    { job: OBJECT },
  ),
);

/** Every VDB record, by name (system: ["vdb", name]). */
export function openVdbCatalog(store: Store): Promise<Catalog<VdbRecord>> {
  return Catalog.open(store, { prefix: KIND, codec: vdbCodec, keyOf: (r) => r.name });
}
