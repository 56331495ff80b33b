// Quota math, pure. Checked before a write, under the tenant's lock (gateway.ts), so the check
// and the write are one step as far as this node is concerned.
import type { Limits, Usage } from './types.js';

const BYTES_PER_MB = 1024 * 1024;
/** Stored floats are 4 bytes each, whatever JSON made of them. */
const BYTES_PER_DIMENSION = 4;

/** Why creating one more collection is refused, or undefined when it is allowed. */
export function collectionQuotaError(usage: Pick<Usage, 'collection_count'>, limits: Limits): string | undefined {
  if (usage.collection_count + 1 > limits.max_collections) {
    return `collection quota exceeded: ${usage.collection_count} of max_collections ${limits.max_collections} in use`;
  }
  return undefined;
}

/**
 * Why a document write is refused, or undefined. `newVectors` counts ids not stored before
 * (an overwrite counts 0); `deltaBytes` is the approximate growth (may be negative). A batch
 * is checked as a whole: if it would cross a limit, none of it is written.
 */
export function writeQuotaError(usage: Usage, limits: Limits, change: { newVectors: number; deltaBytes: number }): string | undefined {
  if (change.newVectors > 0 && usage.vector_count + change.newVectors > limits.max_vectors) {
    return `vector quota exceeded: ${usage.vector_count} stored + ${change.newVectors} new > max_vectors ${limits.max_vectors}`;
  }
  const maxBytes = limits.max_storage_mb * BYTES_PER_MB;
  if (change.deltaBytes > 0 && usage.storage_bytes + change.deltaBytes > maxBytes) {
    return `storage quota exceeded: about ${usage.storage_bytes} + ${change.deltaBytes} bytes > max_storage_mb ${limits.max_storage_mb}`;
  }
  return undefined;
}

/**
 * Approximate stored size of one document: id, text, metadata as JSON, and the vector. A
 * document reads back with `text: ''` and `metadata: {}` where it was written without them:
 * those count nothing either way, so an overwrite subtracts what the write added, and a
 * recount from the stored documents (`Gateway.reconcile`) finds the same sum.
 */
export function documentBytes(doc: { id: string; text?: string; metadata?: unknown }, dimension: number): number {
  return Buffer.byteLength(doc.id, 'utf8') + (doc.text === undefined ? 0 : Buffer.byteLength(doc.text, 'utf8')) + metadataBytes(doc.metadata) + dimension * BYTES_PER_DIMENSION;
}

function metadataBytes(metadata: unknown): number {
  if (metadata === undefined || metadata === null) return 0;
  const json = JSON.stringify(metadata);
  return json === '{}' ? 0 : Buffer.byteLength(json, 'utf8');
}
