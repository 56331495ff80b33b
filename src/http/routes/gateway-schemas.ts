// JSON schemas shared by the gateway's route files: declared once, from the same constants the
// engine checks against.
import { COLLECTION_NAME_PATTERN, TENANT_ID_PATTERN } from '../../gateway/names.js';

export const limitSchemas = {
  rpm_limit: { type: 'integer', minimum: 1, maximum: 10_000_000 },
  max_vectors: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  max_collections: { type: 'integer', minimum: 0, maximum: 1_000_000 },
  max_storage_mb: { type: 'integer', minimum: 0, maximum: 100_000_000 },
} as const;

export const tenantIdSchema = { type: 'string', pattern: TENANT_ID_PATTERN } as const;
export const collectionNameSchema = { type: 'string', pattern: COLLECTION_NAME_PATTERN } as const;
