// In-process pieces for gateway tests that need no node: limits, a collection's record, an
// engine of documents in a map, and a Gateway over a given store.
import { FirkinError } from '../../src/core/errors.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { internalName } from '../../src/gateway/names.js';
import type { GatewayStore } from '../../src/gateway/store.js';
import type { CollectionRecord } from '../../src/gateway/types.js';
import type { GatewayDocument, GatewayVectors } from '../../src/gateway/vectors.js';

export const LIMITS = { rpm_limit: 100, max_vectors: 1_000, max_collections: 10, max_storage_mb: 100 };

export function collectionRecord(tenantId: string, name: string, vectorCount = 0): CollectionRecord {
  return { tenant_id: tenantId, name, internal: internalName(tenantId, name), dimension: 2, vector_count: vectorCount, storage_bytes: 0, created_at: 0 };
}

/**
 * An engine of one collection's documents by id, read back as it stores them (text '' and
 * metadata {} when written without). `failAfter(n)`: a write then lands its first n
 * documents and fails.
 */
export function memoryVectors(): { vectors: GatewayVectors; stored: Map<string, GatewayDocument>; failAfter(n: number): void } {
  const stored = new Map<string, GatewayDocument>();
  let failAfter = Infinity;
  const vectors = {
    async collectionInfo() {
      return { dimension: 2, count: stored.size };
    },
    async getDocument(_internal: string, id: string) {
      return stored.get(id);
    },
    async upsert(_internal: string, docs: readonly GatewayDocument[]) {
      docs.forEach((d, i) => {
        if (i >= failAfter) throw new FirkinError('error', 'the disk failed');
        stored.set(d.id, { id: d.id, text: d.text ?? '', metadata: d.metadata ?? {} });
      });
    },
  } as Partial<GatewayVectors> as GatewayVectors;
  return { vectors, stored, failAfter: (n) => (failAfter = n) };
}

export function gatewayOver(store: GatewayStore, vectors: GatewayVectors): Gateway {
  return new Gateway({ store, vectors, clock: { nowMs: () => 0 }, masterKey: 'master', defaults: LIMITS, embedderUrls: [] });
}
